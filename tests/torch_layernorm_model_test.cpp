// PyTorch 1.13's CPU layer_norm, transcribed as a naive model and held against what torch
// recorded (tests/data/torch_rows, written by torch itself: make_torch_rows.py): the model
// reproduces every recorded bf16 and fp32 layer_norm output bit for bit. That settles what the
// kernel computes (docs/verdict.md §8.3), and the model then tests the claim that states it —
// `--compute F --variance rowwise-moments(V) --norm-form shifted` — for soundness (no output the
// model computes, on thousands of random rows of every length and lane count, is a defect) and
// sharpness (kernels with a real defect are called defects).
//
// The kernel (aten/src/ATen/native/cpu/layer_norm_kernel.cpp and moments_utils.h of torch 1.13,
// transcribed as the recorded outputs confirm; T = the tensor's dtype, every Vectorized<T> and
// scalar T operation computed in float and rounded to T):
//   RowwiseMoments: V lanes (Vectorized<T>::size(): 16 for bf16, 8 for float on AVX2) of Welford
//   runs over chunks of 16 vectors (m1 += δ·(1/(j+1)), m2 += δ·(x - m1)), each chunk merged into
//   a binary-counter stack by Chan's update (c = n_b/n, m1 += c·δ, m2 += m2_b + δ·δ·c·n_a), the
//   stack merged into its level 0, the n mod V tail by a scalar Welford run (m1 += δ/k), then the
//   lanes merged one by one into the tail's moments; var = m2/n.
//   rstd = 1/sqrt(var + eps) in T (eps cast to T; for bf16 the sqrt rounded to bf16 too),
//   scale = rstd, bias = -rstd·mean in T; y = (x·scale + bias)·gamma + beta in float (fp32: two
//   FMAs, as the recorded outputs show), one cast to T.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "io/npy.h"
#include "io/tensor.h"
#include "tolerances/check.h"

namespace numfid {
namespace {

const std::filesystem::path data_dir = NUMFID_TORCH_ROWS_DATA;

/// float → bf16 → float, round to nearest even (the c10::BFloat16 conversion; no NaN here).
float to_bf16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  return std::bit_cast<float>(r);
}

/// T's arithmetic: each operation in float, then rounded to T (volatile: no contraction).
struct TArith {
  bool bf16 = false;
  float r(float v) const { return bf16 ? to_bf16(v) : v; }
  float add(float a, float b) const { volatile float t = a + b; return r(t); }
  float sub(float a, float b) const { volatile float t = a - b; return r(t); }
  float mul(float a, float b) const { volatile float t = a * b; return r(t); }
  float div(float a, float b) const { volatile float t = a / b; return r(t); }
};

struct Moments {
  std::int64_t n = 0;
  float m1 = 0, m2 = 0;
};

/// AddMoments / AddMomentsVec (one lane): b merged into a.
void add_moments(const TArith& t, const Moments& b, Moments& a) {
  if (b.n == 0) return;  // (never called so in torch except into an empty stack: a copy)
  const std::int64_t n = a.n + b.n;
  const float c = t.div(t.r(static_cast<float>(b.n)), t.r(static_cast<float>(n)));
  const float delta = t.sub(b.m1, a.m1);
  a.m1 = t.add(a.m1, t.mul(c, delta));
  a.m2 = t.add(a.m2, t.add(b.m2, t.mul(t.mul(t.mul(delta, delta), c), t.r(static_cast<float>(a.n)))));
  a.n = n;
}

/// RowwiseMoments(X, N): {mean, biased variance}, every value a T.
std::pair<float, float> rowwise_moments(const TArith& t, const std::vector<float>& x, int lanes) {
  const std::size_t N = x.size(), V = static_cast<std::size_t>(lanes);
  const std::size_t nv = N / V, chunks = (nv + 15) / 16;
  std::size_t depth = 0;
  while ((std::size_t{1} << depth) < chunks) ++depth;
  std::vector<float> cvec(16);
  for (std::size_t j = 0; j < 16; ++j) cvec[j] = t.div(1.0f, t.r(static_cast<float>(j + 1)));
  std::vector<Moments> lane_result(V);
  for (std::size_t l = 0; l < V; ++l) {
    std::vector<Moments> stack(std::max<std::size_t>(depth, 1));
    for (std::size_t i = 0; i < chunks; ++i) {
      Moments chunk;
      float m1 = 0, m2 = 0;
      const std::size_t m0 = std::min<std::size_t>(16, nv - 16 * i);
      for (std::size_t j = 0; j < m0; ++j) {
        const float xv = x[(16 * i + j) * V + l];
        const float delta = t.sub(xv, m1);
        m1 = t.add(m1, t.mul(delta, cvec[j]));
        m2 = t.add(m2, t.mul(delta, t.sub(xv, m1)));
      }
      chunk = {static_cast<std::int64_t>(m0), m1, m2};
      add_moments(t, chunk, stack[0]);
      std::size_t mask = i + 1;
      for (std::size_t d = 1; d < depth && (mask & 1) == 0; ++d) {
        add_moments(t, stack[d - 1], stack[d]);
        stack[d - 1] = Moments{};
        mask >>= 1;
      }
    }
    for (std::size_t d = 1; d < depth; ++d) add_moments(t, stack[d], stack[0]);
    lane_result[l] = stack[0];
  }
  Moments m;
  for (std::size_t i = nv * V; i < N; ++i) {  // the scalar tail
    const float delta = t.sub(x[i], m.m1);
    ++m.n;
    m.m1 = t.add(m.m1, t.div(delta, t.r(static_cast<float>(m.n))));
    m.m2 = t.add(m.m2, t.mul(delta, t.sub(x[i], m.m1)));
  }
  for (std::size_t l = 0; l < V; ++l) add_moments(t, lane_result[l], m);
  return {m.m1, t.div(m.m2, t.r(static_cast<float>(N)))};
}

/// One row of torch 1.13's CPU layer_norm (gamma/beta empty: none).
std::vector<float> torch_layer_norm(const std::vector<float>& x, const std::vector<float>& gamma,
                                    const std::vector<float>& beta, bool bf16, int lanes, float eps = 1e-5f) {
  const TArith t{bf16};
  const auto [mean, var] = rowwise_moments(t, x, lanes);
  const float s = t.add(var, t.r(eps));
  const float rstd = t.div(1.0f, t.r(std::sqrt(s)));
  const float bias = t.mul(-rstd, mean);
  std::vector<float> y(x.size());
  for (std::size_t j = 0; j < x.size(); ++j) {
    const float g = gamma.empty() ? 1.0f : gamma[j], b = beta.empty() ? 0.0f : beta[j];
    volatile float v = bf16 ? (x[j] * rstd + bias) * g + b : std::fma(std::fma(x[j], rstd, bias), g, b);
    y[j] = t.r(v);
  }
  return y;
}

std::vector<float> load(const std::string& file, const FormatSpec& f) {
  const std::vector<double> d = values_as_double(read_npy(data_dir / file), f);
  return {d.begin(), d.end()};
}

// The model is torch: every recorded layer_norm output, bf16 (16 lanes) and fp32 (8 lanes, the
// affine part in two FMAs), bit for bit. (Measured alternatives that do not match: 32 or 8 bf16
// lanes, 16 or 4 fp32 lanes, fp32 without FMA, bf16 sqrt not rounded to bf16.)
TEST(TorchLayerNormModel, ReproducesTheRecordedTorchOutputsBitForBit) {
  int rows = 0;
  for (const bool bf : {true, false}) {
    const FormatSpec& f = bf ? bf16 : fp32;
    for (const std::string base : {"layernorm_normal_4x64", "layernorm_wide_4x64", "layernorm_cancel_4x64",
                                   "layernorm_normal_4x64_affine", "layernorm_normal_1x1024_affine",
                                   "layernorm_wide_4x64_affine", "layernorm_cancel_4x64_affine"}) {
      const std::string name = fmt::format("{}_{}", base, f.name);
      SCOPED_TRACE(name);
      const std::vector<float> x = load("x_" + name + ".npy", f), y = load("y_" + name + ".npy", f);
      const bool affine = base.find("affine") != std::string::npos;
      const std::vector<float> g = affine ? load("g_" + name + ".npy", f) : std::vector<float>{};
      const std::vector<float> b = affine ? load("b_" + name + ".npy", f) : std::vector<float>{};
      const std::size_t n = base.find("1024") != std::string::npos ? 1024 : 64;
      ASSERT_EQ(x.size() % n, 0u);
      for (std::size_t r = 0; r < x.size() / n; ++r) {
        const std::vector<float> row(x.begin() + static_cast<std::ptrdiff_t>(r * n),
                                     x.begin() + static_cast<std::ptrdiff_t>((r + 1) * n));
        const std::vector<float> m = torch_layer_norm(row, g, b, bf, bf ? 16 : 8);
        int diffs = 0;
        for (std::size_t j = 0; j < n; ++j)
          if (std::bit_cast<std::uint32_t>(m[j]) != std::bit_cast<std::uint32_t>(y[r * n + j]) && ++diffs <= 3)
            ADD_FAILURE() << fmt::format("row {} [{}]: model {:a} ({:#010x}), torch {:a} ({:#010x})", r, j, m[j],
                                         std::bit_cast<std::uint32_t>(m[j]), y[r * n + j],
                                         std::bit_cast<std::uint32_t>(y[r * n + j]));
        ++rows;
      }
    }
  }
  EXPECT_EQ(rows, 50);
}

TensorData tensor(const std::vector<float>& v, std::vector<std::int64_t> shape, const FormatSpec& f, const char* name) {
  std::vector<double> d(v.begin(), v.end());
  return view(std::span<const double>(d), std::move(shape), f.name, name);
}

struct Judged {
  bool defect = false;
  std::int64_t unbounded = 0;
  double worst = 0;
  std::string text;
};

Judged judge(const std::vector<float>& x, const std::vector<float>& y, const std::vector<float>& g,
             const std::vector<float>& b, const FormatSpec& f, int lanes) {
  const auto n = static_cast<std::int64_t>(x.size());
  RowCheckOptions o;
  set_row_method_options(o, fmt::format("rowwise-moments({})", lanes), "shifted");
  o.param_format = &f;
  if (!g.empty()) o.gamma = tensor(g, {n}, f, "gamma");
  if (!b.empty()) o.beta = tensor(b, {n}, f, "beta");
  const CheckResult r = check_rows(RowOp::layernorm, tensor(x, {1, n}, f, "x"), tensor(y, {1, n}, f, "y"),
                                   parse_claim(fmt::format("--in {0} --out {0} --compute {0}", f.name)), o);
  Judged j;
  j.defect = r.verdict.kind == TensorKind::defect;
  j.worst = r.verdict.worst.empty() ? 0 : r.verdict.worst.front().ratio;
  const auto at = r.verdict.reason.find(" elements have no finite bound");
  if (at != std::string::npos) {
    const auto start = r.verdict.reason.rfind("; ", at);
    j.unbounded = std::stoll(r.verdict.reason.substr(start + 2, at - start - 2));
  }
  j.text = r.text();
  return j;
}

enum class Kind { normal, wide, offset3, offset100, tiny };

std::vector<float> draw(Kind k, std::size_t n, bool bf, std::mt19937_64& g) {
  std::normal_distribution<double> nd(0, 1);
  std::vector<float> x(n);
  for (float& v : x) {
    double d = nd(g);
    switch (k) {
      case Kind::normal: break;
      case Kind::wide: d *= 8; break;
      case Kind::offset3: d += 3; break;
      case Kind::offset100: d = 100 + (bf ? 1 : 0.01) * d; break;
      case Kind::tiny: d *= 1e-3; break;
    }
    v = bf ? to_bf16(static_cast<float>(d)) : static_cast<float>(d);
  }
  return x;
}

// Soundness: no output of the model is a defect under the claim that states it, for every
// length (tails, one chunk, carries in the stack), lane count and kind of data. Also counts the
// elements left without a finite bound (a vacuous claim there, said in the verdict).
// NUMFID_SELF_CONSISTENCY_SEED=N shifts the seed (the default run stays reproducible; other seeds
// search further, as in self_consistency_test).
TEST(TorchLayerNormModel, TheShiftedRowwiseMomentsClaimCoversTheModel) {
  const char* shift = std::getenv("NUMFID_SELF_CONSISTENCY_SEED");
  std::mt19937_64 g(20261202 + (shift ? std::strtoull(shift, nullptr, 10) * 1000003 : 0));
  int judged = 0, failures = 0;
  std::int64_t elements = 0, unbounded = 0;
  double worst = 0;
  std::string worst_at;
  for (const bool bf : {true, false})
    for (const int lanes : {8, 16, 32})
      for (const std::size_t n : {1, 2, 7, 16, 17, 63, 64, 100, 255, 256, 257, 500, 1000, 1024, 2048})
        for (const Kind k : {Kind::normal, Kind::wide, Kind::offset3, Kind::offset100, Kind::tiny}) {
          const FormatSpec& f = bf ? bf16 : fp32;
          const std::vector<float> x = draw(k, n, bf, g);
          std::vector<float> gm, bt;
          if (n % 2 == 0) {
            gm = draw(Kind::offset3, n, bf, g);
            bt = draw(Kind::normal, n, bf, g);
          }
          const std::vector<float> y = torch_layer_norm(x, gm, bt, bf, lanes);
          const Judged j = judge(x, y, gm, bt, f, lanes);
          ++judged;
          elements += static_cast<std::int64_t>(n);
          unbounded += j.unbounded;
          if (j.worst > worst)
            worst_at = fmt::format("{} n = {} lanes {} kind {}{}", f.name, n, lanes, static_cast<int>(k),
                                   gm.empty() ? "" : " with gamma/beta");
          worst = std::max(worst, j.worst);
          if (j.defect && ++failures <= 5)
            ADD_FAILURE() << fmt::format("{} n = {} lanes {} kind {}: the model's own output is a defect\n", f.name, n,
                                         lanes, static_cast<int>(k))
                          << j.text;
        }
  EXPECT_EQ(judged, 2 * 3 * 15 * 5);
  std::cout << fmt::format("{} rows, {} elements, {} without a finite bound, worst |error|/bound {:.3g} ({})\n",
                           judged, elements, unbounded, worst, worst_at);
  EXPECT_LT(worst, 1.0);
}

// Sharpness: real defects of such a kernel exceed the bound — moments of half the row, moments
// that skip lane 0 (fp32), the unbiased variance (n - 1, fp32), eps outside the square root.
TEST(TorchLayerNormModel, DefectsOfTheKernelAreCaught) {
  std::mt19937_64 g(20261203);
  for (const bool bf : {true, false}) {
    const FormatSpec& f = bf ? bf16 : fp32;
    const int lanes = bf ? 16 : 8;
    const std::vector<float> x = draw(Kind::normal, 1024, bf, g);
    const TArith t{bf};
    // Lane 0 skipped: the moments of the other elements only.
    std::vector<float> rest;
    for (std::size_t j = 0; j < x.size(); ++j)
      if (j % static_cast<std::size_t>(lanes) != 0) rest.push_back(x[j]);
    const auto [mean, var] = rowwise_moments(t, rest, lanes);
    std::vector<float> skipped(x.size());
    const float rstd = t.div(1.0f, t.r(std::sqrt(t.add(var, t.r(1e-5f)))));
    for (std::size_t j = 0; j < x.size(); ++j) skipped[j] = t.r(x[j] * rstd + t.mul(-rstd, mean));
    const Judged a = judge(x, skipped, {}, {}, f, lanes);
    // fp32: caught; bf16: within the bound (moments of 15/16 of the row move y by a few bf16
    // ulps, and the bound of bf16 moments at n = 1024 is tens of ulps wide).
    EXPECT_EQ(a.defect, !bf) << f.name << ": moments without lane 0\n" << a.text;
    // Moments of the first half of the row only (a race or an indexing bug), on a row whose
    // second half is spread three times wider.
    std::vector<float> two = draw(Kind::normal, 1024, bf, g);
    for (std::size_t j = 512; j < two.size(); ++j) two[j] = t.r(two[j] * 3);
    const auto [mh, vh] = rowwise_moments(t, std::vector<float>(two.begin(), two.begin() + 512), lanes);
    const float rh = t.div(1.0f, t.r(std::sqrt(t.add(vh, t.r(1e-5f)))));
    std::vector<float> half(two.size());
    for (std::size_t j = 0; j < two.size(); ++j) half[j] = t.r(two[j] * rh + t.mul(-rh, mh));
    const Judged h = judge(two, half, {}, {}, f, lanes);
    EXPECT_TRUE(h.defect) << f.name << ": moments of half the row pass\n" << h.text;
    if (!bf) {
      // Unbiased variance: ×sqrt(n/(n-1)) on every output (1/2048 relative: fp32 only).
      std::vector<float> unbiased = torch_layer_norm(x, {}, {}, bf, lanes);
      for (float& v : unbiased) v = static_cast<float>(v * std::sqrt(1024.0 / 1023.0));
      EXPECT_TRUE(judge(x, unbiased, {}, {}, f, lanes).defect) << "fp32: the unbiased variance passes";
    }
    // eps outside the root: (x - μ)/(sqrt(var) + eps) on data with var ≈ eps.
    std::vector<float> small = draw(Kind::tiny, 1024, bf, g);
    for (float& v : small) v = t.r(v * 3);  // var ≈ 1e-5
    const auto [m2, v2] = rowwise_moments(t, small, lanes);
    std::vector<float> outside(small.size());
    for (std::size_t j = 0; j < small.size(); ++j)
      outside[j] = t.r((small[j] - m2) / (std::sqrt(v2) + 1e-5f));
    const Judged e = judge(small, outside, {}, {}, f, lanes);
    EXPECT_TRUE(e.defect) << f.name << ": eps outside the square root passes\n" << e.text;
  }
}

}  // namespace
}  // namespace numfid
