#pragma once
// Upper bounds on every size a user or a checkpoint can ask for, and a memory estimate that
// refuses a configuration this machine cannot hold, before anything is allocated.
//
// Why: a size is a request for memory or threads. `--batch 999999999` or a checkpoint whose
// config says n_experts=2147483647 used to grow until the kernel killed the process; with these
// checks it is one line naming the flag (or the checkpoint field) and exit status 2.
//
// The bounds are generous (far beyond the presets) and only stop nonsense; the estimate is what
// stops a large-but-plausible request that does not fit. It is deliberately an over-estimate
// (tests/trainer/train/limits_test.cpp checks it against the tracker's measured peak).
#include <cstdint>
#include <string>

#include "trainer/model/config.h"

namespace onegpu::trainer::limits {

// Command-line and checkpoint bounds (inclusive).
inline constexpr long long kMaxSteps = 1'000'000'000;
inline constexpr long long kMaxBatch = 1'000'000;
inline constexpr long long kMaxThreads = 256;      // --threads, --workers
inline constexpr long long kMaxRanksPerAxis = 4096;  // --dp, --ep, --pp
inline constexpr long long kMaxVstages = 64;
inline constexpr long long kMaxTraceSteps = 100'000;
inline constexpr long long kMaxSeq = 65'536;
inline constexpr long long kMaxEvalRows = 1'000'000;
inline constexpr long long kMaxTop = 1'000'000;     // predict --top
inline constexpr long long kMaxTokens = 1'000'000;  // sample --tokens
inline constexpr long long kMaxPromptBytes = 64ll << 20;
// Model config bounds (checked by ModelConfig::validate, so every checkpoint is held to them).
inline constexpr int kMaxVocab = 1 << 20;
inline constexpr int kMaxDModel = 16384;
inline constexpr int kMaxHeads = 1024;
inline constexpr int kMaxLayers = 512;
inline constexpr int kMaxExperts = 4096;
inline constexpr int kMaxTopK = 64;
inline constexpr int kMaxExpertHidden = 65536;
inline constexpr int kMaxSeqLen = 65536;

// Bytes one rank's model needs before any activation: bf16 weights, fp32 master, gradients
// and two Adam moments (18 bytes a weight).
std::uint64_t weight_bytes(const ModelConfig& c);
// Bytes of activations one microbatch of `rows` texts of `seq` tokens keeps for backward,
// an over-estimate (every cached tensor of every layer, plus logits and their gradient).
std::uint64_t activation_bytes(const ModelConfig& c, std::uint64_t rows, std::uint64_t seq);

// Memory this process may use: physical memory, or the cgroup's limit when lower.
// ONEGPU_MEMORY_LIMIT (bytes) overrides it (tests use it to refuse small configurations).
std::uint64_t memory_budget();

// Throws Error when `need` bytes exceed memory_budget(). `what` says what needs them and
// `hint` which flag to change, e.g. ("--batch 999999 (4 microbatches of ...)", "use a smaller
// --batch or more --microbatches").
void require_memory(std::uint64_t need, const std::string& what, const std::string& hint);

// A resume's last step (`steps`, from --steps) may not lie before the checkpoint's `at`: one
// line naming both, the same for one GPU and a split run.
void require_steps_reach(long long steps, long long at);

// "1.5 GB", "640 MB", "12 KB".
std::string bytes_text(std::uint64_t b);

}  // namespace onegpu::trainer::limits
