// The storyboard's 512 virtual GPUs on this machine's cores: how long the split trainer takes
// to build its ranks, how long one step takes, and how much memory the process holds.
//
//   scale_bench                      the 512-rank run of issue 15 (pp 8 × dp 64, ep 8, 1F1B,
//                                    8 microbatches, 512 texts of 8 tokens, 2 steps)
//   scale_bench --dp 16 --steps 1    any split (flags below); --help lists them
//   scale_bench --cpu-costs          ops cost their thread's CPU time, as in the Lab (engine.h)
//   scale_bench --digest             the same run on the unit-cost clock, printed as one hash
//                                    per observable (losses, weights, timeline, memory,
//                                    communication peaks, routing):
//                                    two builds that print the same lines computed the same
//                                    bits (run both and diff; with --workers 1, as the
//                                    communication peaks depend on how workers interleave)
//
// Prints `setup_s` (the ParallelTrainer constructor: plans, the whole model's
// initialisation, every rank's shard, the engines), `step_s` per step, the process's CPU
// seconds (user + system, all threads), its peak resident memory and page faults (set-up:
// since the start; steps: during the step), and the load average
// at start and end (the machine may be shared: compare CPU seconds, or rerun when idle).
// The corpus and tokenizer are built first and not timed, as `onegpu train` builds them.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "trainer/data/bpe_tokenizer.h"
#include "trainer/data/story_corpus.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/train/dataset.h"

using namespace onegpu::trainer;

namespace {

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_maxrss / 1024.0;  // kilobytes on Linux
}

// Page faults so far (minor: fresh pages the kernel hands out and clears).
long page_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt + u.ru_majflt;
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

// FNV-1a over bytes: a short, order-sensitive fingerprint.
struct Hash {
  std::uint64_t h = 1469598103934665603ull;
  void bytes(const void* p, std::size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ull;
  }
  template <class T>
  void value(const T& v) {
    bytes(&v, sizeof v);
  }
};

void usage() {
  std::printf(
      "usage: scale_bench [--dp N] [--ep N] [--pp N] [--vstages N] [--microbatches N] [--batch N]\n"
      "                   [--seq N] [--steps N] [--schedule gpipe|1f1b|interleaved|zb-h1] [--zero 0|1]\n"
      "                   [--workers N] [--no-broadcast] [--cpu-costs] [--digest]\n");
}

}  // namespace

int main(int argc, char** argv) {
  ParallelOptions o;
  o.dp = 64;
  o.ep = 8;
  o.pp = 8;
  o.microbatches = 8;
  o.batch = 512;
  o.seq_len = 8;
  o.schedule = Schedule::OneFOneB;
  int steps = 2;
  bool digest = false;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    auto next = [&]() -> int {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return std::atoi(argv[++i]);
    };
    if (f == "--dp") o.dp = next();
    else if (f == "--ep") o.ep = next();
    else if (f == "--pp") o.pp = next();
    else if (f == "--vstages") o.vstages = next();
    else if (f == "--microbatches") o.microbatches = next();
    else if (f == "--batch") o.batch = next();
    else if (f == "--seq") o.seq_len = next();
    else if (f == "--steps") steps = next();
    else if (f == "--zero") o.zero = next();
    else if (f == "--workers") o.workers = next();
    else if (f == "--no-broadcast") o.broadcast_first_step = false;
    else if (f == "--cpu-costs") o.thread_cpu_costs = true;  // as the Lab's runs (engine.h)
    else if (f == "--digest") digest = true;
    else if (f == "--schedule" && i + 1 < argc) {
      const std::string s = argv[++i];
      o.schedule = s == "gpipe" ? Schedule::GPipe
                   : s == "interleaved" ? Schedule::Interleaved
                   : s == "zb-h1" ? Schedule::ZeroBubbleH1
                                  : Schedule::OneFOneB;
    } else {
      usage();
      return f == "--help" ? 0 : 2;
    }
  }
  o.steps = std::max(steps, 1);
  if (digest) o.cost = CostModel::unit();  // virtual times that do not depend on the machine

  const std::string load0 = load_average();
  const Corpus corpus = generate_story_corpus();
  const BpeTokenizer tok = BpeTokenizer::train(corpus.train);
  const TokenDataset data = TokenDataset::build(tok, corpus.train);
  ModelConfig mc = model_preset("scale");
  mc.vocab = (int)tok.vocab_size();

  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  ParallelTrainer t(mc, o, data);
  const double setup = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double setup_cpu = cpu_seconds() - cpu0;
  std::printf("scale_bench: %d ranks (pp %d x dp %d, ep %d, %d microbatches, batch %d, seq %d)\n", t.world(), o.pp, o.dp,
              o.ep, o.microbatches, o.batch, o.seq_len);
  std::printf("setup_s %.3f  (cpu %.3f s)  rss %.0f MB  faults %ld\n", setup, setup_cpu, peak_rss_mb(), page_faults());

  Hash losses, timeline, memory, comm, routing;
  const auto comm_cat = static_cast<std::size_t>(MemCategory::Communication);
  for (int s = 0; s < steps; ++s) {
    const double c0 = cpu_seconds();
    const long f0 = page_faults();
    const ParallelStepResult r = t.step();
    std::printf("step %d: step_s %.3f  (cpu %.3f s)  loss %.6f  rss %.0f MB  faults %ld\n", r.step, r.seconds,
                cpu_seconds() - c0, r.loss, peak_rss_mb(), page_faults() - f0);
    if (!digest) continue;
    losses.value(r.loss);
    losses.value(r.aux_loss);
    losses.value(r.grad_norm);
    losses.value(r.lr);
    for (const OpTime& ot : t.timeline().ops) {
      timeline.value(ot.ready);
      timeline.value(ot.begin);
      timeline.value(ot.end);
    }
    // Memory in two parts: what each rank's program holds (weights, gradients, optimizer
    // state, activations), which no worker order changes, and the communication buffers,
    // whose peaks count when a message landed on the host and so follow the order the workers
    // ran in. Events rank by rank (stable: each rank's in its program's order), not in the
    // order the workers happened to emit them.
    for (const MemStats& m : r.memory)
      for (std::size_t c = 0; c < m.current.size(); ++c) {
        Hash& h = c == comm_cat ? comm : memory;
        h.value(m.current[c]);
        h.value(m.peak[c]);
      }
    std::vector<Event> mem = t.memory_events();
    std::stable_sort(mem.begin(), mem.end(), [](const Event& a, const Event& b) { return a.rank < b.rank; });
    for (const Event& e : mem) {
      Hash& h = e.detail == comm_cat ? comm : memory;
      h.value(e.rank);
      h.value(e.id);
      h.value(e.bytes);
      h.value(e.virtual_begin);
    }
    for (auto v : r.router_counts) routing.value(v);
    for (const auto& tr : r.traffic) {  // field by field: the struct has padding
      routing.value(tr.layer);
      routing.value(tr.from);
      routing.value(tr.to);
      routing.value(tr.rows);
    }
  }
  const double cpu_all = cpu_seconds() - cpu0;
  std::printf("cpu_s %.3f (set-up and steps)  peak_rss_mb %.0f\n", cpu_all, peak_rss_mb());
  std::printf("load average: %s at start, %s at end\n", load0.c_str(), load_average().c_str());
  if (digest) {
    Hash weights;
    const std::vector<float> w = t.master_weights();
    weights.bytes(w.data(), w.size() * sizeof(float));
    for (int r = 0; r < t.world(); ++r) {
      const MemStats m = t.tracker(r).stats();
      for (std::size_t c = 0; c < m.current.size(); ++c) (c == comm_cat ? comm : memory).value(m.current[c]);
    }
    std::printf("digest losses %016llx\n", (unsigned long long)losses.h);
    std::printf("digest weights %016llx\n", (unsigned long long)weights.h);
    std::printf("digest timeline %016llx\n", (unsigned long long)timeline.h);
    std::printf("digest memory %016llx\n", (unsigned long long)memory.h);
    std::printf("digest comm_peaks %016llx\n", (unsigned long long)comm.h);
    std::printf("digest routing %016llx\n", (unsigned long long)routing.h);
    std::printf("digest replicas_agree %d\n", t.replicas_agree() ? 1 : 0);
  }
  return 0;
}
