#pragma once
// Who travels in expert parallelism: with the experts split over two GPUs (1-8 on GPU 1, 9-16
// on GPU 2) and each GPU reading its own two texts, every token the router sends to an expert on
// the other GPU crosses there and back in every layer. Counted from the router's real choices
// on the fresh story model.
#include <string>
#include <vector>

namespace onegpu::app {

struct Traffic {
  std::vector<int> crossing[2];  // per layer: token-expert pairs GPU g sends to the other GPU
  std::vector<long long> moved[2];  // the same, as counted inside the dp=2 ep=2 engine's all-to-all
  int pairs_per_gpu = 0;         // token-expert pairs a GPU routes per layer (tokens × top-k)
  std::string example_token;     // a token of GPU 1's first text routed across, and where
  int example_expert = -1;       // 0-based
};

// Made once by a job on the app's job runner (app/run/posted.h), on a fresh model of its own:
// the _ready version queues it and returns null until it is made (draw()); the other waits.
const Traffic* story_expert_traffic_ready();
const Traffic& story_expert_traffic();
std::string story_expert_traffic_activity();  // status-bar line while it is queued or runs

}  // namespace onegpu::app
