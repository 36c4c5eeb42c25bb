// libFuzzer target: the reduction plan text parser and ReductionPlan::roundings (see
// docs/io.md, "Fuzzing"). Input: 8 bytes of K (little-endian, sign bit cleared), then the
// plan text. parse must never throw; an accepted plan must print as text that parses to
// the same plan, and its count must be defined for K (no overflow, no division by zero:
// splitk(2^63 - 1) once divided by zero); a tree plan sums its leaves' count of ones exactly.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "numerics/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace numfid;
  std::uint64_t raw = 0;
  const std::size_t head = size < 8 ? size : 8;
  for (std::size_t i = 0; i < head; ++i) raw |= static_cast<std::uint64_t>(data[i]) << (8 * i);
  const auto k = static_cast<std::int64_t>(raw & 0x7fff'ffff'ffff'ffffULL);
  const std::string_view text(reinterpret_cast<const char*>(data + head), size - head);
  std::string err;
  const auto plan = ReductionPlan::parse(text, &err);
  if (!plan) {
    fuzz::require(!err.empty());
    return 0;
  }
  fuzz::require(plan->param >= 0 && plan->param <= max_plan_parameter);
  const auto again = ReductionPlan::parse(plan->text());
  fuzz::require(again && *again == *plan);
  const std::int64_t n = plan->roundings(k, false);
  const std::int64_t with_c = plan->roundings(k, true);
  fuzz::require(n >= 0);
  fuzz::require(k == 0 ? with_c == 0 : with_c == n + 1);
  // Every path but strided's lane tree (log2 L additions of lanes, empty ones included) has
  // at most K - 1 roundings: each rounding joins two partial sums.
  if (plan->kind != PlanKind::strided && k > 0) fuzz::require(n <= k - 1);
  // A tree plan is evaluated over its own leaves: K ones sum to K exactly (K <= 2^16 < 2^24).
  if (plan->kind == PlanKind::tree) {
    const auto leaves = static_cast<std::size_t>(std::count_if(plan->tree.begin(), plan->tree.end(), [](std::int32_t x) { return x >= 0; }));
    const std::vector<Term> ones(leaves, as_term(fp32, Bits{0x3f800000u}));
    fuzz::require(reduce(*plan, AccumulatorModel{}, ones).raw == std::bit_cast<std::uint32_t>(static_cast<float>(leaves)));
  }
  return 0;
}
