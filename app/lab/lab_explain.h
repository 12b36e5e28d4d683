#pragma once
// Words for the Lab: what an op is called and what that kind of op does, in one plain line
// for someone who has never seen a trainer.
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
// The colour of a kind of op in every timeline of the Lab (lab_timeline.cpp).
glm::vec4 kind_colour(trainer::EventKind k);

}  // namespace onegpu::app
