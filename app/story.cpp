#include "app/story.h"

namespace onegpu::app {

const std::vector<ChapterInfo>& story() {
  static const std::vector<ChapterInfo> chapters = {
      // Part 1: one GPU.
      {"field", "One GPU", "512 GPUs, one of them ours",
       "Today's large language models are trained by hundreds or thousands of GPUs acting as a "
       "single machine. Here are 512. We will keep our eye on one of them, GPU 1, and by the "
       "last chapter you will know what every chip in this field spends its time on.",
       ""},
      {"gpu", "One GPU", "Inside GPU 1",
       "Up close, GPU 1 has two kinds of parts. In the middle are its compute cores: thousands of "
       "small units doing multiplications and additions side by side. The stacks on the left and "
       "right are memory, and everything the cores touch has to live there.",
       ""},
      {"open", "One GPU", "Lift the lid",
       "We take the lid off and draw the inside plainly: memory as two walls that fill as data "
       "arrives, compute as a strip that glows wherever work is being done.",
       ""},
      {"weights", "One GPU", "Layers of numbers",
       "A model is nothing but a great many numbers, its weights, grouped into layers. Ours has "
       "four layers; production models have dozens. Training needs room for all of them and "
       "more besides, so the walls rise as each layer is loaded.",
       ""},
      // Part 2: learning.
      {"next-token", "Learning", "Guess what comes next",
       "Text reaches the model as tokens: words or pieces of words. The model's whole task is to "
       "guess the following token while seeing only the ones before it.",
       ""},
      {"guess", "Learning", "The forward pass",
       "Each token becomes a list of numbers that flows up through every layer: the forward "
       "pass. Out of the top comes a probability for every possible next token, and the error "
       "says how little of it went to the right one.",
       ""},
      {"gradients", "Learning", "Gradients",
       "From the error the model works downward, layer by layer: the backward pass. It finds, "
       "for each weight, the nudge that would have made the right token more likely, and only "
       "writes those nudges down for now.",
       ""},
      {"step", "Learning", "One training step",
       "Every position in every text of the batch is its own small exercise. Their nudges are "
       "averaged, and then all the weights move at once: one step. The model gets slightly "
       "better, not suddenly good.",
       ""},
      {"microbatches", "Learning", "Microbatches",
       "A whole batch rarely fits in memory at once, so it is cut into microbatches. Each goes up "
       "and comes back down on its own, its gradients adding to the pile, and the weights move "
       "only after the last one.",
       ""},
      {"train", "Learning", "Keep going",
       "Repeat the step many times and the guesses improve on average. Nothing of the text is "
       "stored as text: whatever the model knows is held in its weights.",
       "Train to step 1,000"},
      {"slow", "Learning", "One GPU is slow",
       "Learning works, but one GPU does every bit of it. Double the text and the time doubles "
       "too.",
       ""},
      // Part 3: data parallelism.
      {"new-run", "Data parallelism", "Start again",
       "A batch's texts can be shared out. We reset to step 0 and bring in a second GPU to take "
       "half of each batch.",
       ""},
      {"second-gpu", "Data parallelism", "A copy of the model",
       "The new GPU begins with nothing, so the model is copied over to it once, layer by layer, "
       "before training starts. After that the two hold the same weights.",
       "Copy the model to GPU 2"},
      {"different-text", "Data parallelism", "Two readers",
       "The copies read different microbatches and so reach different gradients. Left alone, "
       "each would update itself its own way and the two would stop being the same model.",
       ""},
      {"sync", "Data parallelism", "Average, then update",
       "So before updating, the GPUs pool their gradients and both apply the same average. The "
       "copies stay identical, and the batch takes about half the time, plus a little for the "
       "exchange: data parallelism.",
       ""},
      {"bigger", "Data parallelism", "A bigger model?",
       "Two GPUs are faster, but each still holds the whole model, so the model cannot grow. "
       "Let us try adding four layers.",
       "Try eight layers"},
      {"oom", "Data parallelism", "Out of memory",
       "They do not fit. In training, every weight costs about 18 bytes: 2 for the weight, 4 for "
       "its gradient, and 12 for the optimizer's exact copy and its two running averages.",
       ""},
      // Part 4: expert parallelism.
      {"inside-layer", "Expert parallelism", "Inside a layer",
       "Open a layer: attention at the base lets each token look back at earlier ones, and above "
       "it sit 16 experts holding most of the weights. A router sends each token to just two of "
       "them.",
       ""},
      {"split-experts", "Expert parallelism", "Share the experts",
       "Each GPU does not need every expert. GPU 1 keeps experts 1–8 and GPU 2 keeps 9–16, "
       "while both keep attention and the router, and memory use drops.",
       "Split the experts"},
      {"tokens", "Expert parallelism", "Tokens on the move",
       "The price is traffic: a token routed to an expert on the other GPU travels there and "
       "back in every layer, once going up and once coming down. Eight layers still do not "
       "fit.",
       ""},
      // Part 5: pipeline parallelism.
      {"stages", "Pipeline parallelism", "Split by height",
       "Now cut the model across its depth: two more GPUs take layers 5–8 above the first two. "
       "Each level is a stage, and the eight-layer model fits.",
       ""},
      {"wait", "Pipeline parallelism", "Handing up, waiting",
       "Stage 1 passes its results up, stage 2 finishes and measures the error, and the "
       "correction comes back down. While one stage works, the other sits idle.",
       ""},
      {"back-to-back", "Pipeline parallelism", "Keep the pipe full",
       "Send microbatches one behind another, and stage 1 starts the next while stage 2 is busy "
       "with the last. More microbatches mean less idle time.",
       ""},
      // Part 6: scale.
      {"deeper", "Scale", "Deeper",
       "Pull back, and the four GPUs turn out to be cells of the field from the start. Make the "
       "model 32 layers deep and cut it into eight stages of four layers, each on GPUs like ours, "
       "and it still fits.",
       ""},
      {"wider", "Scale", "Wider",
       "Now give every layer 64 experts and share them out eight ways. Each stage becomes a "
       "machine of eight GPUs, and each GPU still keeps only eight experts a layer.",
       ""},
      {"step-64", "Scale", "One step on 64 GPUs",
       "One real step on all 64: microbatches climb from the first stage, corrections come back "
       "down, stages wait until the pipe is full, and after the last correction every GPU "
       "updates its own weights.",
       ""},
      {"copies", "Scale", "Eight copies",
       "Copy the 64-GPU team eight times and each stage reads 64 microbatches at once: 64-way "
       "data parallelism, experts split eight ways, eight stages — 512 GPUs.",
       ""},
      {"again", "Scale", "Many more steps",
       "Training runs for a very long time; the weights across the field change a little with "
       "every tenfold of steps, and so does the writing.",
       "Keep training"},
      {"one-of-512", "Scale", "GPU 1, again",
       "Every GPU in the field is doing its own share of what GPU 1 did. Ours holds four of the "
       "32 layers and eight of each layer's 64 experts. At full size the same share outgrows any "
       "GPU; it fits only once the copies share out their optimizer state, gradients and weights "
       "(modelled, on the right).",
       ""},
  };
  return chapters;
}

int find_chapter(std::string_view id) {
  const auto& s = story();
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i].id == id) return static_cast<int>(i);
  return -1;
}

std::string_view first_chapter_id() { return story().front().id; }

}  // namespace onegpu::app
