// Helpers shared by the quantised-GEMM conformance suites (quant_conformance.cpp: integer,
// scaled_conformance.cpp: scaled float; internal, not installed).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "formats/error.h"
#include "io/tensor.h"
#include "suites/conformance.h"
#include "suites/generate_detail.h"

namespace numfid::testing::detail {

inline std::string trimmed(std::string_view s) {
  const auto b = s.find_first_not_of(' ');
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b));
}

inline std::string case_text(std::string_view kind, const MatmulCase& c, std::string_view claim) {
  return fmt::format("{} case {} (M={}, K={}, N={}, data {}, tile {}, seed {:#x}), claim {}", kind, c.name, c.m, c.k,
                     c.n, data_kind_name(c.data), c.tile, c.seed, trimmed(claim));
}

/// InputError naming the case unless the kernel returned C of the claim's format and shape.
inline void expect_output(const TensorData& out, const FormatSpec& fo, const MatmulCase& c, const std::string& what) {
  if (out.format->name != fo.name || out.shape != std::vector<std::int64_t>{c.m, c.n})
    throw InputError(fmt::format("{}: the kernel returned {} {}, the claim says {} [{}, {}]", what, out.format->name,
                                 shape_string(out.shape), fo.name, c.m, c.n));
}

}  // namespace numfid::testing::detail
