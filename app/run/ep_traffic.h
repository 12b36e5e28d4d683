#pragma once
// Who travels in expert parallelism: with the experts split over two GPUs (1-8 on GPU 1, 9-16
// on GPU 2) and each GPU reading its own two texts, every token the router sends to an expert on
// the other GPU crosses there and back in every layer. Read from the recorded first step of a
// dp=2 ep=2 run on the fresh story model (app/run/recorded_run.h): its all-to-all rows (Traffic
// events) and the routers' counts (RouterCount events).
#include <string>
#include <vector>

#include "app/live/run_state.h"

namespace onegpu::app {

struct Traffic {
  std::vector<int> crossing[2];  // per layer: token-expert pairs GPU g sends to the other GPU
  std::vector<long long> moved[2];  // the same rows as the step's Traffic events carry them
  int pairs_per_gpu = 0;         // token-expert pairs a GPU routes per layer (tokens × top-k)
  // Not from events: a token of GPU 1's first text routed across, and where (the router's choice
  // asked of the fresh model).
  std::string example_token;
  int example_expert = -1;       // 0-based
};

// The crossings of a recorded step of a two-rank expert split (its Traffic rows and, for the
// pairs per GPU, the first layer's RouterCounts).
Traffic read_traffic(const RunStep& s, int layers, int experts);

// Made once by a job on the app's job runner (app/run/posted.h), on a fresh model of its own:
// the _ready version queues it and returns null until it is made (draw()); the other waits.
const Traffic* story_expert_traffic_ready();
const Traffic& story_expert_traffic();
std::string story_expert_traffic_activity();  // status-bar line while it is queued or runs

}  // namespace onegpu::app
