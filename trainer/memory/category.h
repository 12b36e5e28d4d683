#pragma once
// What a buffer holds, for the per-rank tracking allocator (tracker.h), the memory events
// (events/event.h) and every picture of memory: one list, so the walls, the trace and the
// allocator always mean the same five things.
#include <cstdint>
#include <string_view>

namespace onegpu::trainer {

enum class MemCategory : std::uint8_t { Weights = 0, Gradients, Optimizer, Activations, Communication };
inline constexpr int kMemCategoryCount = 5;
std::string_view mem_category_name(MemCategory c);  // "weights", "gradients", ...

}  // namespace onegpu::trainer
