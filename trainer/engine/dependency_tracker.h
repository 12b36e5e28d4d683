#pragma once
// Which ops of a plan may run now. Single-threaded bookkeeping shared by the simulator
// (virtual_clock.h) and the engine (engine.h, under its lock), so both follow one rule:
// an op is ready when it is at the head of its rank's program and
//   - a Recv: its matching Send has completed (sends are eager);
//   - a collective: every member rank has reached its op for that collective;
//   - anything else: nothing more.
// A collective becomes one task (all members run and complete together).
#include <cstdint>
#include <string>
#include <vector>

#include "trainer/plan/plan.h"

namespace onegpu::trainer {

struct Task {
  std::uint32_t index = 0;  // op id, or collective index
  bool collective = false;
  bool operator==(const Task&) const = default;
};

class DependencyTracker {
 public:
  explicit DependencyTracker(const Plan& plan);

  // Forgets all progress (keeps the memory).
  void reset();
  // Appends the tasks ready at the start.
  void start(std::vector<Task>& ready);
  // Marks a task done and appends the tasks it made ready.
  void complete(const Task& task, std::vector<Task>& ready);

  bool finished() const { return ranks_done_ == static_cast<int>(cursor_.size()); }
  std::size_t ops_done() const { return ops_done_; }
  bool op_done(std::uint32_t id) const { return done_[id] != 0; }
  // One line per stuck rank (at most `limit`): what it waits for. For deadlock reports.
  std::string describe_stuck(int limit = 8) const;

 private:
  void advance(int rank, std::vector<Task>& ready);

  const Plan& plan_;
  std::vector<std::size_t> cursor_;       // per rank: index of its next op in its program
  std::vector<std::uint8_t> done_;        // per op
  std::vector<std::int32_t> waiting_recv_;  // per send op: rank whose head is its recv, or -1
  std::vector<std::int32_t> arrived_;     // per collective: members at it
  std::size_t ops_done_ = 0;
  int ranks_done_ = 0;
};

}  // namespace onegpu::trainer
