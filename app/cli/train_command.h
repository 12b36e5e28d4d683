#pragma once
// `onegpu train`, `onegpu predict`, `onegpu sample`: the trainer from the command line.
// Bad input prints one line on stderr and returns 2.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trainer/parallel/parallel_trainer.h"

namespace onegpu::cli {

struct TrainArgs {
  std::string model = "story";
  bool model_given = false;
  int steps = 1000;
  int batch = 4;
  int microbatches = 1;
  std::uint64_t seed = 1;
  int threads = 1;
  std::string device = "cpu";  // cpu, cuda or auto (trainer/device.h resolves it)
  std::string corpus;  // empty: the generated story corpus
  std::string log, save, resume;
  int stop_at = 0;  // stop (and save) after this step, though the schedule spans --steps: the
                    // run resumed from there with the same --steps matches an uninterrupted one
  bool quiet = false;  // no progress line
  // Split over virtual ranks (trainer/parallel): any of these flags runs the parallel trainer.
  int dp = 1, ep = 1, pp = 1, vstages = 1;
  int zero = 0;        // 1: ZeRO-1, the optimizer state split over the copies (ParallelOptions::zero)
  std::string schedule = "1f1b";
  std::string link = "nvlink";
  std::string trace;   // Chrome/Perfetto trace of the last trace_steps steps
  int trace_steps = 50;  // capped so a long run's trace stays openable (~200 bytes an op)
  int seq = 0;         // tokens per text (0: the model's)
  int workers = 0;     // engine threads (0: one per core)
  bool parallel = false;
  std::set<std::string> given;  // flags that appeared on the command line
};
struct PredictArgs {
  std::string resume, prompt;
  int top = 10;
  int tokens = 40;  // sample only
  std::uint64_t seed = 1;
  float temperature = 0.8f;
};

// The split a TrainArgs names, as the parallel trainer takes it (no corpus is read). The Lab
// and `onegpu train` share it, so a configuration is checked by one rule everywhere:
// trainer::parallel_run_config(model_preset(a.model), parallel_options(a)) throws the one line.
trainer::ParallelOptions parallel_options(const TrainArgs& a);

// Fills in what a split run needs and the user did not say: --vstages 2 for the interleaved
// schedule (if the model's layers split over pp x 2), --schedule interleaved for --vstages > 1,
// and --microbatches pp when a pipeline needs more than the default one. Returns one line
// saying what was picked and why ("" when nothing was); throws Error with one line when no
// pick fits (then the user must choose). A flag the user gave (TrainArgs::given) is never
// changed: the plan rules judge it (parallel_run_config). `onegpu train` and the Lab call it.
std::string fill_defaults(TrainArgs& a);

class Flags;
// Registers every flag of `onegpu train` on f, each writing into a. The Lab's options
// (app/options.cpp) take the same list, so a flag added here reaches the Lab too.
void add_train_flags(Flags& f, TrainArgs& a);

// args exclude the sub-command name. Throw onegpu::trainer::Error with a one-line message.
TrainArgs parse_train_args(const std::vector<std::string>& args);
PredictArgs parse_predict_args(const std::vector<std::string>& args, bool sample);

int train_main(int argc, char** argv);
int predict_main(int argc, char** argv);
int sample_main(int argc, char** argv);

}  // namespace onegpu::cli
