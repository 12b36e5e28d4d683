#include "app/cli/train_command.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "trainer/data/story_corpus.h"
#include "trainer/engine/chrome_trace.h"
#include "trainer/error.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/io/jsonl_log.h"
#include "trainer/model/params.h"
#include "trainer/train/probes.h"
#include "trainer/train/trainer.h"

namespace onegpu::cli {

using trainer::Error;

namespace {

long long parse_int(const std::string& flag, const std::string& v, long long lo) {
  std::size_t pos = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos == 0 || pos != v.size()) throw Error(flag + " expects an integer, got '" + v + "'");
  if (x < lo) throw Error(flag + " must be at least " + std::to_string(lo) + ", got " + v);
  return x;
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

constexpr const char* kTrainUsage =
    "usage: onegpu train [--model story|story8|scale] [--steps N] [--batch B] [--microbatches M]\n"
    "                    [--seed S] [--threads T] [--corpus FILE] [--log FILE.jsonl] [--save CKPT]\n"
    "                    [--resume CKPT] [--stop-at K] [--quiet]\n"
    "                    [--dp N] [--ep N] [--pp N] [--vstages V] [--schedule gpipe|1f1b|interleaved|zb1]\n"
    "                    [--link nvlink|ib|pcie] [--trace FILE.json] [--seq S] [--workers W]\n"
    "  Trains the tiny mixture-of-experts model (default: story, 1000 steps of 4 texts, on the\n"
    "  generated story corpus) and prints the held-out loss. --steps counts from step 0, also\n"
    "  when resuming; --stop-at stops early while the schedule still spans --steps.\n"
    "  --dp/--ep/--pp/--vstages/--schedule split the run over pp x dp virtual ranks (each dp rank\n"
    "  takes batch/dp texts in --microbatches microbatches; the loss is over the global batch);\n"
    "  --link sets the simulated interconnect, --trace writes the last step as a Perfetto trace,\n"
    "  --seq shortens the texts, --workers sets the engine's threads.\n";
constexpr const char* kPredictUsage =
    "usage: onegpu predict --resume CKPT --prompt TEXT [--top K]\n"
    "  The K most likely next tokens after TEXT, one token and probability a line.\n";
constexpr const char* kSampleUsage =
    "usage: onegpu sample --resume CKPT --prompt TEXT [--tokens N] [--seed S]\n"
    "  Continues TEXT by sampling N tokens (temperature 0.8).\n";

}  // namespace

TrainArgs parse_train_args(const std::vector<std::string>& args) {
  TrainArgs a;
  walk(args, [&](const std::string& f, const std::string& v) {
    a.given.insert(f);
    if (f == "--model") {
      trainer::model_preset(v);  // throws for an unknown name
      a.model = v;
      a.model_given = true;
    } else if (f == "--steps") a.steps = (int)parse_int(f, v, 1);
    else if (f == "--batch") a.batch = (int)parse_int(f, v, 1);
    else if (f == "--microbatches") a.microbatches = (int)parse_int(f, v, 1);
    else if (f == "--seed") a.seed = (std::uint64_t)parse_int(f, v, 0);
    else if (f == "--threads") a.threads = (int)parse_int(f, v, 1);
    else if (f == "--corpus") a.corpus = v;
    else if (f == "--log") a.log = v;
    else if (f == "--save") a.save = v;
    else if (f == "--stop-at") a.stop_at = (int)parse_int(f, v, 1);
    else if (f == "--resume") a.resume = v;
    else if (f == "--quiet") a.quiet = true;
    else if (f == "--dp") a.dp = (int)parse_int(f, v, 1);
    else if (f == "--ep") a.ep = (int)parse_int(f, v, 1);
    else if (f == "--pp") a.pp = (int)parse_int(f, v, 1);
    else if (f == "--vstages") a.vstages = (int)parse_int(f, v, 1);
    else if (f == "--schedule") {
      trainer::parse_schedule(v);  // throws for an unknown name
      a.schedule = v;
    } else if (f == "--link") {
      trainer::CostModel::for_link(v);  // throws for an unknown name
      a.link = v;
    } else if (f == "--trace") a.trace = v;
    else if (f == "--seq") a.seq = (int)parse_int(f, v, 1);
    else if (f == "--workers") a.workers = (int)parse_int(f, v, 1);
    else throw Error("unknown option '" + f + "'");
  });
  for (const char* f : {"--dp", "--ep", "--pp", "--vstages", "--schedule", "--link", "--trace", "--seq", "--workers"})
    if (a.given.count(f)) a.parallel = true;
  if (a.parallel && !a.resume.empty()) throw Error("--resume works with one rank only (no --dp/--ep/--pp/... flags)");
  if (a.parallel && !a.save.empty()) throw Error("--save works with one rank only (no --dp/--ep/--pp/... flags)");
  if (!a.parallel && a.batch % a.microbatches != 0)
    throw Error("--batch (" + std::to_string(a.batch) + ") must be a multiple of --microbatches (" +
                std::to_string(a.microbatches) + ")");
  if (a.stop_at > a.steps) throw Error("--stop-at must not exceed --steps");
  return a;
}

trainer::ParallelOptions parallel_options(const TrainArgs& a) {
  trainer::ParallelOptions o;
  o.dp = a.dp;
  o.ep = a.ep;
  o.pp = a.pp;
  o.vstages = a.vstages;
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
    else if (f == "--prompt") { a.prompt = v; have_prompt = true; }
    else if (f == "--top" && !sample) a.top = (int)parse_int(f, v, 1);
    else if (f == "--tokens" && sample) a.tokens = (int)parse_int(f, v, 1);
    else if (f == "--seed" && sample) a.seed = (std::uint64_t)parse_int(f, v, 0);
    else throw Error("unknown option '" + f + "'");
  });
  if (a.resume.empty()) throw Error("--resume CKPT is required");
  if (!have_prompt || a.prompt.empty()) throw Error("--prompt TEXT is required and must not be empty");
  return a;
}

namespace {

trainer::json::Value memory_json(const std::array<std::int64_t, trainer::kMemCategoryCount>& v) {
  auto o = trainer::json::Value::object();
  for (int c = 0; c < trainer::kMemCategoryCount; ++c)
    o.set(std::string(trainer::mem_category_name((trainer::MemCategory)c)), (long long)v[(std::size_t)c]);
  return o;
}

int train_parallel(const TrainArgs& a) {
  trainer::ModelConfig mc = trainer::model_preset(a.model);
  trainer::ParallelOptions o = parallel_options(a);
  // The split is checked before the corpus and tokenizer are built: a bad config fails fast.
  trainer::parallel_run_config(mc, o);
  trainer::Corpus corpus = a.corpus.empty() ? trainer::generate_story_corpus() : trainer::load_text_corpus(a.corpus);
  trainer::BpeTokenizer tok = trainer::BpeTokenizer::train(corpus.train);
  mc.vocab = (int)tok.vocab_size();
  const trainer::TokenDataset data = trainer::TokenDataset::build(tok, corpus.train);
  trainer::ParallelTrainer t(mc, o, data);
  const int S = a.seq > 0 ? a.seq : mc.seq_len;
  std::fprintf(stderr, "model %s split over %d ranks (pp=%d x dp=%d, ep=%d, vstages=%d, %s, %s link); %d texts of %d tokens a step\n",
               mc.name.c_str(), t.world(), a.pp, a.dp, a.ep, a.vstages, a.schedule.c_str(), a.link.c_str(), a.batch, S);
  std::unique_ptr<trainer::JsonlLog> log;
  if (!a.log.empty()) log = std::make_unique<trainer::JsonlLog>(a.log);
  const int last = a.stop_at > 0 ? a.stop_at : a.steps;
  trainer::ParallelStepResult r;
  while (t.steps_done() < last) {
    r = t.step();
    if (log) {
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
      log->write(o);
    }
    if (!a.quiet)
      std::fprintf(stderr, "step %d/%d  loss %.4f  bubble %.1f%%  %.2f s (virtual %.3f ms)\n", r.step, last, r.loss,
                   100.0 * r.bubble, r.seconds, 1e3 * r.virtual_seconds);
  }
  if (!a.trace.empty()) {
    const auto mem = t.memory_events();
    trainer::write_chrome_trace(a.trace, t.plan(), t.timeline(), mem);
    std::fprintf(stderr, "wrote %s (%d ranks)\n", a.trace.c_str(), t.world());
  }
  std::printf("loss %.4f at step %d on %d ranks\n", r.loss, t.steps_done(), t.world());
  return 0;
}

}  // namespace

int train_main(int argc, char** argv) {
  if (wants_help(argc, argv)) return std::printf("%s", kTrainUsage), 0;
  try {
    TrainArgs a = parse_train_args(rest(argc, argv));
    if (a.parallel) return train_parallel(a);
    trainer::Corpus corpus = a.corpus.empty() ? trainer::generate_story_corpus() : trainer::load_text_corpus(a.corpus);
    std::unique_ptr<trainer::Trainer> t;
    if (!a.resume.empty()) {
      t = trainer::Trainer::resume(a.resume, corpus, a.steps, a.threads);
      // A resumed run keeps the checkpoint's settings; a flag that contradicts them is an error.
      const auto& o = t->options();
      auto clash = [&](const char* flag, long long mine, long long theirs) {
        if (a.given.count(flag) && mine != theirs)
          throw Error(std::string(flag) + " " + std::to_string(mine) + " conflicts with the checkpoint's " +
                      std::to_string(theirs));
      };
      if (a.model_given && a.model != t->model().config().name)
        throw Error("--model " + a.model + " conflicts with the checkpoint's model " + t->model().config().name);
      clash("--batch", a.batch, o.batch);
      clash("--microbatches", a.microbatches, o.microbatches);
      clash("--seed", (long long)a.seed, (long long)o.seed);
      std::fprintf(stderr, "resumed %s at step %d\n", a.resume.c_str(), t->steps_done());
    } else {
      trainer::BpeTokenizer tok = trainer::BpeTokenizer::train(corpus.train);
      trainer::TrainOptions o;
      o.steps = a.steps;
      o.batch = a.batch;
      o.microbatches = a.microbatches;
      o.seed = a.seed;
      o.threads = a.threads;
      t = std::make_unique<trainer::Trainer>(trainer::model_preset(a.model), o, std::move(tok), corpus);
    }
    const auto& cfg = t->model().config();
    auto pb = trainer::param_breakdown(cfg);
    std::fprintf(stderr,
                 "model %s: %d layers, %d experts (top-%d), d_model %d, vocab %d; %.2fM weights "
                 "(experts %.0f%%); %zu training tokens\n",
                 cfg.name.c_str(), cfg.n_layers, cfg.n_experts, cfg.top_k, cfg.d_model, cfg.vocab,
                 pb.total() / 1e6, 100.0 * pb.experts / pb.total(), t->train_data().tokens.size());
    std::unique_ptr<trainer::JsonlLog> log;
    if (!a.log.empty()) log = std::make_unique<trainer::JsonlLog>(a.log);
    const bool tty = isatty(2);
    auto start = std::chrono::steady_clock::now();
    int first = t->steps_done();
    double smooth = 0;
    const int last = a.stop_at > 0 ? a.stop_at : t->options().steps;
    while (t->steps_done() < last) {
      auto r = t->step();
      smooth = smooth == 0 ? r.loss : 0.95 * smooth + 0.05 * r.loss;
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
      double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      int done = r.step - first, left = last - r.step;
      double tps = el > 0 ? done * (double)t->options().batch * cfg.seq_len / el : 0;
      bool show = !a.quiet && (tty || r.step % 100 == 0 || left == 0);
      if (show) {
        std::fprintf(stderr, "%sstep %d/%d  loss %.3f  %.0f tok/s  ETA %s%s", tty ? "\r" : "", r.step,
                     last, smooth, tps, fmt_time(done ? el / done * left : NAN).c_str(),
                     tty ? "   " : "\n");
        std::fflush(stderr);
      }
    }
    if (tty && !a.quiet) std::fprintf(stderr, "\n");
    double held = t->heldout_loss();
    std::printf("held-out loss %.4f after %d steps\n", held, t->steps_done());
    if (!a.save.empty()) {
      t->save(a.save);
      std::fprintf(stderr, "saved %s\n", a.save.c_str());
    }
    return 0;
  } catch (const Error& e) {
    return fail("train", e);
  } catch (const std::bad_alloc& e) {
    return fail("train", e);
  }
}

int predict_main(int argc, char** argv) {
  if (wants_help(argc, argv)) return std::printf("%s", kPredictUsage), 0;
  try {
    PredictArgs a = parse_predict_args(rest(argc, argv), false);
    auto t = trainer::Trainer::load_for_inference(a.resume);
    for (const auto& p : trainer::next_token_distribution(t->model(), t->tokenizer(), a.prompt, a.top))
      std::printf("%-16s %.4f\n", show_token(p.text).c_str(), p.prob);
    return 0;
  } catch (const Error& e) {
    return fail("predict", e);
  }
}

int sample_main(int argc, char** argv) {
  if (wants_help(argc, argv)) return std::printf("%s", kSampleUsage), 0;
  try {
    PredictArgs a = parse_predict_args(rest(argc, argv), true);
    auto t = trainer::Trainer::load_for_inference(a.resume);
    std::string out = a.prompt + trainer::sample_continuation(t->model(), t->tokenizer(), a.prompt, a.tokens,
                                                              a.seed, a.temperature);
    std::printf("%s\n", out.c_str());
    return 0;
  } catch (const Error& e) {
    return fail("sample", e);
  }
}

}  // namespace onegpu::cli
