// Tensor Engine + PSUM evaluation, built on the plan evaluator for the in-array sums.
#include "numerics/tensor_engine.h"

#include <bit>

#include "formats/arith.h"
#include "formats/convert.h"
#include "formats/platform.h"

namespace numfid {

std::int64_t TensorEngineModel::roundings(std::int64_t k, bool has_addend) const {
  if (k <= 0) return 0;
  const std::int64_t per = double_row ? 2 * tile_k : tile_k;
  const std::int64_t in_tile = std::min(per, k);
  const std::int64_t rows = double_row ? (in_tile + 1) / 2 : in_tile;
  std::int64_t inner = inner_order == PlanKind::pairwise ? std::bit_width(static_cast<std::uint64_t>(rows - 1)) : rows - 1;
  if (double_row) inner += 1;  // the pair sum
  const std::int64_t instructions = ceil_div_nonnegative(k, per);  // k + per - 1 overflows near 2^63
  return inner + instructions - 1 + (has_addend ? 1 : 0);
}

namespace {

std::vector<Bits> cast_operands(const TensorEngineModel& te, const MatrixView& m, std::vector<Bits>& store,
                                const FormatSpec*& fmt) {
  fmt = m.format;
  if (!te.autocast || *te.autocast == *m.format) return {};
  RoundOptions o;
  o.rounding = te.autocast_rounding;
  o.seed = te.array_acc.rounding.seed;  // the run's seed (emulate --seed), as every other rounding of the model
  o.sr_bits = te.array_acc.rounding.sr_bits;
  store.resize(m.data.size());
  for (std::size_t i = 0; i < store.size(); ++i) {
    o.stream = i;
    store[i] = convert(*m.format, *te.autocast, m.data[i], o).bits;
  }
  fmt = te.autocast;
  return store;
}

}  // namespace

Bits tensor_engine_sum(const TensorEngineModel& te, std::span<const Term> products, std::optional<Bits> start,
                       std::uint64_t stream, std::vector<Term>& terms) {
  const auto K = static_cast<std::int64_t>(products.size());
  const std::int64_t per = te.double_row ? 2 * te.tile_k : te.tile_k;
  ReductionPlan inner;
  inner.kind = te.inner_order;
  std::optional<Bits> run = start;
  std::uint64_t instr = 0;
  for (std::int64_t k0 = 0; k0 < K; k0 += per, ++instr) {
    const std::int64_t len = std::min(per, K - k0);
    std::span<const Term> col = products.subspan(static_cast<std::size_t>(k0), static_cast<std::size_t>(len));
    if (te.double_row) {
      // Row r of the array holds products r and r + tile_k of the instruction: their sum
      // enters the column (assumed pairing; the docs only say 256 rows are contracted).
      const std::span<const Term> instruction = col;
      terms.clear();
      const std::size_t half = static_cast<std::size_t>(te.tile_k);
      for (std::size_t r = 0; r < std::min(half, instruction.size()); ++r) {
        if (r + half < instruction.size()) {
          const Term pair[2] = {instruction[r], instruction[r + half]};
          const Bits s = reduce({}, te.array_acc, pair, std::nullopt, (stream << 20) ^ (instr << 8) ^ r);
          terms.push_back(as_term(*te.array_acc.format, s));
        } else {
          terms.push_back(instruction[r]);
        }
      }
      col = terms;
    }
    const Bits tile = reduce(inner, te.array_acc, col, std::nullopt, (stream << 20) ^ (instr << 8) ^ 0xff);
    // Into PSUM (program order): the first instruction writes, the others accumulate.
    Bits t = tile;
    if (*te.array_acc.format != *te.psum.format) {
      RoundOptions o = te.psum.rounding;
      o.stream = stream;
      t = convert(*te.array_acc.format, *te.psum.format, tile, o).bits;
    }
    if (run) {
      RoundOptions o = te.psum.rounding;
      o.stream = (stream << 20) ^ instr;
      run = add(*te.psum.format, *run, t, o).bits;
    } else {
      run = t;
    }
  }
  return run ? *run : zero(*te.psum.format, false);
}

namespace {

/// One output element: Σ_k a[k·sa]·b[k·sb] (+ c) through the PE array and PSUM, cast out.
/// Every stochastic rounding of the element draws from streams derived from `stream` (the
/// element's index in the output), so matmul and row-wise dot agree for the same index.
Bits te_element(const TensorEngineModel& te, const FormatSpec& fa, std::span<const Bits> a, std::size_t sa,
                const FormatSpec& fb, std::span<const Bits> b, std::size_t sb, std::int64_t K, const FormatSpec* fc,
                std::optional<Bits> c, std::uint64_t stream, std::vector<Term>& products, std::vector<Term>& terms) {
  std::optional<Bits> start;
  if (c) {
    RoundOptions o = te.psum.rounding;
    o.stream = stream;
    start = convert(*fc, *te.psum.format, *c, o).bits;
  }
  products.clear();
  for (std::int64_t k = 0; k < K; ++k)
    products.push_back(exact_product(fa, a[static_cast<std::size_t>(k) * sa], fb, b[static_cast<std::size_t>(k) * sb],
                                     te.array_acc.rounding.daz));
  const Bits run = tensor_engine_sum(te, products, start, stream, terms);
  RoundOptions o = te.output_rounding;
  o.stream = stream;
  return convert(*te.psum.format, *te.output, run, o).bits;
}

/// An operand as the array sees it: after the compiler's auto-cast, if any.
struct Operand {
  std::vector<Bits> store;
  const FormatSpec* format = nullptr;
  std::span<const Bits> data;
  Operand(const TensorEngineModel& te, const MatrixView& m) {
    cast_operands(te, m, store, format);
    data = store.empty() ? m.data : std::span<const Bits>(store);
  }
  Operand(const Operand&) = delete;  // `data` may point into `store`
  Operand& operator=(const Operand&) = delete;
};

}  // namespace

std::vector<Bits> tensor_engine_matmul(const TensorEngineModel& te, const MatrixView& a_in, const MatrixView& b_in,
                                       const std::optional<MatrixView>& c) {
  const FpEnvGuard guard;  // formats/platform.h: the caller's DAZ/FTZ/rounding mode cannot reach the model
  const Operand A(te, a_in), B(te, b_in);
  const FormatSpec *fa = A.format, *fb = B.format;
  const std::span<const Bits> a = A.data, b = B.data;
  const std::int64_t M = a_in.rows, K = a_in.cols, N = b_in.cols;
  std::vector<Bits> d(static_cast<std::size_t>(M * N));
  std::vector<Term> products, terms;
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      const auto e = static_cast<std::size_t>(i * N + j);
      const std::optional<Bits> ce = c ? std::optional<Bits>(c->data[e]) : std::nullopt;
      d[e] = te_element(te, *fa, a.subspan(static_cast<std::size_t>(i * K)), 1, *fb, b.subspan(static_cast<std::size_t>(j)),
                        static_cast<std::size_t>(N), K, c ? c->format : nullptr, ce, e, products, terms);
    }
  return d;
}

std::vector<Bits> tensor_engine_dot_rows(const TensorEngineModel& te, const MatrixView& a_in, const MatrixView& b_in,
                                         const std::optional<MatrixView>& c) {
  const FpEnvGuard guard;  // formats/platform.h: the caller's DAZ/FTZ/rounding mode cannot reach the model
  const Operand A(te, a_in), B(te, b_in);
  const FormatSpec *fa = A.format, *fb = B.format;
  const std::span<const Bits> a = A.data, b = B.data;
  const std::int64_t R = a_in.rows, K = a_in.cols;
  std::vector<Bits> d(static_cast<std::size_t>(R));
  std::vector<Term> products, terms;
  for (std::int64_t r = 0; r < R; ++r) {
    const auto e = static_cast<std::size_t>(r);
    const std::optional<Bits> ce = c ? std::optional<Bits>(c->data[e]) : std::nullopt;
    d[e] = te_element(te, *fa, a.subspan(static_cast<std::size_t>(r * K)), 1, *fb, b.subspan(static_cast<std::size_t>(r * K)),
                      1, K, c ? c->format : nullptr, ce, e, products, terms);
  }
  return d;
}

}  // namespace numfid
