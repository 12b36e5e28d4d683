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

#include "trainer/data/story_corpus.h"
#include "trainer/device.h"
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

// Strict: digits only, in [lo, hi], checked before narrowing (trainer/io/text.h).
long long parse_int(const std::string& flag, const std::string& v, long long lo, long long hi) {
  return text::int_flag(flag, v, lo, hi);
}

// Walks flags; each takes one value.
template <class F>
void walk(const std::vector<std::string>& args, F on_flag) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--quiet") {
      on_flag(a, std::string());
      continue;
    }
    if (a.rfind("--", 0) != 0) throw Error("unexpected argument '" + a + "'");
    if (i + 1 >= args.size()) throw Error(a + " needs a value");
    // An empty value is never what a user means (--resume '' would start a fresh run).
    if (args[i + 1].empty()) throw Error(a + " needs a value, got an empty one");
    on_flag(a, args[++i]);
  }
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

bool wants_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") return true;
  return false;
}

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

constexpr const char* kTrainUsage =
    "usage: onegpu train [--model story|story8|scale|wide] [--steps N] [--batch B] [--microbatches M]\n"
    "                    [--seed S] [--threads T] [--corpus FILE] [--log FILE.jsonl] [--save CKPT]\n"
    "                    [--resume CKPT] [--stop-at K] [--quiet] [--device cpu|cuda|auto]\n"
    "                    [--dp N] [--ep N] [--pp N] [--vstages V] [--schedule gpipe|1f1b|interleaved|zb1]\n"
    "                    [--link nvlink|ib|pcie] [--trace FILE.json] [--trace-steps N] [--seq S]\n"
    "                    [--workers W] [--zero 0|1]\n"
    "  Trains the tiny mixture-of-experts model (default: story, 1000 steps of 4 texts, on the\n"
    "  generated story corpus) and prints the held-out loss. --steps counts from step 0, also\n"
    "  when resuming; --stop-at stops early while the schedule still spans --steps.\n"
    "  --dp/--ep/--pp/--vstages/--schedule split the run over pp x dp virtual ranks (each dp rank\n"
    "  takes batch/dp texts in --microbatches microbatches; the loss is over the global batch).\n"
    "  Left out, --microbatches becomes pp when the pipeline needs that many, and interleaved\n"
    "  takes --vstages 2; a line on stderr says so.\n"
    "  --link sets the simulated interconnect; --trace writes a Perfetto trace (ui.perfetto.dev)\n"
    "  of the last --trace-steps steps (default 50, fewer if they pass 1M ops, ~200 MB), one\n"
    "  after another in time; --seq shortens the texts, --workers sets the engine's threads.\n"
    "  --zero 1 (ZeRO-1) splits the fp32 master weights and Adam moments over the ranks holding\n"
    "  copies of the same weights: gradients are reduce-scattered, each rank updates its piece,\n"
    "  the bf16 weights are all-gathered. Same losses and weights, bit for bit, as --zero 0.\n"
    "  --device cuda runs the ops on the GPU (one rank only for now); auto picks the GPU when there\n"
    "  is one. Default cpu.\n";
constexpr const char* kPredictUsage =
    "usage: onegpu predict --resume CKPT (--prompt TEXT | --prompt-file FILE) [--top K]\n"
    "  The K most likely next tokens after TEXT, one token and probability a line.\n"
    "  --prompt-file reads the prompt from FILE (- for standard input; one final newline dropped).\n";
constexpr const char* kSampleUsage =
    "usage: onegpu sample --resume CKPT (--prompt TEXT | --prompt-file FILE) [--tokens N] [--seed S]\n"
    "  Continues TEXT by sampling N tokens (temperature 0.8).\n"
    "  --prompt-file reads the prompt from FILE (- for standard input; one final newline dropped).\n";

}  // namespace

TrainArgs parse_train_args(const std::vector<std::string>& args) {
  TrainArgs a;
  walk(args, [&](const std::string& f, const std::string& v) {
    a.given.insert(f);
    if (f == "--model") {
      trainer::model_preset(v);  // throws for an unknown name
      a.model = v;
      a.model_given = true;
    } else if (f == "--steps") a.steps = (int)parse_int(f, v, 1, limits::kMaxSteps);
    else if (f == "--batch") a.batch = (int)parse_int(f, v, 1, limits::kMaxBatch);
    else if (f == "--microbatches") a.microbatches = (int)parse_int(f, v, 1, limits::kMaxBatch);
    else if (f == "--seed") a.seed = text::u64_flag(f, v);
    else if (f == "--threads") a.threads = (int)parse_int(f, v, 1, limits::kMaxThreads);
    else if (f == "--device") {
      if (v != "cpu" && v != "cuda" && v != "auto")
        throw Error("--device must be cpu, cuda or auto (got '" + text::printable(v) + "')");
      a.device = v;
    } else if (f == "--corpus") a.corpus = v;
    else if (f == "--log") a.log = v;
    else if (f == "--save") a.save = v;
    else if (f == "--stop-at") a.stop_at = (int)parse_int(f, v, 1, limits::kMaxSteps);
    else if (f == "--resume") a.resume = v;
    else if (f == "--quiet") a.quiet = true;
    else if (f == "--dp") a.dp = (int)parse_int(f, v, 1, limits::kMaxRanksPerAxis);
    else if (f == "--ep") a.ep = (int)parse_int(f, v, 1, limits::kMaxRanksPerAxis);
    else if (f == "--pp") a.pp = (int)parse_int(f, v, 1, limits::kMaxRanksPerAxis);
    else if (f == "--vstages") a.vstages = (int)parse_int(f, v, 1, limits::kMaxVstages);
    else if (f == "--schedule") {
      trainer::parse_schedule(v);  // throws for an unknown name
      a.schedule = v;
    } else if (f == "--link") {
      trainer::CostModel::for_link(v);  // throws for an unknown name
      a.link = v;
    } else if (f == "--trace") a.trace = v;
    else if (f == "--trace-steps") a.trace_steps = (int)parse_int(f, v, 1, limits::kMaxTraceSteps);
    else if (f == "--seq") a.seq = (int)parse_int(f, v, 1, limits::kMaxSeq);
    else if (f == "--workers") a.workers = (int)parse_int(f, v, 1, limits::kMaxThreads);
    else if (f == "--zero") {
      if (v != "0" && v != "1")
        throw Error("--zero must be 0 or 1 (got '" + text::printable(v) +
                    "'); ZeRO-2 and ZeRO-3 are only modelled, in the full-size readout");
      a.zero = v == "1" ? 1 : 0;
    }
    else throw Error("unknown option '" + f + "'");
  });
  for (const char* f : {"--dp", "--ep", "--pp", "--vstages", "--schedule", "--link", "--trace", "--trace-steps", "--seq",
                        "--workers", "--zero"})
    if (a.given.count(f)) a.parallel = true;
  if (a.parallel && !a.resume.empty()) throw Error("--resume works with one rank only (no --dp/--ep/--pp/... flags)");
  if (a.parallel && !a.save.empty()) throw Error("--save works with one rank only (no --dp/--ep/--pp/... flags)");
  if (a.parallel && a.device == "cuda")
    throw Error("--device cuda works with one rank only for now (no --dp/--ep/--pp/... flags)");
  if (!a.parallel && a.batch % a.microbatches != 0)
    throw Error("--batch (" + std::to_string(a.batch) + ") must be a multiple of --microbatches (" +
                std::to_string(a.microbatches) + ")");
  if (a.stop_at > a.steps) throw Error("--stop-at must not exceed --steps");
  // Checked in 64 bits before any rule multiplies them in int.
  if ((long long)a.dp * a.microbatches > a.batch)
    throw Error("--batch " + std::to_string(a.batch) + " is smaller than --dp x --microbatches = " +
                std::to_string((long long)a.dp * a.microbatches) + "; every microbatch needs a text");
  if (a.given.count("--trace-steps") && a.trace.empty()) throw Error("--trace-steps needs --trace FILE.json");
  return a;
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
  return o;
}

PredictArgs parse_predict_args(const std::vector<std::string>& args, bool sample) {
  PredictArgs a;
  bool have_prompt = false;
  walk(args, [&](const std::string& f, const std::string& v) {
    if (f == "--resume") a.resume = v;
    else if (f == "--prompt" || f == "--prompt-file") {
      if (have_prompt) throw Error("give the prompt once: --prompt TEXT or --prompt-file FILE");
      a.prompt = f == "--prompt" ? v : read_prompt_file(v);
      have_prompt = true;
    }
    else if (f == "--top" && !sample) a.top = (int)parse_int(f, v, 1, limits::kMaxTop);
    else if (f == "--tokens" && sample) a.tokens = (int)parse_int(f, v, 1, limits::kMaxTokens);
    else if (f == "--seed" && sample) a.seed = text::u64_flag(f, v);
    else throw Error("unknown option '" + f + "'");
  });
  if (a.resume.empty()) throw Error("--resume CKPT is required");
  if (!have_prompt || a.prompt.empty())
    throw Error("--prompt TEXT (or --prompt-file FILE, - for standard input) is required and must not be empty");
  return a;
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

int train_parallel(const TrainArgs& a, const std::string& note) {
  trainer::ModelConfig mc = trainer::model_preset(a.model);
  trainer::ParallelOptions o = parallel_options(a);
  // The split is checked before the corpus and tokenizer are built: a bad config fails fast,
  // in one line (the note on what was picked comes after, when it is worth reading).
  trainer::parallel_run_config(mc, o);
  {
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
  if (!note.empty()) std::fprintf(stderr, "onegpu train: %s\n", note.c_str());
  trainer::Corpus corpus = a.corpus.empty() ? trainer::generate_story_corpus() : trainer::load_text_corpus(a.corpus);
  trainer::BpeTokenizer tok = trainer::BpeTokenizer::train(corpus.train);
  mc.vocab = (int)tok.vocab_size();
  const trainer::TokenDataset data = trainer::TokenDataset::build(tok, corpus.train);
  const trainer::TokenDataset heldout = trainer::TokenDataset::build(tok, corpus.heldout);
  trainer::ParallelTrainer t(mc, o, data);
  const int S = a.seq > 0 ? a.seq : mc.seq_len;
  std::fprintf(stderr, "model %s split over %d ranks (pp=%d x dp=%d, ep=%d, vstages=%d, %s, %s link%s); %d texts of %d tokens a step\n",
               mc.name.c_str(), t.world(), a.pp, a.dp, a.ep, a.vstages, a.schedule.c_str(), a.link.c_str(),
               a.zero == 1 ? ", ZeRO-1" : "", a.batch, S);
  std::unique_ptr<trainer::JsonlLog> log;
  if (!a.log.empty()) log = std::make_unique<trainer::JsonlLog>(a.log);
  const int last = a.stop_at > 0 ? a.stop_at : a.steps;
  trainer::ParallelStepResult r;
  std::deque<StepTrace> traced;
  std::size_t traced_ops = 0;
  bool trimmed = false;
  {
    Progress progress(a.quiet, t.steps_done(), last, (double)a.batch * S);
    while (t.steps_done() < last) {
      r = t.step();
      if (log) log->write(step_json(t, r));
      if (!a.trace.empty()) {
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
  if (!a.trace.empty()) {
    std::vector<trainer::TraceStep> steps;
    for (const auto& s : traced) steps.push_back({s.plan, &s.timeline, s.memory, s.step});
    trainer::write_chrome_trace(a.trace, steps);
    const int s0 = traced.front().step, s1 = traced.back().step;
    std::fprintf(stderr, "wrote %s (%d ranks, %s %d%s%s)\n", a.trace.c_str(), t.world(), s0 == s1 ? "step" : "steps", s0,
                 s0 == s1 ? "" : ("-" + std::to_string(s1)).c_str(), trimmed ? ", the last ones kept" : "");
  }
  std::printf("loss %.4f at step %d on %d ranks\n", r.loss, t.steps_done(), t.world());
  // The split model's weights, gathered, evaluated as a one-rank run evaluates its own.
  const double held = trainer::heldout_loss(mc, t.master_weights(), heldout);
  std::printf("held-out loss %.4f after %d steps\n", held, t.steps_done());
  return 0;
}

}  // namespace

int train_main(int argc, char** argv) {
  if (wants_help(argc, argv)) return std::printf("%s", kTrainUsage), 0;
  return guarded("train", [&] {
    TrainArgs a = parse_train_args(rest(argc, argv));
    const std::string note = fill_defaults(a);
    // Every file the run will write is checked before it trains, so a typo does not lose a run.
    if (!a.save.empty()) trainer::files::check_output(a.save, "--save");
    if (!a.trace.empty()) trainer::files::check_output(a.trace, "--trace");
    if (!a.log.empty()) trainer::files::check_output(a.log, "--log", /*stream=*/true);
    // auto becomes cpu or cuda here; cuda with no GPU is one line and exit 2 (guarded).
    a.device = a.parallel ? "cpu" : trainer::resolve_device(a.device);
    if (a.parallel) return train_parallel(a, note);
    trainer::Corpus corpus = a.corpus.empty() ? trainer::generate_story_corpus() : trainer::load_text_corpus(a.corpus);
    std::unique_ptr<trainer::Trainer> t;
    std::unique_ptr<trainer::JsonlLog> log;
    if (!a.resume.empty()) {
      t = trainer::Trainer::resume(a.resume, corpus, a.steps, a.threads, a.device);
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
    const int last = a.stop_at > 0 ? a.stop_at : t->options().steps;
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
  if (wants_help(argc, argv)) return std::printf("%s", kPredictUsage), 0;
  return guarded("predict", [&] {
    PredictArgs a = parse_predict_args(rest(argc, argv), false);
    auto t = trainer::Trainer::load_for_inference(a.resume);
    for (const auto& p : trainer::next_token_distribution(t->model(), t->tokenizer(), a.prompt, a.top))
      std::printf("%-16s %.4f\n", show_token(p.text).c_str(), p.prob);
    return 0;
  });
}

int sample_main(int argc, char** argv) {
  if (wants_help(argc, argv)) return std::printf("%s", kSampleUsage), 0;
  return guarded("sample", [&] {
    PredictArgs a = parse_predict_args(rest(argc, argv), true);
    auto t = trainer::Trainer::load_for_inference(a.resume);
    std::string out = a.prompt + trainer::sample_continuation(t->model(), t->tokenizer(), a.prompt, a.tokens,
                                                              a.seed, a.temperature);
    std::printf("%s\n", out.c_str());
    return 0;
  });
}

}  // namespace onegpu::cli
