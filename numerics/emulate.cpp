// Emulated matmul / dot / sum: a generic path through reduce() and a vectorised fp32 path.
#include "numerics/emulate.h"

#include <cmath>
#include <cstring>

#include "formats/convert.h"

namespace numfid {

namespace {

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

bool representable_in_fp32(const FormatSpec& f) {
  return f.kind == FormatKind::binary_float && f.precision <= 24 && emax(f) <= 127 &&
         emin(f) - (f.precision - 1) >= -149;
}

float as_float(const FormatSpec& f, Bits x) { return static_cast<float>(to_double(f, x)); }

std::uint32_t float_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

/// One row block of the fp32 fast path: rows [i0, i1) of D, every column, sequential in k
/// within tiles of T, tile sums folded in order. fmaf(a, b, s) is exactly fl(s + a·b): the
/// fused product and one round-to-nearest, which is the model (IEEE 754 fusedMultiplyAdd).
/// A sum starts from -0 so that fl(-0 + p) = p exactly, zero signs included.
template <int Dummy>
void fast_rows(const float* a, const float* b, const float* c, float* d, std::int64_t k, std::int64_t n,
               std::int64_t tile, std::int64_t i0, std::int64_t i1) {
  std::vector<float> part(static_cast<std::size_t>(n));
  for (std::int64_t i = i0; i < i1; ++i) {
    float* out = d + i * n;
    const float* arow = a + i * k;
    bool have_run = c != nullptr;
    if (c) std::memcpy(out, c + i * n, static_cast<std::size_t>(n) * sizeof(float));
    for (std::int64_t k0 = 0; k0 < k; k0 += tile) {
      const std::int64_t k1 = std::min(k, k0 + tile);
      // Sequential plan without a tile boundary: accumulate straight into the output row.
      float* acc = (!have_run || tile >= k) ? out : part.data();
      const bool fresh = acc != out || !have_run;
      if (fresh)
        for (std::int64_t j = 0; j < n; ++j) acc[j] = -0.0f;
      for (std::int64_t kk = k0; kk < k1; ++kk) {
        const float av = arow[kk];
        const float* brow = b + kk * n;
#pragma GCC ivdep
        for (std::int64_t j = 0; j < n; ++j) acc[j] = std::fma(av, brow[j], acc[j]);
      }
      if (acc != out)
        for (std::int64_t j = 0; j < n; ++j) out[j] = out[j] + acc[j];
      have_run = true;
    }
  }
}

using FastFn = void (*)(const float*, const float*, const float*, float*, std::int64_t, std::int64_t, std::int64_t,
                        std::int64_t, std::int64_t);

__attribute__((target("avx512f,fma"))) void fast_avx512(const float* a, const float* b, const float* c, float* d,
                                                         std::int64_t k, std::int64_t n, std::int64_t t,
                                                         std::int64_t i0, std::int64_t i1) {
  fast_rows<0>(a, b, c, d, k, n, t, i0, i1);
}
__attribute__((target("avx2,fma"))) void fast_avx2(const float* a, const float* b, const float* c, float* d,
                                                    std::int64_t k, std::int64_t n, std::int64_t t, std::int64_t i0,
                                                    std::int64_t i1) {
  fast_rows<1>(a, b, c, d, k, n, t, i0, i1);
}
void fast_portable(const float* a, const float* b, const float* c, float* d, std::int64_t k, std::int64_t n,
                   std::int64_t t, std::int64_t i0, std::int64_t i1) {
  fast_rows<2>(a, b, c, d, k, n, t, i0, i1);
}

FastFn pick_fast() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) return fast_avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return fast_avx2;
  return fast_portable;
}

}  // namespace

bool matmul_fast_path(const ReductionModel& m, const FormatSpec& a, const FormatSpec& b) {
  const RoundOptions& r = m.acc.rounding;
  const bool plan_ok = m.plan.kind == PlanKind::sequential ||
                       (m.plan.kind == PlanKind::blocked && m.plan.inner == InnerOrder::sequential) || m.plan.kind == PlanKind::splitk;
  return plan_ok && m.acc.format == &fp32 && r.rounding == Rounding::rne && !r.ftz && !r.daz &&
         !m.acc.products_rounded && representable_in_fp32(a) && representable_in_fp32(b);
}

std::vector<Bits> emulate_matmul(const MatrixView& a, const MatrixView& b, const std::optional<MatrixView>& c,
                                 const ReductionModel& m) {
  const std::int64_t M = a.rows, K = a.cols, N = b.cols;
  std::vector<Bits> d(static_cast<std::size_t>(M * N));
  if (matmul_fast_path(m, *a.format, *b.format)) {
    std::vector<float> af(a.data.size()), bf(b.data.size()), cf, df(d.size());
    for (std::size_t i = 0; i < af.size(); ++i) af[i] = as_float(*a.format, a.data[i]);
    for (std::size_t i = 0; i < bf.size(); ++i) bf[i] = as_float(*b.format, b.data[i]);
    if (c) {
      cf.resize(d.size());
      for (std::int64_t i = 0; i < M * N; ++i)
        cf[static_cast<std::size_t>(i)] = as_float(fp32, *addend_in_acc(m, c, i));
    }
    std::int64_t tile = K;
    if (m.plan.kind == PlanKind::blocked) tile = m.plan.param;
    if (m.plan.kind == PlanKind::splitk) tile = (K + m.plan.param - 1) / m.plan.param;
    static const FastFn fn = pick_fast();
    fn(af.data(), bf.data(), c ? cf.data() : nullptr, df.data(), K, N, std::max<std::int64_t>(tile, 1), 0, M);
    for (std::size_t i = 0; i < d.size(); ++i) {
      Bits v{float_bits(df[i])};
      if (std::isnan(df[i])) v = canonical_nan(fp32);  // hardware NaN payload/sign is not the model's
      d[i] = finish(m, v, i);
    }
    return d;
  }
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

std::vector<Bits> emulate_dot_rows(const MatrixView& a, const MatrixView& b, const std::optional<MatrixView>& c,
                                   const ReductionModel& m) {
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

std::vector<Bits> emulate_sum(const MatrixView& x, int axis, const ReductionModel& m) {
  const std::int64_t outer = axis == 0 ? x.cols : x.rows;
  const std::int64_t len = axis == 0 ? x.rows : x.cols;
  std::vector<Bits> d(static_cast<std::size_t>(outer));
  std::vector<Term> terms(static_cast<std::size_t>(len));
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t k = 0; k < len; ++k) {
      const std::int64_t idx = axis == 0 ? k * x.cols + o : o * x.cols + k;
      terms[static_cast<std::size_t>(k)] = as_term(*x.format, x.data[static_cast<std::size_t>(idx)], m.acc.rounding.daz);
    }
    d[static_cast<std::size_t>(o)] =
        finish(m, reduce(m.plan, m.acc, terms, std::nullopt, static_cast<std::uint64_t>(o)), static_cast<std::uint64_t>(o));
  }
  return d;
}

}  // namespace numfid
