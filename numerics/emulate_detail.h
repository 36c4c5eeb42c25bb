// Internals of the emulated ops shared by their source files (emulate.cpp: the generic path
// through reduce() and the public functions; emulate_gemm.cpp: the vectorised fp32 matmul):
// the output cast, the addend in the accumulator and the generic matmul.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "numerics/emulate.h"

namespace numfid::detail::emulate {

/// True if x and y are the same format (the one identity rule, format_spec.h).
bool same_format(const FormatSpec& x, const FormatSpec& y);

/// An accumulator value converted into the model's output format, stochastic stream `index`.
Bits finish(const ReductionModel& m, Bits acc_value, std::uint64_t index);

/// Element `index` of C converted or rounded into the accumulator format; nullopt without C.
std::optional<Bits> addend_in_acc(const ReductionModel& m, const std::optional<MatrixView>& c, std::int64_t index);

/// emulate_matmul through reduce(), element by element: the path for every model.
std::vector<Bits> generic_matmul(const MatrixView& a, const MatrixView& b, const std::optional<MatrixView>& c,
                                 const ReductionModel& m);

}  // namespace numfid::detail::emulate
