// Emulated matmul / dot / sum: the generic path through reduce() and the public functions;
// the vectorised fp32 matmul path that gives the same bits is in emulate_gemm.cpp.
#include "numerics/emulate.h"

#include "formats/convert.h"
#include "formats/platform.h"
#include "numerics/emulate_detail.h"

namespace numfid {

namespace detail::emulate {

bool same_format(const FormatSpec& x, const FormatSpec& y) { return x == y; }  // the one identity rule (format_spec.h)

Bits finish(const ReductionModel& m, Bits acc_value, std::uint64_t index) {
  RoundOptions o = m.output_rounding;
  o.stream = index;
  return convert(*m.acc.format, *m.output, acc_value, o).bits;
}

std::optional<Bits> addend_in_acc(const ReductionModel& m, const std::optional<MatrixView>& c, std::int64_t index) {
  if (!c) return std::nullopt;
  RoundOptions o = m.acc.rounding;
  o.stream = static_cast<std::uint64_t>(index) | (std::uint64_t{1} << 62);
  return convert(*c->format, *m.acc.format, c->data[static_cast<std::size_t>(index)], o).bits;
}

std::vector<Bits> generic_matmul(const MatrixView& a, const MatrixView& b, const std::optional<MatrixView>& c,
                                 const ReductionModel& m) {
  const std::int64_t M = a.rows, K = a.cols, N = b.cols;
  std::vector<Bits> d(static_cast<std::size_t>(M * N));
  std::vector<Term> terms(static_cast<std::size_t>(K));
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      for (std::int64_t k = 0; k < K; ++k)
        terms[static_cast<std::size_t>(k)] =
            exact_product(*a.format, a.data[static_cast<std::size_t>(i * K + k)], *b.format,
                          b.data[static_cast<std::size_t>(k * N + j)], m.acc.rounding.daz);
      const std::int64_t e = i * N + j;
      d[static_cast<std::size_t>(e)] =
          finish(m, reduce(m.plan, m.acc, terms, addend_in_acc(m, c, e), static_cast<std::uint64_t>(e)),
                 static_cast<std::uint64_t>(e));
    }
  return d;
}

}  // namespace detail::emulate

using namespace detail::emulate;

namespace {

bool representable_in_fp32(const FormatSpec& f) {
  return f.kind == FormatKind::binary_float && f.precision <= 24 && emax(f) <= 127 &&
         emin(f) - (f.precision - 1) >= -149;
}

}  // namespace

bool matmul_fast_path(const ReductionModel& m, const FormatSpec& a, const FormatSpec& b) {
  const RoundOptions& r = m.acc.rounding;
  const bool plan_ok = m.plan.kind == PlanKind::sequential ||
                       (m.plan.kind == PlanKind::blocked && m.plan.inner == InnerOrder::sequential) ||
                       m.plan.kind == PlanKind::splitk;
  // Hardware FMA overflows to ±inf: a saturating accumulator (±max finite) is not its model.
  return plan_ok && same_format(*m.acc.format, fp32) && r.rounding == Rounding::rne && r.overflow == Overflow::ieee &&
         !r.ftz && !r.daz && !m.acc.products_rounded && !m.acc.zero_start && representable_in_fp32(a) && representable_in_fp32(b);
}

std::vector<Bits> emulate_matmul(const MatrixView& a, const MatrixView& b, const std::optional<MatrixView>& c,
                                 const ReductionModel& m) {
  return detail::emulate_matmul_on(BulkPath::automatic, a, b, c, m);
}

std::vector<Bits> emulate_dot_rows(const MatrixView& a, const MatrixView& b, const std::optional<MatrixView>& c,
                                   const ReductionModel& m) {
  const FpEnvGuard guard;  // formats/platform.h: the caller's DAZ/FTZ/rounding mode cannot reach the model
  const std::int64_t R = a.rows, K = a.cols;
  std::vector<Bits> d(static_cast<std::size_t>(R));
  std::vector<Term> terms(static_cast<std::size_t>(K));
  for (std::int64_t r = 0; r < R; ++r) {
    for (std::int64_t k = 0; k < K; ++k) {
      const auto idx = static_cast<std::size_t>(r * K + k);
      terms[static_cast<std::size_t>(k)] = exact_product(*a.format, a.data[idx], *b.format, b.data[idx], m.acc.rounding.daz);
    }
    d[static_cast<std::size_t>(r)] =
        finish(m, reduce(m.plan, m.acc, terms, addend_in_acc(m, c, r), static_cast<std::uint64_t>(r)),
               static_cast<std::uint64_t>(r));
  }
  return d;
}

std::vector<Bits> emulate_sum_axis(const FormatSpec& f, std::span<const Bits> x, std::int64_t outer, std::int64_t len,
                                   std::int64_t inner, const ReductionModel& m) {
  const FpEnvGuard guard;  // formats/platform.h: the caller's DAZ/FTZ/rounding mode cannot reach the model
  std::vector<Bits> d(static_cast<std::size_t>(outer * inner));
  std::vector<Term> terms(static_cast<std::size_t>(len));
  for (std::int64_t e = 0; e < outer * inner; ++e) {
    const std::int64_t o = e / inner, i = e % inner;
    for (std::int64_t k = 0; k < len; ++k)
      terms[static_cast<std::size_t>(k)] = as_term(f, x[static_cast<std::size_t>((o * len + k) * inner + i)], m.acc.rounding.daz);
    d[static_cast<std::size_t>(e)] =
        finish(m, reduce(m.plan, m.acc, terms, std::nullopt, static_cast<std::uint64_t>(e)), static_cast<std::uint64_t>(e));
  }
  return d;
}

std::vector<Bits> emulate_sum(const MatrixView& x, int axis, const ReductionModel& m) {
  // axis 0: [1, rows, cols] (element = column); axis 1: [rows, cols, 1] (element = row).
  return axis == 0 ? emulate_sum_axis(*x.format, x.data, 1, x.rows, x.cols, m)
                   : emulate_sum_axis(*x.format, x.data, x.rows, x.cols, 1, m);
}

}  // namespace numfid
