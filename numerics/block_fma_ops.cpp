// Block-FMA matmul and row-wise dot (block_fma_ops.h).
#include "numerics/block_fma_ops.h"

#include "formats/convert.h"
#include "formats/platform.h"

namespace numfid {

namespace {

Bits addend(const BlockFmaModel& m, const std::optional<MatrixView>& c, std::size_t e) {
  return c ? convert(*c->format, *m.output, c->data[e]).bits : zero(*m.output, false);
}

/// The unit's result stored into `out`: a conversion when the formats differ; where they are
/// the same the store is the identity, so a NaN keeps the unit's own pattern (0x7fffffff on
/// the CUDA presets: BlockFmaModel::nan) instead of the conversion's canonical one.
Bits store(const BlockFmaModel& m, const FormatSpec& out, Bits v, const RoundOptions& o) {
  if (out == *m.output && decode(out, v).cls == FpClass::nan) return v;
  return convert(*m.output, out, v, o).bits;
}

}  // namespace

std::vector<Bits> block_fma_matmul(const BlockFmaModel& m, const MatrixView& a, const MatrixView& b,
                                   const std::optional<MatrixView>& c, const FormatSpec& out, RoundOptions o) {
  const FpEnvGuard guard;  // formats/platform.h
  const std::int64_t M = a.rows, K = a.cols, N = b.cols;
  // Columns of B as rows: each dot reads two contiguous spans.
  std::vector<Bits> bt(b.data.size());
  for (std::int64_t k = 0; k < K; ++k)
    for (std::int64_t j = 0; j < N; ++j) bt[static_cast<std::size_t>(j * K + k)] = b.data[static_cast<std::size_t>(k * N + j)];
  const auto row = [K](std::span<const Bits> v, std::int64_t r) {
    return v.subspan(static_cast<std::size_t>(r * K), static_cast<std::size_t>(K));
  };
  std::vector<Bits> d(static_cast<std::size_t>(M * N));
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      const auto e = static_cast<std::size_t>(i * N + j);
      o.stream = e;
      d[e] = store(m, out, block_fma_dot(m, row(a.data, i), row(bt, j), addend(m, c, e)).bits, o);
    }
  return d;
}

std::vector<Bits> block_fma_dot_rows(const BlockFmaModel& m, const MatrixView& a, const MatrixView& b,
                                     const std::optional<MatrixView>& c, const FormatSpec& out, RoundOptions o) {
  const FpEnvGuard guard;  // formats/platform.h
  const std::int64_t R = a.rows, K = a.cols;
  std::vector<Bits> d(static_cast<std::size_t>(R));
  for (std::int64_t r = 0; r < R; ++r) {
    const auto e = static_cast<std::size_t>(r);
    const auto span = [&](std::span<const Bits> v) {
      return v.subspan(static_cast<std::size_t>(r * K), static_cast<std::size_t>(K));
    };
    o.stream = e;
    d[e] = store(m, out, block_fma_dot(m, span(a.data), span(b.data), addend(m, c, e)).bits, o);
  }
  return d;
}

}  // namespace numfid
