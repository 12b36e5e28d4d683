#include "app/cli/train_command.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <system_error>
#include <memory>
#include <optional>

#include "app/cli/asset_files.h"
#include "app/cli/flags.h"
#include "trainer/data/story_corpus.h"
#include "trainer/device.h"
#include "trainer/cuda/nccl_comm.h"
#include "trainer/dist/launch_env.h"
#include "trainer/dist/rendezvous.h"
#include "trainer/dist/socket_comm.h"
#include "trainer/io/chrome_trace.h"
#include "trainer/error.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/io/jsonl_log.h"
#include "trainer/io/output_file.h"
#include "trainer/io/text.h"
#include "trainer/train/limits.h"
#include "trainer/model/params.h"
#include "trainer/train/heldout.h"
#include "trainer/train/probes.h"
#include "trainer/train/trainer.h"

namespace onegpu::cli {

using trainer::Error;
namespace text = trainer::text;
namespace limits = trainer::limits;

namespace {

// A resumed run already at (or past) its last step trains nothing: say so, rather than print
// the held-out loss alone.
void say_if_nothing_left(int done, int last) {
  if (done >= last)
    std::fprintf(stderr, "nothing left to train: the run is at step %d, and ends at step %d (--steps or --stop-at moves the end)\n",
                 done, last);
}

// --stop-at past the run's last step (a resume's, taken from its checkpoint) is one line.
void check_stop_at(const TrainArgs& a, int steps) {
  if (a.stop_at > steps)
    throw Error("--stop-at " + std::to_string(a.stop_at) + " is past the run's last step " + std::to_string(steps) +
                " (the checkpoint's --steps; give --steps to move it)");
}

std::string fmt_time(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  long t = (long)(s + 0.5);
  char b[32];
  std::snprintf(b, sizeof b, "%ld:%02ld", t / 60, t % 60);
  return b;
}

std::string show_token(const std::string& t) {
  std::string o = "\"";
  for (unsigned char c : t) {
    if (c == '\n') o += "\\n";
    else if (c == '"') o += "\\\"";
    else if (c < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\x%02x", c); o += b; }
    else o += (char)c;
  }
  return o + "\"";
}

int fail(const char* cmd, const std::exception& e) {
  std::fprintf(stderr, "onegpu %s: error: %s\n", cmd, e.what());
  return 2;
}

std::vector<std::string> rest(int argc, char** argv) { return std::vector<std::string>(argv + 1, argv + argc); }

// The prompt of --prompt-file: the file's bytes ("-": standard input), one trailing newline
// dropped (as `echo` adds one), at most limits::kMaxPromptBytes.
std::string read_prompt_file(const std::string& path) {
  std::FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (!f) throw Error("--prompt-file: cannot open " + text::printable(path) + ": " + std::strerror(errno));
  std::string s;
  char buf[1 << 16];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    s.append(buf, n);
    if ((long long)s.size() > limits::kMaxPromptBytes) {
      if (f != stdin) std::fclose(f);
      throw Error("--prompt-file: " + text::printable(path) + " is larger than " +
                  limits::bytes_text((std::uint64_t)limits::kMaxPromptBytes));
    }
  }
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  if (f != stdin) std::fclose(f);
  if (failed) throw Error("--prompt-file: cannot read " + text::printable(path) + ": " + std::strerror(err));
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// Every command runs inside this: whatever escapes is one line on stderr and exit status 2.
template <class F>
int guarded(const char* cmd, F body) {
  try {
    return body();
  } catch (const Error& e) {
    return fail(cmd, e);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "onegpu %s: error: out of memory; try a smaller --batch, model or --workers\n", cmd);
    return 2;
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "onegpu %s: error: the system refused: %s (too many --threads or --workers?)\n", cmd,
                 text::printable(e.what()).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onegpu %s: error: %s\n", cmd, text::printable(e.what()).c_str());
    return 2;
  }
}

constexpr const char* kTrainAbout =
    "Trains the tiny mixture-of-experts model (default: story, 1000 steps of 4 texts, on the\n"
    "generated story corpus) and prints the held-out loss.\n";
constexpr const char* kTrainFooter =
    "--steps counts from step 0, also when resuming; --stop-at stops early while the schedule\n"
    "still spans --steps. A resume that names no --steps goes on to the checkpoint's own.\n"
    "--dp/--ep/--pp/--vstages/--schedule split the run over pp x dp virtual ranks (each dp rank\n"
    "takes batch/dp texts in --microbatches microbatches; the loss is over the global batch).\n"
    "Left out, --microbatches becomes pp when the pipeline needs that many, and interleaved\n"
    "takes --vstages 2; a line on stderr says so.\n"
    "--trace writes a Perfetto trace (ui.perfetto.dev) of the last\n"
    "--trace-steps steps (default 50, fewer if they pass 1M ops, ~200 MB), one after another.\n"
    "--zero 1 (ZeRO-1) splits the fp32 master weights and Adam moments over the ranks holding\n"
    "copies of the same weights: gradients are reduce-scattered, each rank updates its piece,\n"
    "the bf16 weights are all-gathered. Same losses and weights, bit for bit, as --zero 0.\n"
    "--device cuda runs the ops on the GPU (a split run: every rank a virtual rank on that one\n"
    "GPU); auto picks the GPU when there is one.\n"
    "Bad input is one line on stderr and exit status 2.";
constexpr const char* kPromptFooter =
    "--prompt-file reads the prompt from FILE (- for standard input; one final newline dropped).\n"
    "Bad input is one line on stderr and exit status 2.";

// The flags of `onegpu predict` and `onegpu sample` (predict: --top; sample: --tokens, --seed).
void add_predict_flags(Flags& f, PredictArgs& a, bool sample, int& prompts) {
  f.text("--resume", "CKPT", "the checkpoint to load (required)", a.resume);
  f.value("--prompt", "TEXT", "the text to continue", [&a, &prompts](const std::string& v) {
    if (prompts++) throw Error("give the prompt once: --prompt TEXT or --prompt-file FILE");
    a.prompt = v;
  });
  f.value("--prompt-file", "FILE", "read the prompt from FILE (- for standard input)", [&a, &prompts](const std::string& v) {
    if (prompts++) throw Error("give the prompt once: --prompt TEXT or --prompt-file FILE");
    a.prompt = read_prompt_file(v);
  });
  if (!sample) f.integer("--top", "K", "how many of the likeliest tokens to print (default 10)", a.top, 1, limits::kMaxTop);
  if (sample) {
    f.integer("--tokens", "N", "tokens to sample (default 40)", a.tokens, 1, limits::kMaxTokens);
    f.u64("--seed", "S", "the sampling seed (default 1)", a.seed);
  }
}

}  // namespace

void add_train_flags(Flags& f, TrainArgs& a) {
  // >>train-flags: one line a flag. A new flag added here is also taken by the Lab
  // (`onegpu lab`, app/options.cpp), unless it is one of kNotLabFlags.
  f.value("--model", "NAME", "story, story8, scale or wide (default story)", [&a](const std::string& v) {
    trainer::model_preset(v);  // throws for an unknown name
    a.model = v;
    a.model_given = true;
  });
  f.integer("--steps", "N", "steps of the whole schedule (default 1000)", a.steps, 1, limits::kMaxSteps);
  f.integer("--batch", "B", "texts a step, the global batch (default 4)", a.batch, 1, limits::kMaxBatch);
  f.integer("--microbatches", "M", "microbatches a step (default 1; pp when a pipeline needs it)", a.microbatches, 1,
            limits::kMaxBatch);
  f.u64("--seed", "S", "the run's seed (default 1)", a.seed);
  f.integer("--threads", "T", "one-rank run: CPU threads, the same numbers on any count (default 1)", a.threads, 1, limits::kMaxThreads);
  f.value("--device", "NAME", "cpu, cuda or auto: where the ops run (default cpu)", [&a](const std::string& v) {
    if (v != "cpu" && v != "cuda" && v != "auto")
      throw Error("--device must be cpu, cuda or auto (got '" + text::printable(v) + "')");
    a.device = v;
  });
  f.text("--corpus", "FILE", "train on this UTF-8 text (default: the generated stories)", a.corpus);
  f.text("--log", "FILE.jsonl", "one JSON line a step (loss, memory, ...)", a.log);
  f.text("--save", "CKPT", "save a checkpoint at the end", a.save);
  f.text("--resume", "CKPT", "go on from a checkpoint (a split run: of the same split)", a.resume);
  f.integer("--stop-at", "K", "stop (and save) after step K", a.stop_at, 1, limits::kMaxSteps);
  f.flag("--quiet", "no progress line", a.quiet);
  f.integer("--dp", "N", "data-parallel copies", a.dp, 1, limits::kMaxRanksPerAxis);
  f.integer("--ep", "N", "expert-parallel groups inside dp", a.ep, 1, limits::kMaxRanksPerAxis);
  f.integer("--pp", "N", "pipeline stages", a.pp, 1, limits::kMaxRanksPerAxis);
  f.integer("--vstages", "V", "model chunks a pipeline rank (interleaved)", a.vstages, 1, limits::kMaxVstages);
  f.value("--schedule", "NAME", "gpipe, 1f1b, interleaved or zb1 (default 1f1b)", [&a](const std::string& v) {
    trainer::parse_schedule(v);  // throws for an unknown name
    a.schedule = v;
  });
  f.value("--link", "NAME", "the simulated interconnect: nvlink, ib or pcie", [&a](const std::string& v) {
    trainer::CostModel::for_link(v);  // throws for an unknown name
    a.link = v;
  });
  f.text("--trace", "FILE.json", "write a Chrome/Perfetto trace of the last steps", a.trace);
  f.integer("--trace-steps", "N", "steps the trace keeps (default 50)", a.trace_steps, 1, limits::kMaxTraceSteps);
  f.integer("--seq", "S", "tokens a text (default: the model's)", a.seq, 1, limits::kMaxSeq);
  f.integer("--workers", "W", "the engine's threads (default: one a core)", a.workers, 1, limits::kMaxThreads);
  f.value("--zero", "0|1", "1: ZeRO-1, the optimizer state split over the copies", [&a](const std::string& v) {
    if (v != "0" && v != "1")
      throw Error("--zero must be 0 or 1 (got '" + text::printable(v) +
                  "'); ZeRO-2 and ZeRO-3 are only modelled, in the full-size readout");
    a.zero = v == "1" ? 1 : 0;
  });
}

static void describe_train(Flags& f) {
  f.errors("", false);
  f.footer(kTrainFooter);
}

static std::string train_help() {
  TrainArgs a;
  Flags f("onegpu train", kTrainAbout);
  add_train_flags(f, a);
  describe_train(f);
  return f.help();
}

// Empty when --help was asked.
static std::optional<TrainArgs> parse_train(const std::vector<std::string>& args) {
  TrainArgs a;
  Flags f("onegpu train", kTrainAbout);
  add_train_flags(f, a);
  describe_train(f);
  if (!f.parse(args)) return std::nullopt;
  for (const auto& [name, takes_value] : f.names())
    if (f.given(name)) a.given.insert(name);
  for (const char* f : {"--dp", "--ep", "--pp", "--vstages", "--schedule", "--link", "--trace", "--trace-steps", "--seq",
                        "--workers", "--zero"})
    if (a.given.count(f)) a.parallel = true;
  if (!a.parallel && a.batch % a.microbatches != 0)
    throw Error("--batch (" + std::to_string(a.batch) + ") must be a multiple of --microbatches (" +
                std::to_string(a.microbatches) + ")");
  // A resume that names no --steps takes the checkpoint's: --stop-at is checked against those.
  if (a.stop_at > a.steps && (a.resume.empty() || a.given.count("--steps")))
    throw Error("--stop-at must not exceed --steps");
  // Checked in 64 bits before any rule multiplies them in int.
  if ((long long)a.dp * a.microbatches > a.batch)
    throw Error("--batch " + std::to_string(a.batch) + " is smaller than --dp x --microbatches = " +
                std::to_string((long long)a.dp * a.microbatches) + "; every microbatch needs a text");
  if (a.given.count("--trace-steps") && a.trace.empty()) throw Error("--trace-steps needs --trace FILE.json");
  return a;
}

TrainArgs parse_train_args(const std::vector<std::string>& args) {
  std::optional<TrainArgs> a = parse_train(args);
  if (!a) throw Error("--help is for the command line: onegpu train --help");
  return *a;
}

std::string fill_defaults(TrainArgs& a) {
  if (!a.parallel) return "";
  std::vector<std::string> picked;
  const std::string pp = std::to_string(a.pp);
  // Several model chunks per rank exist only in the interleaved schedule.
  if (a.vstages > 1 && !a.given.count("--schedule")) {
    a.schedule = "interleaved";
    picked.push_back("--schedule interleaved (--vstages " + std::to_string(a.vstages) + " needs it)");
  }
  // Interleaved with one chunk per rank is plain 1F1B: a user asking for it wants chunks.
  if (a.schedule == "interleaved" && a.vstages == 1) {
    if (a.given.count("--vstages"))
      throw Error("--schedule interleaved needs --vstages 2 or more (with 1 it is plain 1f1b)");
    const int layers = trainer::model_preset(a.model).n_layers;
    if (layers % (a.pp * 2) != 0)
      throw Error("--schedule interleaved needs --vstages 2 or more, but the " + std::to_string(layers) +
                  " layers of model " + a.model + " do not split over pp x 2 = " + std::to_string(a.pp * 2) +
                  " chunks; choose another --pp, or --schedule 1f1b");
    a.vstages = 2;
    picked.push_back("--vstages 2 (interleaved runs at least two model chunks per rank)");
  }
  // A pipeline needs a microbatch per stage: 1F1B and ZB-H1 refuse fewer, interleaved wants a
  // multiple of pp, and GPipe with one microbatch leaves all stages but one idle.
  if (a.pp > 1 && !a.given.count("--microbatches") && a.microbatches < a.pp) {
    const char* why = a.schedule == "interleaved" ? "interleaved 1F1B needs a multiple of pp microbatches"
                      : a.schedule == "gpipe"     ? "GPipe needs one microbatch per stage for the stages to overlap"
                      : a.schedule == "zb1"       ? "ZB-H1 needs at least one microbatch per stage"
                                                  : "1F1B needs at least one microbatch per stage";
    const int unit = a.dp * a.pp;
    if (a.batch % a.dp == 0 && (a.batch / a.dp) % a.pp != 0) {
      // If a more basic rule is broken too (layers over pp, say), that is the line to show.
      TrainArgs probe = a;
      probe.microbatches = a.pp;
      probe.batch = (a.batch + unit - 1) / unit * unit;
      trainer::parallel_run_config(trainer::model_preset(a.model), parallel_options(probe));
      throw Error("--pp " + pp + " needs --microbatches " + pp + " (" + why + "), but the " +
                  std::to_string(a.batch / a.dp) + " texts per dp rank do not split into " + pp +
                  "; say --batch " + std::to_string(probe.batch));
    }
    a.microbatches = a.pp;
    picked.push_back("--microbatches " + pp + " (" + why + ")");
  }
  std::string note;
  for (const auto& p : picked) note += (note.empty() ? "" : ", ") + p;
  return note.empty() ? note : "using " + note + "; give the flag to choose otherwise";
}

trainer::ParallelOptions parallel_options(const TrainArgs& a) {
  trainer::ParallelOptions o;
  o.dp = a.dp;
  o.ep = a.ep;
  o.pp = a.pp;
  o.vstages = a.vstages;
  o.zero = a.zero;
  o.schedule = trainer::parse_schedule(a.schedule);
  o.microbatches = a.microbatches;
  o.batch = a.batch;
  o.seq_len = a.seq;
  o.seed = a.seed;
  o.steps = a.steps;
  o.workers = a.workers;
  o.cost = trainer::CostModel::for_link(a.link);
  o.device = trainer::resolve_device(a.device);  // cuda: virtual ranks on one GPU; auto resolved
  return o;
}

static const char* predict_about(bool sample) {
  return sample ? "Continues the prompt by sampling N tokens (temperature 0.8).\n"
                : "The K most likely next tokens after the prompt, one token and probability a line.\n";
}

static std::string predict_help(bool sample) {
  PredictArgs a;
  int prompts = 0;
  Flags f(sample ? "onegpu sample" : "onegpu predict", predict_about(sample));
  add_predict_flags(f, a, sample, prompts);
  f.footer(kPromptFooter);
  return f.help();
}

// Empty when --help was asked.
static std::optional<PredictArgs> parse_predict(const std::vector<std::string>& args, bool sample) {
  PredictArgs a;
  int prompts = 0;
  Flags f(sample ? "onegpu sample" : "onegpu predict", predict_about(sample));
  f.errors("", false);
  add_predict_flags(f, a, sample, prompts);
  if (!f.parse(args)) return std::nullopt;
  const bool have_prompt = prompts > 0;
  if (a.resume.empty()) throw Error("--resume CKPT is required");
  if (!have_prompt || a.prompt.empty())
    throw Error("--prompt TEXT (or --prompt-file FILE, - for standard input) is required and must not be empty");
  return a;
}

PredictArgs parse_predict_args(const std::vector<std::string>& args, bool sample) {
  std::optional<PredictArgs> a = parse_predict(args, sample);
  if (!a) throw Error(std::string("--help is for the command line: onegpu ") + (sample ? "sample" : "predict") + " --help");
  return *a;
}

namespace {

trainer::json::Value memory_json(const std::array<std::int64_t, trainer::kMemCategoryCount>& v) {
  auto o = trainer::json::Value::object();
  for (int c = 0; c < trainer::kMemCategoryCount; ++c)
    o.set(std::string(trainer::mem_category_name((trainer::MemCategory)c)), (long long)v[(std::size_t)c]);
  return o;
}

// One JSONL record of a split step: the numbers, and memory per rank.
trainer::json::Value step_json(const trainer::ParallelTrainer& t, const trainer::ParallelStepResult& r) {
  auto o = trainer::json::Value::object();
  o.set("step", r.step);
  o.set("loss", r.loss);
  o.set("aux_loss", r.aux_loss);
  o.set("lr", (double)r.lr);
  o.set("grad_norm", r.grad_norm);
  o.set("seconds", r.seconds);
  o.set("virtual_seconds", r.virtual_seconds);
  o.set("bubble", r.bubble);
  auto idle = trainer::json::Value::array();
  for (double v : r.stage_idle) idle.push_back(v);
  o.set("stage_idle", std::move(idle));
  auto ranks = trainer::json::Value::array();
  const auto& L = t.plan().layout;
  for (int i = 0; i < t.world(); ++i) {
    auto rk = trainer::json::Value::object();
    const auto c = L.coord(i);
    rk.set("rank", i);
    rk.set("stage", c.stage);
    rk.set("dp", c.dp);
    rk.set("ep", c.ep);
    rk.set("memory", memory_json(r.memory[(std::size_t)i].current));
    rk.set("memory_peak", memory_json(r.memory[(std::size_t)i].peak));
    ranks.push_back(std::move(rk));
  }
  o.set("ranks", std::move(ranks));
  return o;
}

// The progress line of every run: on a terminal one line rewritten in place (\r), in a log
// every 100 steps and the last, so a long run does not flood it.
class Progress {
 public:
  Progress(bool quiet, int first, int last, double tokens_per_step)
      : quiet_(quiet), tty_(isatty(2)), first_(first), last_(last), tokens_(tokens_per_step) {}
  void step(int step, double loss, const std::string& extra = "") {
    smooth_ = smooth_ == 0 ? loss : 0.95 * smooth_ + 0.05 * loss;
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const int done = step - first_, left = last_ - step;
    const double tps = el > 0 ? done * tokens_ / el : 0;
    if (quiet_ || !(tty_ || step % 100 == 0 || left == 0)) return;
    std::fprintf(stderr, "%sstep %d/%d  loss %.3f  %.0f tok/s  ETA %s%s%s", tty_ ? "\r" : "", step, last_, smooth_,
                 tps, fmt_time(done ? el / done * left : NAN).c_str(), extra.c_str(), tty_ ? "   " : "\n");
    std::fflush(stderr);
  }
  ~Progress() {
    if (tty_ && !quiet_) std::fprintf(stderr, "\n");
  }

 private:
  bool quiet_, tty_;
  int first_, last_;
  double tokens_;
  double smooth_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// The JSONL log. A fresh run (resumed_at < 0) starts it anew; a resumed run appends, after
// checking that the log's last line is the step the checkpoint was saved at (so the lines of
// the earlier steps are kept and no step is logged twice or missing).
std::unique_ptr<trainer::JsonlLog> open_log(const std::string& path, int resumed_at) {
  if (resumed_at < 0) return std::make_unique<trainer::JsonlLog>(path);
  std::ifstream in(path, std::ios::binary);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  if (last.empty()) return std::make_unique<trainer::JsonlLog>(path, /*append=*/true);
  long long logged = -1;
  try {
    const auto v = trainer::json::parse(last);
    if (v.is_object())
      if (const auto* s = v.find("step"); s && s->is_integer()) logged = s->as_int();
  } catch (const Error&) {
  }
  if (logged < 0)
    throw Error("--log " + text::printable(path) + " does not end with a step line; give a new --log to resume");
  if (logged != resumed_at)
    throw Error("--log " + text::printable(path) + " ends at step " + std::to_string(logged) +
                " but the checkpoint is at step " + std::to_string(resumed_at) +
                "; give a new --log (or the log of this checkpoint's run)");
  return std::make_unique<trainer::JsonlLog>(path, /*append=*/true);
}

// About 200 bytes of JSON an op: a trace stays under ~200 MB, which Perfetto still opens.
constexpr std::size_t kMaxTraceOps = std::size_t{1} << 20;

// What the trace needs of one step. The plan is the trainer's (the first step's or the
// steady one, both kept for the trainer's life); the timeline is copied, as the next step
// overwrites it.
struct StepTrace {
  const trainer::Plan* plan;
  trainer::Timeline timeline;
  std::vector<trainer::Event> memory;
  int step;
};

// How long a process of a multi-process run waits for another before it gives up with one
// line: ONEGPU_DIST_TIMEOUT seconds (default 60; the slowest rank's start-up must fit in it).
double dist_timeout() {
  const char* v = std::getenv("ONEGPU_DIST_TIMEOUT");
  if (!v) return 60.0;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (!*v || *end || !(s > 0 && s <= 86400))
    throw Error(std::string("ONEGPU_DIST_TIMEOUT must be seconds from 0 to 86400 (got '") + text::printable(v) + "')");
  return s;
}

// One process per rank (started by torchrun or mpirun): the split they share must have one
// rank per process. Checked before anything is built or any peer is waited for.
void check_process_split(const TrainArgs& a, const trainer::LaunchEnv& le) {
  const std::string who = "started by " + le.launcher + " as rank " + std::to_string(le.rank) + " of " + std::to_string(le.world);
  if (!a.parallel)
    throw Error(who + ": give the split the processes share, one rank each (e.g. --dp " + std::to_string(le.world) + ")");
  if (a.pp * a.dp != le.world)
    throw Error(who + ": the split has --pp " + std::to_string(a.pp) + " × --dp " + std::to_string(a.dp) + " = " +
                std::to_string(a.pp * a.dp) + " ranks; one process a rank needs " + std::to_string(le.world));
}

int train_parallel(const TrainArgs& a, const std::string& note, const trainer::LaunchEnv& le) {
  trainer::ModelConfig mc = trainer::model_preset(a.model);
  trainer::ParallelOptions o = parallel_options(a);
  // The split is checked before the corpus and tokenizer are built: a bad config fails fast,
  // in one line (the note on what was picked comes after, when it is worth reading).
  trainer::parallel_run_config(mc, o);
  // One process per rank: this process is one rank; only rank 0 speaks and writes.
  const bool processes = le.world > 1, speaks = le.rank == 0;
  std::unique_ptr<trainer::Rendezvous> rv;
  std::unique_ptr<trainer::SocketComm> comm;  // host-side exchanges (and, on CPUs, everything)
  std::unique_ptr<trainer::Comm> nccl;        // --device cuda: the ranks' device memory
  if (processes) {
    trainer::check_process_options(o);
    const double timeout = dist_timeout();
    rv = std::make_unique<trainer::Rendezvous>(le, timeout);
    comm = std::make_unique<trainer::SocketComm>(*rv, timeout);
    o.comm = comm.get();
    if (o.device == "cuda") {  // one GPU a process, LOCAL_RANK's; not yet run across two GPUs
      o.cuda_device = le.local_rank;
      nccl = trainer::make_nccl_transport(*rv, le.local_rank, timeout);
      o.host_comm = comm.get();
      o.comm = nccl.get();
    }
  }
  if (!processes) {
    // All ranks live in this process: dp replicas of the dense weights, dp/ep of the experts,
    // and (at worst, GPipe) every text of the global batch in flight at once.
    const auto pb = trainer::param_breakdown(mc);
    const std::uint64_t weights = 18ull * ((std::uint64_t)a.dp * (std::uint64_t)(pb.total() - pb.experts) +
                                           (std::uint64_t)(a.dp / a.ep) * (std::uint64_t)pb.experts);
    const int S = a.seq > 0 ? a.seq : mc.seq_len;
    trainer::limits::require_memory(weights + trainer::limits::activation_bytes(mc, (std::uint64_t)a.batch, (std::uint64_t)S),
                                    "--batch " + std::to_string(a.batch) + " over " + std::to_string(a.pp * a.dp) + " ranks",
                                    "use a smaller --batch, --seq or --dp");
  }
  if (!note.empty() && speaks) std::fprintf(stderr, "onegpu train: %s\n", note.c_str());
  trainer::Corpus corpus = training_corpus(a.corpus);
  trainer::BpeTokenizer tok = trainer::BpeTokenizer::train(corpus.train);
  mc.vocab = (int)tok.vocab_size();
  const trainer::TokenDataset data = trainer::TokenDataset::build(tok, corpus.train);
  const trainer::TokenDataset heldout = trainer::TokenDataset::build(tok, corpus.heldout);
  trainer::ParallelTrainer t(mc, o, data);
  // --resume: the same split goes on from the file (one process: as on virtual ranks; several:
  // rank 0 reads it and hands each rank its part; a bad file is the same line on every process).
  if (!a.resume.empty()) t.load(a.resume, /*keep_its_steps=*/!a.given.count("--steps"));
  const int S = a.seq > 0 ? a.seq : mc.seq_len;
  if (speaks)
    std::fprintf(stderr, "model %s split over %d ranks%s (pp=%d x dp=%d, ep=%d, vstages=%d, %s, %s link%s); %d texts of %d tokens a step\n",
                 mc.name.c_str(), t.world(), processes ? (", one process each over " + le.launcher + "'s sockets").c_str() : "",
                 a.pp, a.dp, a.ep, a.vstages, a.schedule.c_str(), a.link.c_str(), a.zero == 1 ? ", ZeRO-1" : "", a.batch, S);
  if (!a.resume.empty() && speaks) std::fprintf(stderr, "resumed %s at step %d\n", text::printable(a.resume).c_str(), t.steps_done());
  std::unique_ptr<trainer::JsonlLog> log;
  {
    std::string error;  // rank 0's log, which every process must hear of before it trains
    try {
      if (!a.log.empty() && speaks) log = open_log(a.log, a.resume.empty() ? -1 : t.steps_done());
    } catch (const Error& e) {
      error = e.what();
    }
    if (comm)
      trainer::agree(*comm, error);
    else if (!error.empty())
      throw Error(error);
  }
  check_stop_at(a, t.options().steps);
  const int last = a.stop_at > 0 ? a.stop_at : t.options().steps;
  if (speaks) say_if_nothing_left(t.steps_done(), last);
  trainer::ParallelStepResult r;
  std::deque<StepTrace> traced;
  std::size_t traced_ops = 0;
  bool trimmed = false;
  {
    Progress progress(a.quiet || !speaks, t.steps_done(), last, (double)a.batch * S);
    while (t.steps_done() < last) {
      r = t.step();
      if (log) log->write(step_json(t, r));
      if (!a.trace.empty() && speaks) {
        traced.push_back({&t.plan(), t.timeline(), t.memory_events(), r.step});
        traced_ops += t.plan().ops.size();
        // Keep the last trace_steps steps, and no more ops than a viewer opens (the last always).
        while (traced.size() > 1 && ((int)traced.size() > a.trace_steps || traced_ops > kMaxTraceOps)) {
          traced_ops -= traced.front().plan->ops.size();
          traced.pop_front();
          trimmed = true;
        }
      }
      char bubble[32];
      std::snprintf(bubble, sizeof bubble, "  bubble %.1f%%", 100.0 * r.bubble);
      progress.step(r.step, r.loss, bubble);
    }
  }
  const bool stepped = r.step > 0;
  // Every process takes part in saving and in gathering the weights; only rank 0 speaks.
  if (!a.save.empty()) {
    t.save(a.save);
    if (speaks) std::fprintf(stderr, "saved %s\n", a.save.c_str());
  }
  const double held = trainer::heldout_loss(mc, t.master_weights(), heldout);
  if (!speaks) return 0;
  if (!a.trace.empty() && !traced.empty()) {
    std::vector<trainer::TraceStep> steps;
    for (const auto& s : traced) steps.push_back({s.plan, &s.timeline, s.memory, s.step});
    trainer::write_chrome_trace(a.trace, steps);
    const int s0 = traced.front().step, s1 = traced.back().step;
    std::fprintf(stderr, "wrote %s (%d ranks, %s %d%s%s)\n", a.trace.c_str(), t.world(), s0 == s1 ? "step" : "steps", s0,
                 s0 == s1 ? "" : ("-" + std::to_string(s1)).c_str(), trimmed ? ", the last ones kept" : "");
  }
  if (stepped) std::printf("loss %.4f at step %d on %d ranks\n", r.loss, t.steps_done(), t.world());
  // The split model's weights, gathered (above), evaluated as a one-rank run evaluates its own.
  std::printf("held-out loss %.4f after %d steps\n", held, t.steps_done());
  return 0;
}

}  // namespace

int train_main(int argc, char** argv) {
  return guarded("train", [&] {
    std::optional<TrainArgs> parsed = parse_train(rest(argc, argv));
    if (!parsed) return std::printf("%s", train_help().c_str()), 0;
    TrainArgs& a = *parsed;
    const std::string note = fill_defaults(a);
    // Every file the run will write is checked before it trains, so a typo does not lose a run.
    if (!a.save.empty()) trainer::files::check_output(a.save, "--save");
    if (!a.trace.empty()) trainer::files::check_output(a.trace, "--trace");
    if (!a.log.empty()) trainer::files::check_output(a.log, "--log", /*stream=*/true);
    // auto becomes cpu or cuda here; cuda with no GPU is one line and exit 2 (guarded).
    a.device = trainer::resolve_device(a.device);
    // Started by mpirun or torchrun as one of several processes: each runs its own rank of the
    // split (a bad launcher variable is one line too: trainer/dist/launch_env.h).
    const trainer::LaunchEnv le = trainer::launch_env();
    if (le.world > 1) check_process_split(a, le);
    if (a.parallel) return train_parallel(a, note, le);
    trainer::Corpus corpus = training_corpus(a.corpus);
    std::unique_ptr<trainer::Trainer> t;
    std::unique_ptr<trainer::JsonlLog> log;
    if (!a.resume.empty()) {
      // No --steps: the checkpoint's own, so the schedule goes on as it was planned.
      t = trainer::Trainer::resume(a.resume, corpus, a.given.count("--steps") ? a.steps : 0, a.threads, a.device);
      // A resumed run keeps the checkpoint's settings; a flag that contradicts them is an error.
      const auto& o = t->options();
      auto clash = [&](const char* flag, long long mine, long long theirs) {
        if (a.given.count(flag) && mine != theirs)
          throw Error(std::string(flag) + " " + std::to_string(mine) + " conflicts with the checkpoint's " +
                      std::to_string(theirs));
      };
      if (a.model_given && a.model != t->model().config().name)
        throw Error("--model " + a.model + " conflicts with the checkpoint's model " +
                    text::printable(t->model().config().name));
      clash("--batch", a.batch, o.batch);
      clash("--microbatches", a.microbatches, o.microbatches);
      clash("--seed", (long long)a.seed, (long long)o.seed);
      if (!a.log.empty()) log = open_log(a.log, t->steps_done());  // appends, or one line and nothing printed
      std::fprintf(stderr, "resumed %s at step %d\n", text::printable(a.resume).c_str(), t->steps_done());
    } else {
      trainer::BpeTokenizer tok = trainer::BpeTokenizer::train(corpus.train);
      trainer::TrainOptions o;
      o.steps = a.steps;
      o.batch = a.batch;
      o.microbatches = a.microbatches;
      o.seed = a.seed;
      o.threads = a.threads;
      o.device = a.device;
      t = std::make_unique<trainer::Trainer>(trainer::model_preset(a.model), o, std::move(tok), corpus);
    }
    const auto& cfg = t->model().config();
    auto pb = trainer::param_breakdown(cfg);
    std::fprintf(stderr,
                 "model %s: %d layers, %d experts (top-%d), d_model %d, vocab %d; %.2fM weights "
                 "(experts %.0f%%); %zu training tokens\n",
                 text::printable(cfg.name).c_str(), cfg.n_layers, cfg.n_experts, cfg.top_k, cfg.d_model, cfg.vocab,
                 pb.total() / 1e6, 100.0 * pb.experts / pb.total(), t->train_data().tokens.size());
    if (a.device == "cuda") std::fprintf(stderr, "ops run on the GPU (CUDA backend)\n");
    if (!a.log.empty() && !log) log = open_log(a.log, -1);
    check_stop_at(a, t->options().steps);
    const int last = a.stop_at > 0 ? a.stop_at : t->options().steps;
    say_if_nothing_left(t->steps_done(), last);
    {
      Progress progress(a.quiet, t->steps_done(), last, (double)t->options().batch * cfg.seq_len);
      while (t->steps_done() < last) {
        auto r = t->step();
        if (log) {
          auto mem = trainer::json::Value::object();
          auto peak = trainer::json::Value::object();
          for (int c = 0; c < trainer::kMemCategoryCount; ++c) {
            auto name = std::string(trainer::mem_category_name((trainer::MemCategory)c));
            mem.set(name, (long long)r.memory.current[c]);
            peak.set(name, (long long)r.memory.peak[c]);
          }
          auto o = trainer::json::Value::object();
          o.set("step", r.step);
          o.set("loss", r.loss);
          o.set("aux_loss", r.aux_loss);
          o.set("lr", (double)r.lr);
          o.set("grad_norm", r.grad_norm);
          o.set("tokens_per_s", r.tokens_per_s);
          o.set("memory", std::move(mem));
          o.set("memory_peak", std::move(peak));
          log->write(o);
        }
        progress.step(r.step, r.loss);
      }
    }
    double held = t->heldout_loss();
    std::printf("held-out loss %.4f after %d steps\n", held, t->steps_done());
    if (!a.save.empty()) {
      t->save(a.save);
      std::fprintf(stderr, "saved %s\n", a.save.c_str());
    }
    return 0;
  });
}

int predict_main(int argc, char** argv) {
  return guarded("predict", [&] {
    std::optional<PredictArgs> parsed = parse_predict(rest(argc, argv), false);
    if (!parsed) return std::printf("%s", predict_help(false).c_str()), 0;
    const PredictArgs& a = *parsed;
    auto t = trainer::Trainer::load_for_inference(a.resume);
    for (const auto& p : trainer::next_token_distribution(t->model(), t->tokenizer(), a.prompt, a.top))
      std::printf("%-16s %.4f\n", show_token(p.text).c_str(), p.prob);
    return 0;
  });
}

int sample_main(int argc, char** argv) {
  return guarded("sample", [&] {
    std::optional<PredictArgs> parsed = parse_predict(rest(argc, argv), true);
    if (!parsed) return std::printf("%s", predict_help(true).c_str()), 0;
    const PredictArgs& a = *parsed;
    auto t = trainer::Trainer::load_for_inference(a.resume);
    std::string out = a.prompt + trainer::sample_continuation(t->model(), t->tokenizer(), a.prompt, a.tokens,
                                                              a.seed, a.temperature);
    std::printf("%s\n", out.c_str());
    return 0;
  });
}

}  // namespace onegpu::cli
