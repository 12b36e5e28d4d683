#include "app/presenter/notes.h"

#include <array>

#include "app/story.h"
#include "app/ui/key_commands.h"

namespace onegpu::app {

namespace {

// One row per chapter, in story order. Written for the person at the front of the room.
constexpr std::array kNotes = {
    PresenterNote{"field", "Wait for the ripple to reach the edge, then point at the ringed chip: that one is ours for the whole lesson.",
                  "How long do you think one GPU alone would take to do what all 512 do in a month?"},
    PresenterNote{"gpu", "Trace the path from a memory stack to the cores with your finger: every number travels that way.",
                  "Which runs out first on a real GPU, do you think: room in memory, or speed of the cores?"},
    PresenterNote{"open", "The two walls are memory and the strip is compute; from now on the walls fill with real bytes.",
                  "What has to be in memory before the cores can start?"},
    PresenterNote{"weights", "Each layer that lands raises the walls by what the trainer's allocator actually reserved.",
                  "Why would training need more room than just the weights?"},
    PresenterNote{"next-token", "Read the first tray aloud and stop at the blank: the model sees only the words before it.",
                  "What would you put in the blank? How sure are you?"},
    PresenterNote{"guess", "The band climbing is the forward pass really running; the bars are the untrained model's real guesses.",
                  "Why does a model that has never trained spread its guesses almost evenly?"},
    PresenterNote{"gradients", "The ticks appear top-down as the backward pass reaches each layer; their height is the measured gradient size.",
                  "Why does the correction travel down the layers rather than up?"},
    PresenterNote{"step", "The loupe shows 16 real weights before and after the update, enlarged a hundredfold: small moves.",
                  "Why not take one big step instead of many small ones?"},
    PresenterNote{"microbatches", "The same first step again, cut into two halves; the weights move only once, at the end.",
                  "What does cutting the batch save, and what does it cost?"},
    PresenterNote{"train", "Press Enter (or the button) to train to step 1,000 for real; watch the blank fill with \" time\".",
                  "Where in the model is \"Once upon a time\" stored now?"},
    PresenterNote{"slow", "The bar is one measured step, one text after another; every text waits for the one before.",
                  "If we had twice as much text, what happens to this bar?"},
    PresenterNote{"new-run", "The counter goes back to 0: a fresh model, because we are about to change how it trains.",
                  "How could a second GPU help with the texts waiting in line?"},
    PresenterNote{"second-gpu", "GPU 2 arrives empty and the picture waits: press Enter to copy the model over, layer by layer.",
                  "Why must the two copies start exactly equal?"},
    PresenterNote{"different-text", "Each GPU reads its own texts, so its gradient ticks differ; left alone, the copies end as two models (≠).",
                  "If they drift apart, which of the two is \"the\" model?"},
    PresenterNote{"sync", "The beads meet in the middle: the gradients are averaged, both apply the same update, and the \"=\" is checked.",
                  "The exchange costs time too: when would it eat the whole saving?"},
    PresenterNote{"bigger", "The picture waits: press Enter to try four more layers and watch them stop at the lid.",
                  "Two GPUs, but each still holds the whole model. Why does that not help here?"},
    PresenterNote{"oom", "Lavender is weight and gradient, sand the optimizer's state: 18 bytes a weight, and the walls overflow.",
                  "Which part would you try to shrink first?"},
    PresenterNote{"inside-layer", "The router lights the two experts it really chose for each token.",
                  "Why have 16 experts if each token only uses two?"},
    PresenterNote{"split-experts", "The picture waits: press Enter to cut the experts in half between the GPUs, then watch the walls drop.",
                  "A token picks an expert that now lives on the other GPU: what has to happen?"},
    PresenterNote{"tokens", "Each crossing is a token travelling to the other GPU's expert and back, counted from the router's choices.",
                  "Is this traffic worth the memory it saved?"},
    PresenterNote{"stages", "Two more GPUs take the upper layers: each level is a stage, and now the model fits.",
                  "What does stage 2 do while stage 1 is still working?"},
    PresenterNote{"wait", "The hatched time is a stage really waiting, measured on the engine's clock.",
                  "How could we keep both stages busy?"},
    PresenterNote{"back-to-back", "Compare 1, 2 and 4 microbatches on one time scale; the waiting shrinks as the textbook formula says.",
                  "Why not use a hundred microbatches?"},
    PresenterNote{"deeper", "The camera pulls back: our four GPUs are cells of the first field, and the model is now 32 layers in eight stages.",
                  "What grows when we add stages: memory, time, or traffic?"},
    PresenterNote{"wider", "Each stage becomes a machine of eight GPUs, each keeping eight of the 64 experts.",
                  "Why keep the experts of one layer inside one machine?"},
    PresenterNote{"step-64", "One real step on 64 virtual GPUs: follow the first microbatch up and its correction down.",
                  "Where is the waiting now, and why there?"},
    PresenterNote{"copies", "Eight copies of the 64-GPU team fill the field: data, expert and pipeline parallelism at once.",
                  "Which kind of parallelism needs the fastest links between GPUs?"},
    PresenterNote{"again", "The model's own writing at steps 0, 1, 10, 100 and 1,000; press Enter if chapter 10 did not train it yet.",
                  "At which step does it start to sound like a story?"},
    PresenterNote{"one-of-512", "Back to GPU 1: it holds four of 32 layers and eight of 64 experts, and its walls are that share's real bytes.",
                  "What did GPU 1 spend its time on? Can the class name all three kinds of splitting?"},
};

}  // namespace

const PresenterNote& presenter_note(std::string_view id) {
  static const PresenterNote none{};
  for (const PresenterNote& n : kNotes)
    if (n.id == id) return n;
  return none;
}

std::string notes_markdown() {
  std::string md = "# onegpu: presenter notes\n\n"
                   "One section per chapter: what the class sees, what to point at, and a question to ask.\n"
                   "Chapters 13, 16 and 19 stop and wait for their button; Enter presses it.\n\n"
                   "## Keys\n\n| Key | Does |\n|---|---|\n";
  for (const KeyRow& r : story_keys())
    if (*r.keys) md += "| " + std::string(r.keys) + " | " + r.does + " |\n";
  int i = 1;
  for (const ChapterInfo& c : story()) {
    const PresenterNote& n = presenter_note(c.id);
    md += "\n## " + std::to_string(i++) + ". " + std::string(c.title) + " (" + std::string(c.part) + ")\n\n";
    md += "> " + std::string(c.caption) + "\n\n";
    if (!c.action.empty()) md += "- **Button:** " + std::string(c.action) + " (or Enter)\n";
    md += "- **Point at:** " + std::string(n.point) + "\n";
    md += "- **Ask:** " + std::string(n.ask) + "\n";
  }
  return md;
}

}  // namespace onegpu::app
