#pragma once
// Words for the Lab: what an op is called and what that kind of op does, in one plain line
// for someone who has never seen a trainer.
#include <cstdint>
#include <string>

#include <glm/vec4.hpp>

#include "app/live/run_state.h"
#include "trainer/plan/plan.h"

namespace onegpu::app {

// "GPU 3 · forward · layers 1–2 · microbatch 2" (ranks are counted from 1 on screen).
std::string op_title(const trainer::Op& op);
// One sentence on what this kind of op does.
std::string op_explanation(const trainer::Op& op, const trainer::Plan& plan);
// A token of the run's tokenizer as text a label can show (newlines escaped; "?" if unknown).
std::string token_text(const LiveRun& run, std::int64_t id);
// An op's name short enough to sit inside its span: "F 3", "B 1–2 mb2", "send →4", "update".
std::string op_short(const trainer::Op& op, int microbatches);
// A span's kind as a short word ("forward", "all-reduce", ...).
std::string span_kind(const OpSpan& s);
// The Compare verdict's words on where the live step and its branch began (steps from 0, shown
// from 1): `before` is the fingerprint of the live weights the step began from and
// `branch_before` the branch's (0: not taken: a big run's steps carry none), `first` the first
// step the branch trained (from the live run's state kept before it). "" when nothing is known.
std::string compare_began_words(int step, std::uint64_t before, std::uint64_t branch_before, int first);
// The colour of a kind of op in every timeline of the Lab (lab_timeline.cpp).
glm::vec4 kind_colour(trainer::EventKind k);

}  // namespace onegpu::app
