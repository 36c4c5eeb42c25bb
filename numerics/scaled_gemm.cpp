// Scaled float GEMM: scale layout and the promotion model (numerics/scaled_gemm.h).
#include "numerics/scaled_gemm.h"

#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "formats/arith.h"
#include "formats/convert.h"
#include "formats/platform.h"
#include "numerics/emulate.h"
#include "numerics/plan.h"

namespace numfid {

namespace {
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
}  // namespace

std::int64_t scale_count(const ScaleBlock& b, std::int64_t outer, std::int64_t k) {
  return ceil_div(outer, b.rows) * ceil_div(k, b.k);
}

double scale_at(const OperandScales& s, bool is_b, std::int64_t outer, std::int64_t k, std::int64_t K,
                std::int64_t outer_size) {
  const std::int64_t ob = outer / s.block.rows, kb = k / s.block.k;
  const std::int64_t index = is_b ? kb * ceil_div(outer_size, s.block.rows) + ob : ob * ceil_div(K, s.block.k) + kb;
  return s.values[static_cast<std::size_t>(index)];
}

namespace {

/// The model's output where its fp32 result is NaN, as the soft-float steps below make it: every
/// NaN an operation of formats/arith.cpp returns is the canonical quiet NaN (nan_result), which
/// each later fma returns again, so after K >= 1 products the result is fp32's canonical NaN
/// cast to the output; with K = 0 nothing is computed and the addend `o` is cast as it is.
Bits model_nan(const ScaledGemmModel& model, std::int64_t K, Bits o, const RoundOptions& oo) {
  return convert(fp32, *model.out, K >= 1 ? round_nan(fp32, false, false).bits : o, oo).bits;
}

/// One output element of the model: the K products of row `ar` and column `bc` (operands in
/// the formats operand_format gives: fa, fb) in chunks, each chunk's partial promoted with the
/// scale product `scale(c0)` of the chunk starting at c0; o starts at `o`; `e` is the element's stream.
template <class ScaleOf>
Bits scaled_element(const ScaledGemmModel& model, const FormatSpec& fa, const Bits* ar, const FormatSpec& fb,
                    const Bits* bc, std::int64_t K, const ScaleOf& scale, Bits o, std::size_t e, bool hardware) {
  if (hardware) {
    // Every step an fp32 fused multiply-add under round to nearest even: the hardware's fmaf
    // (IEEE 754 fusedMultiplyAdd: one rounding of the exact a·b + c, here in numfid's
    // environment — round to nearest, no flush to zero: FpEnvGuard) gives the soft fma's bits,
    // for finite, infinite and subnormal values alike. Only a NaN's sign and payload are the
    // platform's own (x86 makes inf - inf a negative NaN): an element whose result is NaN is
    // the model's NaN (model_nan).
    float acc = std::bit_cast<float>(o.raw);
    for (std::int64_t c0 = 0; c0 < K; c0 += model.chunk) {
      const std::int64_t c1 = std::min(K, c0 + model.chunk);
      float p = 0.0f;
      for (std::int64_t kk = c0; kk < c1; ++kk) p = std::fmaf(std::bit_cast<float>(ar[kk].raw), std::bit_cast<float>(bc[kk].raw), p);
      acc = std::fmaf(static_cast<float>(scale(c0)), p, acc);
    }
    RoundOptions oo = model.out_rounding;
    oo.stream = e;
    if (std::isnan(acc)) return model_nan(model, K, o, oo);
    return convert(fp32, *model.out, Bits{std::bit_cast<std::uint32_t>(acc)}, oo).bits;
  }
  static const ReductionPlan sequential{};
  AccumulatorModel partial;
  if (!model.block_fma) {
    partial.format = model.acc;
    partial.rounding.rounding = model.acc_rounding;
    partial.zero_start = true;
  }
  std::vector<Term> terms;
  for (std::int64_t c0 = 0; c0 < K; c0 += model.chunk) {
    const std::int64_t len = std::min(model.chunk, K - c0);
    Bits p32;
    if (model.block_fma) {
      const BlockFmaModel& m = *model.block_fma;
      const Result r = block_fma_dot(m, {ar + c0, static_cast<std::size_t>(len)}, {bc + c0, static_cast<std::size_t>(len)},
                                     zero(*m.output, false));
      p32 = convert(*m.output, fp32, r.bits).bits;
    } else {
      // p = rnd(p + a·b) from +0, each product exact (fused) whatever the operands' formats: the
      // plain plans' evaluator (numerics/plan.h) on exact products, as `emulate --plan
      // sequential --zero-start` sums them. (Operands converted into the accumulator first
      // would overflow or flush where it is narrower than them: bf16 1e10 in fp16 is inf, and
      // inf·0 NaN where the product is 0.)
      terms.resize(static_cast<std::size_t>(len));
      for (std::int64_t kk = 0; kk < len; ++kk)
        terms[static_cast<std::size_t>(kk)] = exact_product(fa, ar[c0 + kk], fb, bc[c0 + kk]);
      const Bits p = reduce(sequential, partial, terms, std::nullopt, e);
      p32 = convert(*model.acc, fp32, p).bits;
    }
    // The scales of this chunk (one block of A and of B), multiplied in fp32.
    const auto sf = static_cast<float>(scale(c0));  // 48 bits: exact
    std::uint32_t sbits = 0;
    std::memcpy(&sbits, &sf, sizeof sbits);
    o = fma(fp32, Bits{sbits}, p32, o).bits;
  }
  RoundOptions oo = model.out_rounding;
  oo.stream = e;
  return convert(fp32, *model.out, o, oo).bits;
}

void check_chunk(const ScaledGemmModel& model) {
  if (model.chunk <= 0) throw std::invalid_argument("scaled_gemm_emulate: the chunk must be positive");
}

/// The patterns of `x` converted from `from` into `to` (round to nearest): through a table of
/// every pattern where `from` has at most 16 bits and `x` holds more values than the table.
std::vector<Bits> converted(const FormatSpec& from, const FormatSpec& to, std::span<const Bits> x) {
  if (from == to) return {x.begin(), x.end()};
  std::vector<Bits> out(x.size());
  if (from.bits <= 16 && (std::size_t{1} << from.bits) < x.size()) {
    std::vector<Bits> table(std::size_t{1} << from.bits);
    for (std::size_t p = 0; p < table.size(); ++p) table[p] = convert(from, to, Bits{static_cast<std::uint32_t>(p)}).bits;
    for (std::size_t e = 0; e < x.size(); ++e) out[e] = x[e].raw < table.size() ? table[x[e].raw] : convert(from, to, x[e]).bits;
  } else {
    for (std::size_t e = 0; e < x.size(); ++e) out[e] = convert(from, to, x[e]).bits;
  }
  return out;
}

std::atomic<bool> soft_float_only{false};

/// Whether scaled_element may take its hardware path: partials in fp32 under round to nearest
/// even (a plain accumulator; a block-FMA model is its own arithmetic), operands in fp32.
bool hardware_fp32(const ScaledGemmModel& model) {
  return !soft_float_only.load(std::memory_order_relaxed) && !model.block_fma && model.acc != nullptr && *model.acc == fp32 &&
         model.acc_rounding == Rounding::rne;
}

/// The format scaled_element reads an operand in (B: b_side): the block-FMA unit's input (B's
/// own in a mixed fp8 unit), fp32 for the hardware path (every operand format of at most 16 bits
/// is a subset), else the operand's own (the products are formed exactly from it).
const FormatSpec& operand_format(const ScaledGemmModel& model, const FormatSpec& f, bool hardware, bool b_side) {
  if (model.block_fma) return b_side ? model.block_fma->input_b_format() : *model.block_fma->input;
  return hardware ? fp32 : f;
}

}  // namespace

std::vector<Bits> scaled_gemm_emulate(const FormatSpec& fa, std::span<const Bits> a, const OperandScales& sa,
                                      const FormatSpec& fb, std::span<const Bits> b, const OperandScales& sb,
                                      std::int64_t M, std::int64_t K, std::int64_t N, const ScaledGemmModel& model,
                                      std::span<const Bits> addend) {
  const FpEnvGuard env;  // the float cast of sa·sb below is hardware arithmetic
  check_chunk(model);
  const bool hardware = hardware_fp32(model) && M * N * K != 0;
  const FormatSpec &ia = operand_format(model, fa, hardware, false), &ib = operand_format(model, fb, hardware, true);
  // Operands in the format the element reads (exact for the narrow inputs into fp32 / the unit's input).
  const std::vector<Bits> av = converted(fa, ia, a), bv = converted(fb, ib, b);
  std::vector<Bits> out(static_cast<std::size_t>(M * N));
  if (!hardware) {  // every element in soft float, B's columns contiguous
    std::vector<Bits> bt(b.size());
    for (std::int64_t kk = 0; kk < K; ++kk)
      for (std::int64_t j = 0; j < N; ++j) bt[static_cast<std::size_t>(j * K + kk)] = bv[static_cast<std::size_t>(kk * N + j)];
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        const std::size_t e = static_cast<std::size_t>(i * N + j);
        const auto scale = [&](std::int64_t c0) { return scale_at(sa, false, i, c0, K, M) * scale_at(sb, true, j, c0, K, N); };
        out[e] = scaled_element(model, ia, av.data() + i * K, ib, bt.data() + j * K, K, scale,
                                addend.empty() ? zero(fp32, false) : addend[e], e, false);
      }
    return out;
  }
  // Each chunk's partials for all elements at once: detail::matmul_fp32 (the vectorised
  // emulation kernel, numerics/emulate.h) sums each element sequentially in k with fp32 fused
  // multiply-adds from D's value — here +0, as the model's partial starts — the chain
  // scaled_element runs. Then each promotion o = fmaf(fp32(sa·sb), p, o) per element; an
  // element ending in NaN is the model's NaN (model_nan: the platform's NaN is not the model's).
  // Buffers each written in full before they are read (no zeroing pass): A's chunk, B as
  // floats, the partials, the promoted sums; the chunk's scales of A's rows and B's columns.
  const auto floats = [](std::int64_t n) { return std::unique_ptr<float[]>(new float[static_cast<std::size_t>(n)]); };
  const std::unique_ptr<float[]> ac = floats(M * std::min(model.chunk, K)), bf = floats(K * N), p = floats(M * N),
                                 o = floats(M * N);
  std::vector<double> row_scale(static_cast<std::size_t>(M)), col_scale(static_cast<std::size_t>(N));
  for (std::size_t x = 0; x < bv.size(); ++x) bf[x] = std::bit_cast<float>(bv[x].raw);  // K × N, as B
  for (std::size_t e = 0; e < out.size(); ++e) o[e] = addend.empty() ? 0.0f : std::bit_cast<float>(addend[e].raw);
  for (std::int64_t c0 = 0; c0 < K; c0 += model.chunk) {
    const std::int64_t len = std::min(model.chunk, K - c0);
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t kk = 0; kk < len; ++kk)
        ac[static_cast<std::size_t>(i * len + kk)] = std::bit_cast<float>(av[static_cast<std::size_t>(i * K + c0 + kk)].raw);
    std::fill(p.get(), p.get() + M * N, 0.0f);
    detail::matmul_fp32(ac.get(), bf.get() + c0 * N, p.get(), M, len, N, 0, true, BulkPath::automatic);
    for (std::int64_t i = 0; i < M; ++i) row_scale[static_cast<std::size_t>(i)] = scale_at(sa, false, i, c0, K, M);
    for (std::int64_t j = 0; j < N; ++j) col_scale[static_cast<std::size_t>(j)] = scale_at(sb, true, j, c0, K, N);
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        const std::size_t e = static_cast<std::size_t>(i * N + j);
        const auto sf = static_cast<float>(row_scale[static_cast<std::size_t>(i)] * col_scale[static_cast<std::size_t>(j)]);
        o[e] = std::fmaf(sf, p[e], o[e]);
      }
  }
  RoundOptions oo = model.out_rounding;
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      const std::size_t e = static_cast<std::size_t>(i * N + j);
      oo.stream = e;
      out[e] = std::isnan(o[e]) ? model_nan(model, K, Bits{}, oo)
                                : convert(fp32, *model.out, Bits{std::bit_cast<std::uint32_t>(o[e])}, oo).bits;
    }
  return out;
}

std::vector<Bits> scaled_dot_emulate(const FormatSpec& fa, std::span<const Bits> a, const OperandScales& sa,
                                     const FormatSpec& fb, std::span<const Bits> b, const OperandScales& sb,
                                     std::int64_t R, std::int64_t K, const ScaledGemmModel& model,
                                     std::span<const Bits> addend) {
  const FpEnvGuard env;
  check_chunk(model);
  const bool hardware = hardware_fp32(model);
  const FormatSpec &ia = operand_format(model, fa, hardware, false), &ib = operand_format(model, fb, hardware, true);
  const std::vector<Bits> av = converted(fa, ia, a), bv = converted(fb, ib, b);
  std::vector<Bits> out(static_cast<std::size_t>(R));
  for (std::int64_t r = 0; r < R; ++r) {
    const auto e = static_cast<std::size_t>(r);
    // Both operands R×K: B's scales in A's orientation (rows of B, then K).
    const auto scale = [&](std::int64_t c0) { return scale_at(sa, false, r, c0, K, R) * scale_at(sb, false, r, c0, K, R); };
    out[e] = scaled_element(model, ia, av.data() + r * K, ib, bv.data() + r * K, K, scale,
                            addend.empty() ? zero(fp32, false) : addend[e], e, hardware);
  }
  return out;
}

bool scaled_emulation_vectorised(const ScaledGemmModel& model) { return hardware_fp32(model); }

namespace detail {
void set_scaled_emulation_soft_float(bool soft) { soft_float_only.store(soft, std::memory_order_relaxed); }
}  // namespace detail

MxOperand quantize_mx_operand(const MxFormat& f, std::span<const Bits> x, const FormatSpec& from, std::int64_t rows,
                              std::int64_t cols, bool k_is_rows, std::size_t block, const RoundOptions& o) {
  if (block == 0) throw std::invalid_argument("quantize_mx_operand: the block size must be positive");
  if (static_cast<std::int64_t>(x.size()) != rows * cols)
    throw std::invalid_argument("quantize_mx_operand: the data does not hold rows × cols values");
  const auto b = static_cast<std::int64_t>(block);
  MxOperand out;
  out.elements.resize(x.size());
  out.scale_rows = k_is_rows ? ceil_div(rows, b) : rows;
  out.scale_cols = k_is_rows ? cols : ceil_div(cols, b);
  out.scales.resize(static_cast<std::size_t>(out.scale_rows * out.scale_cols));
  // One line along K at a time: a row of A or a column of B.
  const std::int64_t lines = k_is_rows ? cols : rows, len = k_is_rows ? rows : cols;
  std::vector<Bits> line(static_cast<std::size_t>(lines > 0 ? len : 0));  // (0, 4e9): no 16 GB line for no line
  for (std::int64_t l = 0; l < lines; ++l) {
    const auto at = [&](std::int64_t t) { return static_cast<std::size_t>(k_is_rows ? t * cols + l : l * cols + t); };
    for (std::int64_t t = 0; t < len; ++t) line[static_cast<std::size_t>(t)] = x[at(t)];
    RoundOptions lo = o;
    lo.stream = o.stream + static_cast<std::uint64_t>(l * len);  // value t of line l: stream l·len + t
    const MxArray q = quantize_mx(f, line, from, block, lo);
    out.status = out.status | q.status;
    for (std::int64_t t = 0; t < len; ++t) out.elements[at(t)] = q.elements[static_cast<std::size_t>(t)];
    for (std::int64_t s = 0; s < ceil_div(len, b); ++s)
      out.scales[static_cast<std::size_t>(k_is_rows ? s * cols + l : l * out.scale_cols + s)] = q.scales[static_cast<std::size_t>(s)];
  }
  return out;
}

}  // namespace numfid
