// A stack of matrices as A ([..., M, K] with one K×N B: torch.matmul of activations [batch, seq,
// K] and a weight) in check matmul and emulate matmul: the matrix of A's rows, so the verdict,
// the bounds and every element's report equal those of A reshaped to [M', K] (compared as whole
// JSON reports); C, the addend and a reference output keep the stack's shape. A batch of B
// (torch.bmm, attention's Q·Kᵀ per head: B [..., K, N] with A's leading axes) is each matrix of A
// times its own B: every element judged as the 2-D check of its own pair judges it (the
// matrices cut out here by the test's own loop), the operand-dependent allowances per matrix.
// Broadcasting, and stacks under quantised or scaled claims, are refused by name. A stack's
// report places elements at their position in C ([b, h, i, j]) and names the matrices holding
// proven defects (a broken head), checked against the test's own index arithmetic.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include "formats/convert.h"
#include "formats/error.h"
#include "formats/format_spec.h"
#include "tolerances/calibrate.h"
#include "tolerances/check.h"
#include "tolerances/parallel_detail.h"

namespace numfid {
namespace {

TensorData random_tensor(const FormatSpec& f, std::vector<std::int64_t> shape, std::uint32_t seed, const char* name) {
  std::mt19937 g(seed);
  std::normal_distribution<double> nd(0, 1);
  std::int64_t n = 1;
  for (const std::int64_t d : shape) n *= d;
  TensorData t{&f, std::move(shape), {}, name};
  for (std::int64_t i = 0; i < n; ++i) t.values.push_back(convert_double(f, nd(g)).bits);
  return t;
}

TensorData reshaped(TensorData t, std::vector<std::int64_t> shape) {
  t.shape = std::move(shape);
  return t;
}

/// A report without what depends on the output's shape: each worst element's position, the
/// matrices of a stack, and the texts that name elements (the reason, the signatures).
std::string without_positions(const std::string& report) {
  nlohmann::json j = nlohmann::json::parse(report);
  for (const char* key : {"matrices", "reason", "signatures"}) j.erase(key);
  if (j.contains("worst"))
    for (nlohmann::json& e : j["worst"]) e.erase("position");
  return j.dump();
}

TEST(StackedMatmul, IsTheMatmulOfItsRows) {
  const TensorData A = random_tensor(bf16, {2, 3, 4, 64}, 1, "A"), B = random_tensor(bf16, {64, 5}, 2, "B");
  const ClaimSpec sequential = parse_claim("--in bf16 --out bf16 --plan sequential");
  // The plan's own output, emulated on the stack: C keeps A's leading axes.
  TensorData C = emulate_matmul(A, B, std::nullopt, sequential);
  ASSERT_EQ(C.shape, (std::vector<std::int64_t>{2, 3, 4, 5}));
  const TensorData C2 = emulate_matmul(reshaped(A, {24, 64}), B, std::nullopt, sequential);
  EXPECT_EQ(C.values, C2.values);
  C.values[17] = convert_double(bf16, to_double(bf16, C.values[17]) * 1.25).bits;  // one wrong element: row 3, column 2
  for (const char* claim : {"--in bf16 --acc fp32 --out bf16", "--in bf16 --out bf16 --plan sequential --expect bit-exact"}) {
    SCOPED_TRACE(claim);
    const CheckResult r = check_matmul(A, B, C, parse_claim(claim));
    const CheckResult flat = check_matmul(reshaped(A, {24, 64}), B, reshaped(C, {24, 5}), parse_claim(claim));
    EXPECT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
    // The same report but for where it places elements: at their position in the stack.
    EXPECT_EQ(without_positions(r.json()), without_positions(flat.json()));
    ASSERT_FALSE(r.verdict.worst.empty());
    EXPECT_EQ(r.verdict.worst.front().row, 3);  // [row over the leading axes flattened, column]
    EXPECT_EQ(r.verdict.worst.front().col, 2);
    EXPECT_THAT(r.text(), testing::HasSubstr("[0, 0, 3, 2]"));
    EXPECT_THAT(flat.text(), testing::HasSubstr("[3, 2]"));
    // The reason names the element the same way (--expect bit-exact lists those that differ).
    std::string reason = flat.verdict.reason;
    if (const std::size_t at = reason.find("[3, 2]"); at != std::string::npos) reason.replace(at, 6, "[0, 0, 3, 2]");
    EXPECT_EQ(r.verdict.reason, reason);
    ASSERT_EQ(r.verdict.signatures.size(), flat.verdict.signatures.size());
    for (std::size_t g = 0; g < r.verdict.signatures.size(); ++g)
      EXPECT_EQ(r.verdict.signatures[g].name, flat.verdict.signatures[g].name);
    EXPECT_EQ(nlohmann::json::parse(r.json())["worst"][0]["position"], nlohmann::json::array({0, 0, 3, 2}));
  }
  // An addend has C's shape; the flattened one is refused (shapes are compared, not counts).
  MatmulCheckOptions opt;
  opt.addend = random_tensor(fp32, {2, 3, 4, 5}, 3, "D");
  const TensorData CD = emulate_matmul(A, B, opt.addend, parse_claim("--in bf16 --out bf16 --plan sequential"));
  EXPECT_EQ(check_matmul(A, B, CD, parse_claim("--in bf16 --acc fp32 --out bf16"), opt).verdict.kind,
            TensorKind::consistent);
  opt.addend = reshaped(*opt.addend, {24, 5});
  EXPECT_THROW(check_matmul(A, B, CD, parse_claim("--in bf16 --acc fp32 --out bf16"), opt), InputError);
}

/// Matrix i of a stack (the test's own cut: i·rows·cols values from the start).
TensorData matrix(const TensorData& t, std::int64_t i, std::int64_t rows, std::int64_t cols) {
  TensorData m{t.format, {rows, cols}, {}, t.name};
  for (std::int64_t e = 0; e < rows * cols; ++e)
    m.values.push_back(t.values[static_cast<std::size_t>(i * rows * cols + e)]);
  return m;
}

TEST(StackedMatmul, BatchOfBIsEachMatrixTimesItsOwnB) {
  // Six pairs (torch.bmm over [2, 3] leading axes), each 4×64 times 64×5.
  const TensorData A = random_tensor(bf16, {2, 3, 4, 64}, 1, "A"), B = random_tensor(bf16, {2, 3, 64, 5}, 2, "B");
  const ClaimSpec sequential = parse_claim("--in bf16 --out bf16 --plan sequential");
  TensorData C = emulate_matmul(A, B, std::nullopt, sequential);
  ASSERT_EQ(C.shape, (std::vector<std::int64_t>{2, 3, 4, 5}));
  std::vector<Bits> each;
  for (std::int64_t i = 0; i < 6; ++i) {
    const TensorData Ci = emulate_matmul(matrix(A, i, 4, 64), matrix(B, i, 64, 5), std::nullopt, sequential);
    each.insert(each.end(), Ci.values.begin(), Ci.values.end());
  }
  EXPECT_EQ(C.values, each);
  // One wrong element: pair 5 (leading index [1, 2]), its row 2, column 3 -> [5·4 + 2, 3].
  C.values[5 * 20 + 2 * 5 + 3] = convert_double(bf16, to_double(bf16, C.values[5 * 20 + 2 * 5 + 3]) * 1.25).bits;
  for (const char* text :
       {"--in bf16 --acc fp32 --out bf16", "--in bf16 --out bf16 --plan sequential --expect bit-exact"}) {
    SCOPED_TRACE(text);
    const ClaimSpec claim = parse_claim(text);
    const CheckResult r = check_matmul(A, B, C, claim);
    EXPECT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
    ASSERT_FALSE(r.verdict.worst.empty());
    EXPECT_EQ(r.verdict.worst.front().row, 22);
    EXPECT_EQ(r.verdict.worst.front().col, 3);
    // Every element in the class the check of its own pair gives it.
    std::array<std::int64_t, 4> counts{};
    std::int64_t predicted = 0;
    for (std::int64_t i = 0; i < 6; ++i) {
      const CheckResult ri = check_matmul(matrix(A, i, 4, 64), matrix(B, i, 64, 5), matrix(C, i, 4, 5), claim);
      for (std::size_t k = 0; k < 4; ++k) counts[k] += ri.verdict.counts[k];
      if (ri.model) predicted += ri.model->equal;
    }
    EXPECT_EQ(r.verdict.counts, counts);
    if (claim.expect_bit_exact) {
      ASSERT_TRUE(r.model.has_value());
      EXPECT_EQ(r.model->equal, predicted);
      EXPECT_EQ(r.model->equal, 119);
    }
  }
  // The pairing is read: the pairs of one leading index swapped is a proven defect.
  TensorData swapped = B;
  std::rotate(swapped.values.begin(), swapped.values.begin() + 3 * 64 * 5, swapped.values.end());
  const TensorData Cs = emulate_matmul(A, swapped, std::nullopt, sequential);
  const CheckResult rs = check_matmul(A, B, Cs, parse_claim("--in bf16 --acc fp32 --out bf16"));
  EXPECT_EQ(rs.verdict.kind, TensorKind::defect);
  EXPECT_FALSE(rs.verdict.probable) << rs.text();
  // An addend of C's shape, each matrix's block with its own pair, under a profile's model too.
  MatmulCheckOptions opt;
  opt.addend = random_tensor(fp32, {2, 3, 4, 5}, 3, "D");
  for (const char* text : {"--in bf16 --out bf16 --plan sequential", "--in bf16 --out bf16 --profile trn2"}) {
    SCOPED_TRACE(text);
    const ClaimSpec model = parse_claim(text);
    const TensorData CD = emulate_matmul(A, B, opt.addend, model);
    std::vector<Bits> want;
    for (std::int64_t i = 0; i < 6; ++i) {
      const TensorData Ci =
          emulate_matmul(matrix(A, i, 4, 64), matrix(B, i, 64, 5), matrix(*opt.addend, i, 4, 5), model);
      want.insert(want.end(), Ci.values.begin(), Ci.values.end());
    }
    EXPECT_EQ(CD.values, want);
    const CheckResult rd = check_matmul(A, B, CD, parse_claim(fmt::format("{} --expect bit-exact", text)), opt);
    EXPECT_EQ(rd.verdict.kind, TensorKind::consistent) << rd.text();
    EXPECT_EQ(check_matmul(A, B, CD, parse_claim("--in bf16 --acc fp32 --out bf16"), opt).verdict.kind,
              TensorKind::consistent);
  }
  // The calibration samples each element's own pair: its exact centres are the reference's.
  const MatmulReference mr = matmul_reference(A, B, std::nullopt);
  const MatmulCalibration cal = calibrate_matmul(mr, parse_claim("--in bf16 --acc fp32 --out bf16"));
  ASSERT_EQ(cal.sample.size(), 120u);
  for (std::size_t s = 0; s < cal.sample.size(); ++s)
    ASSERT_EQ(cal.center[s], mr.elements[static_cast<std::size_t>(cal.sample[s])].exact) << "sample " << s;
}

TEST(StackedMatmul, BatchOfBAllowancesArePerMatrix) {
  // Inputs read as zero (--daz): the subnormal mass of a column of B is that of one matrix's
  // column, not of column j across the batch. Three subnormals in column 1 of each of the two
  // matrices, max|A| and max|B| alike in both: the allowance is the one of either pair alone.
  TensorData A = random_tensor(fp32, {2, 4, 16}, 1, "A"), B = random_tensor(fp32, {2, 16, 3}, 2, "B");
  for (std::int64_t i = 0; i < 2; ++i) {
    A.values[static_cast<std::size_t>(i * 64)] = convert_double(fp32, 8.0).bits;
    B.values[static_cast<std::size_t>(i * 48)] = convert_double(fp32, 8.0).bits;
    for (std::int64_t k = 1; k <= 3; ++k)
      B.values[static_cast<std::size_t>(i * 48 + k * 3 + 1)] = convert_double(fp32, 0x1p-130).bits;
  }
  const ClaimSpec daz = parse_claim("--in fp32 --acc fp32 --out fp32 --daz");
  const TensorData C = emulate_matmul(A, B, std::nullopt, parse_claim("--in fp32 --out fp32 --plan sequential"));
  const CheckResult r = check_matmul(A, B, C, daz);
  const CheckResult r0 = check_matmul(matrix(A, 0, 4, 16), matrix(B, 0, 16, 3), matrix(C, 0, 4, 3), daz);
  const auto daz_line = [](const CheckResult& x) {
    for (const std::string& l : x.bound.derivation)
      if (l.find("inputs read as zero (daz): +") != std::string::npos) return l;
    return std::string("no daz line");
  };
  EXPECT_NE(daz_line(r).find("of a column of B (2.20405e-39)"), std::string::npos) << daz_line(r);
  EXPECT_EQ(daz_line(r), daz_line(r0));
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();

  // A cast that may overflow an operand (70000 past fp16's range in column 2 of the second B)
  // takes the finite bound of that matrix's column only: the same column of the first pair is
  // still judged, and a wrong element there a proven defect.
  B.values[static_cast<std::size_t>(48 + 5 * 3 + 2)] = convert_double(fp32, 70000.0).bits;
  const ClaimSpec cast = parse_claim("--in fp32 --cast fp16 --acc fp32 --out fp32");
  TensorData Cc = emulate_matmul(A, B, std::nullopt, parse_claim("--in fp32 --cast fp16 --out fp32 --plan sequential"));
  EXPECT_EQ(check_matmul(A, B, Cc, cast).verdict.kind, TensorKind::consistent);
  Cc.values[1 * 3 + 2] = convert_double(fp32, to_double(fp32, Cc.values[1 * 3 + 2]) + 1.0).bits;  // pair 0, [1, 2]
  const CheckResult rc = check_matmul(A, B, Cc, cast);
  EXPECT_EQ(rc.verdict.kind, TensorKind::defect) << rc.text();
  EXPECT_FALSE(rc.verdict.probable);
}

// A defect in one head of an attention batch: the report lists elements at [b, h, i, j], says
// which matrices hold the elements outside the bound ([b, h] and their counts), and the confined
// and lone-outlier signatures say which matrix (their rows in that matrix's own numbering). The
// positions are the test's own arithmetic: flat index ((b·H + h)·M + i)·N + j.
TEST(StackedMatmul, ReportsPlaceElementsAndMatricesInTheStack) {
  constexpr std::int64_t Bt = 2, H = 3, M = 16, K = 64, N = 8;
  const TensorData q = random_tensor(bf16, {Bt, H, M, K}, 21, "q"), kt = random_tensor(bf16, {Bt, H, K, N}, 22, "kt");
  const ClaimSpec claim = parse_claim("--in bf16 --acc fp32 --out fp32 --plan sequential");
  const TensorData good = emulate_matmul(q, kt, std::nullopt, claim);
  ASSERT_EQ(good.shape, (std::vector<std::int64_t>{Bt, H, M, N}));
  const auto flat = [&](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) {
    return static_cast<std::size_t>(((b * H + h) * M + i) * N + j);
  };
  const auto bump = [](TensorData& t, std::size_t e, double by) {
    t.values[e] = convert_double(fp32, to_double(fp32, t.values[e]) + by).bits;
  };
  const ClaimSpec any = parse_claim("--in bf16 --acc fp32 --out fp32");
  {
    SCOPED_TRACE("one head broken in rows 3..5");
    TensorData c = good;
    bump(c, flat(1, 2, 5, 7), 4.0);
    bump(c, flat(1, 2, 3, 1), 2.0);
    bump(c, flat(1, 2, 4, 4), 1.0);
    const CheckResult r = check_matmul(q, kt, c, any);
    ASSERT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
    EXPECT_EQ(r.verdict.matrices, Bt * H);
    ASSERT_EQ(r.verdict.outside_by_matrix.size(), 1U) << r.text();
    EXPECT_EQ(r.verdict.outside_by_matrix[0].matrix, 1 * H + 2);
    EXPECT_EQ(r.verdict.outside_by_matrix[0].outside, 3);
    const std::string text = r.text();
    EXPECT_THAT(text, testing::HasSubstr("[1, 2, 5, 7]"));
    EXPECT_THAT(text,
                testing::HasSubstr("outside the deterministic bound: 1 of 6 (position over [2, 3], count): [1, 2] 3"));
    EXPECT_THAT(text, testing::HasSubstr("lie in rows 3..5 × columns 1..7 of matrix [1, 2] of the stack"));
    const nlohmann::json j = nlohmann::json::parse(r.json());
    EXPECT_EQ(j["worst"][0]["position"], nlohmann::json::array({1, 2, 5, 7}));
    EXPECT_EQ(j["worst"][0]["index"], flat(1, 2, 5, 7));
    EXPECT_EQ(j["matrices"]["count"], Bt * H);
    EXPECT_EQ(j["matrices"]["outside_deterministic"],
              nlohmann::json::parse(R"([{"position": [1, 2], "elements": 3}])"));
  }
  {
    SCOPED_TRACE("two heads, the most first; a box across matrices");
    TensorData c = good;
    bump(c, flat(0, 1, 0, 0), 8.0);
    for (std::int64_t j = 0; j < 3; ++j) bump(c, flat(1, 0, 15, j), 8.0);
    const CheckResult r = check_matmul(q, kt, c, any);
    ASSERT_EQ(r.verdict.outside_by_matrix.size(), 2U) << r.text();
    EXPECT_EQ(r.verdict.outside_by_matrix[0].matrix, 1 * H + 0);
    EXPECT_EQ(r.verdict.outside_by_matrix[0].outside, 3);
    EXPECT_EQ(r.verdict.outside_by_matrix[1].matrix, 0 * H + 1);
    EXPECT_EQ(r.verdict.outside_by_matrix[1].outside, 1);
    EXPECT_THAT(r.text(), testing::HasSubstr("2 of 6 (position over [2, 3], count): [1, 0] 3, [0, 1] 1"));
    // In each matrix's own rows: rows 0..15 × columns 0..2, 48 of 128 elements.
    EXPECT_THAT(r.text(), testing::HasSubstr("lie in rows 0..15 × columns 0..2 of each matrix they touch (2 of the "
                                             "stack's 6, from [0, 1] to [1, 0]; 37.5% of each matrix)"));
  }
  {
    SCOPED_TRACE("the same place in every head: the last row's columns 2..3 (a tail handled wrongly)");
    TensorData c = good;
    for (std::int64_t b = 0; b < Bt; ++b)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t j = 2; j < 4; ++j) bump(c, flat(b, h, M - 1, j), 8.0);
    const CheckResult r = check_matmul(q, kt, c, any);
    EXPECT_EQ(r.verdict.outside_by_matrix.size(), static_cast<std::size_t>(Bt * H)) << r.text();
    // The flattened box spans rows 15..95 (most of the tensor): only the per-matrix box is confined.
    EXPECT_THAT(r.text(), testing::HasSubstr("all 12 elements outside the probabilistic bound lie in row 15 of each "
                                             "matrix they touch (6 of the stack's 6, from [0, 0] to [1, 2];"));
  }
  {
    SCOPED_TRACE("across a matrix boundary: the last rows of one head and the first of the next");
    TensorData c = good;
    for (std::int64_t j = 0; j < N; ++j) {
      bump(c, flat(0, 0, M - 1, j), 8.0);
      bump(c, flat(0, 1, 0, j), 8.0);
    }
    // Each matrix's own rows span 0..15 (all of it); the flattened rows are 15..16 of 96.
    EXPECT_THAT(check_matmul(q, kt, c, any).text(),
                testing::HasSubstr("lie in rows 15..16 × columns 0..7 (2.1% of the tensor; rows over the leading axes "
                                   "flattened, matrices [0, 0] to [0, 1] of the stack)"));
  }
  {
    SCOPED_TRACE("a lone outlier");
    TensorData c = good;
    bump(c, flat(0, 2, 9, 3), 8.0);
    const CheckResult r = check_matmul(q, kt, c, any);
    EXPECT_THAT(r.text(), testing::HasSubstr(fmt::format("only element {} (at [0, 2, 9, 3])", flat(0, 2, 9, 3))));
  }
  // A stack of one matrix ([1, 1, M, N]) is still a stack: positions over all four axes, its one
  // matrix named.
  {
    TensorData c = matrix(good, 3, M, N);
    const TensorData q3 = matrix(q, 3, M, K), k3 = matrix(kt, 3, K, N);
    bump(c, static_cast<std::size_t>(2 * N + 1), 8.0);
    const CheckResult one = check_matmul(reshaped(q3, {1, 1, M, K}), reshaped(k3, {1, 1, K, N}), reshaped(c, {1, 1, M, N}),
                                         any);
    EXPECT_THAT(one.text(), testing::HasSubstr("[0, 0, 2, 1]"));
    EXPECT_THAT(one.text(), testing::HasSubstr("1 of 1 (position over [1, 1], count): [0, 0] 1"));
  }
  // A consistent stack names no matrix; the JSON still counts them.
  const CheckResult ok = check_matmul(q, kt, good, any);
  EXPECT_EQ(ok.verdict.kind, TensorKind::consistent) << ok.text();
  EXPECT_TRUE(ok.verdict.outside_by_matrix.empty());
  EXPECT_THAT(ok.text(), testing::Not(testing::HasSubstr("matrices holding")));
  EXPECT_EQ(nlohmann::json::parse(ok.json())["matrices"]["outside_deterministic"], nlohmann::json::array());
  // A row op on [b, s, h] activations: the element's position in x's shape.
  const TensorData x = random_tensor(bf16, {2, 3, 8}, 23, "x");
  TensorData y = x;
  for (Bits& v : y.values) v = convert_double(bf16, std::exp(to_double(bf16, v))).bits;
  y.values[static_cast<std::size_t>((1 * 3 + 2) * 8 + 6)] = convert_double(bf16, 1000.0).bits;
  const CheckResult e = check_rows(RowOp::exp, x, y, parse_claim("--in bf16 --compute fp32 --out bf16"));
  ASSERT_EQ(e.verdict.kind, TensorKind::defect) << e.text();
  EXPECT_THAT(e.text(), testing::HasSubstr("[1, 2, 6]"));
  EXPECT_THAT(e.text(), testing::HasSubstr("1 of 2 (position over [2], count): [1] 1"));
  // Softmax along axis 1 of [2, 3, 4, 5] (rows moved last inside the check): the element and
  // its matrix are still named in x's own shape, flat index ((b·3 + h)·4 + i)·5 + j.
  const TensorData x4 = random_tensor(fp32, {2, 3, 4, 5}, 24, "x4");
  TensorData s4 = x4;
  const auto at4 = [](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) {
    return static_cast<std::size_t>(((b * 3 + h) * 4 + i) * 5 + j);
  };
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t i = 0; i < 4; ++i)
      for (std::int64_t j = 0; j < 5; ++j) {
        double total = 0;
        for (std::int64_t h = 0; h < 3; ++h) total += std::exp(to_double(fp32, x4.values[at4(b, h, i, j)]));
        for (std::int64_t h = 0; h < 3; ++h)
          s4.values[at4(b, h, i, j)] = convert_double(fp32, std::exp(to_double(fp32, x4.values[at4(b, h, i, j)])) / total).bits;
      }
  RowCheckOptions axis1;
  axis1.axis = 1;
  const ClaimSpec softmax = parse_claim("--in fp32 --compute fp32 --out fp32");
  EXPECT_EQ(check_rows(RowOp::softmax, x4, s4, softmax, axis1).verdict.kind, TensorKind::consistent);
  // (Matrix [1, 0]: the moved grid's block of 20 elements holding it would be the 6th.)
  s4.values[at4(1, 0, 3, 4)] = convert_double(fp32, 1.5 * to_double(fp32, s4.values[at4(1, 0, 3, 4)])).bits;
  const CheckResult s = check_rows(RowOp::softmax, x4, s4, softmax, axis1);
  ASSERT_EQ(s.verdict.kind, TensorKind::defect) << s.text();
  EXPECT_EQ(nlohmann::json::parse(s.json())["worst"][0]["position"], nlohmann::json::array({1, 0, 3, 4}));
  EXPECT_THAT(s.text(), testing::HasSubstr("  [1, 0, 3, 4] "));
  ASSERT_EQ(s.verdict.outside_by_matrix.size(), 1U);
  EXPECT_EQ(s.verdict.outside_by_matrix[0].matrix, 1 * 3 + 0);
  // Element [.., 2, 1] of every matrix wrong: the same place in each, found through the moved grid.
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t h = 0; h < 3; ++h)
      s4.values[at4(b, h, 2, 1)] = convert_double(fp32, 1.5 * to_double(fp32, s4.values[at4(b, h, 2, 1)])).bits;
  EXPECT_THAT(check_rows(RowOp::softmax, x4, s4, softmax, axis1).text(),
              testing::HasSubstr("lie in rows 2..3 × columns 1..4 of each matrix they touch (6 of the stack's 6, from "
                                 "[0, 0] to [1, 2]"));
}

// The calibration's element (equal products summed in order leave the probabilistic radius
// themselves, §6.4: the suspicious verdict names the order and the element that do) is placed in
// the stack as the report places elements: [b, h, i, j] of C, not [row over the leading axes
// flattened, column].
TEST(StackedMatmul, TheCalibrationNamesItsElementInTheStack) {
  const std::int64_t K = 2048;
  TensorData A{&bf16, {2, 2, 4, K}, {}, "A"}, B{&bf16, {K, 4}, {}, "B"};
  for (std::int64_t i = 0; i < 2 * 2 * 4; ++i)  // each row of A its own constant: equal products per element
    for (std::int64_t k = 0; k < K; ++k) A.values.push_back(convert_double(bf16, 0.1 * (1 + 0.05 * static_cast<double>(i))).bits);
  for (std::int64_t k = 0; k < K * 4; ++k) B.values.push_back(convert_double(bf16, 0.3).bits);
  const TensorData C = emulate_matmul(A, B, std::nullopt, parse_claim("--in bf16 --acc fp32 --out fp32 --plan sequential"));
  const ClaimSpec claim = parse_claim("--in bf16 --acc fp32 --out fp32");
  const MatmulCalibration cal = calibrate_matmul(matmul_reference(A, B), claim);
  ASSERT_TRUE(cal.applies) << cal.why_not;
  ASSERT_GT(cal.rho, 1) << "equal products summed in order should leave the radius (§6.4)";
  MatmulCheckOptions o;
  o.calibration = &cal;
  const CheckResult r = check_matmul(A, B, C, claim, o);
  ASSERT_EQ(r.verdict.kind, TensorKind::suspicious) << r.text();
  const std::int64_t e = cal.rho_element;  // C is [2, 2, 4, 4]: the test's own index arithmetic
  const std::string at = fmt::format("{} at element [{}, {}, {}, {}]", cal.rho_order, e / 32, e / 16 % 2, e / 4 % 4, e % 4);
  EXPECT_THAT(r.verdict.reason, testing::HasSubstr(at));
  EXPECT_THAT(check_matmul(reshaped(A, {16, K}), B, reshaped(C, {16, 4}), claim, o).verdict.reason,
              testing::HasSubstr(fmt::format("{} at element [{}, {}]", cal.rho_order, e / 4, e % 4)));
}

// The per-matrix count over a stack of more elements than one chunk of the judgement's parallel
// passes (65536): matrix 8 of [3, 4, 96, 80] straddles element 65536; the counts are the test's
// own and the same for 1, 2 and 7 threads.
TEST(StackedMatmul, PerMatrixCountsAreWholeAcrossChunks) {
  struct Restore {
    ~Restore() { detail::set_check_threads(0); }
  } restore;
  const TensorData x = random_tensor(fp32, {3, 4, 96, 80}, 31, "x");
  TensorData y = x;
  for (Bits& v : y.values) v = convert_double(fp32, std::exp(to_double(fp32, v))).bits;
  const std::int64_t per = 96 * 80;
  for (const auto& [m, local] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {2, 5}, {2, 600}, {2, 7000}, {8, 100}, {8, 7000}, {11, 4321}}) {
    const auto i = static_cast<std::size_t>(m * per + local);
    y.values[i] = convert_double(fp32, 1.5 * to_double(fp32, y.values[i])).bits;
  }
  ASSERT_LT(8 * per + 100, 65536);
  ASSERT_GT(8 * per + 7000, 65536);
  for (const int threads : {1, 2, 7}) {
    SCOPED_TRACE(threads);
    detail::set_check_threads(threads);
    const CheckResult r = check_rows(RowOp::exp, x, y, parse_claim("--in fp32 --compute fp32 --out fp32"));
    ASSERT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
    std::vector<std::pair<std::int64_t, std::int64_t>> got;
    for (const Verdict::MatrixCount& c : r.verdict.outside_by_matrix) got.emplace_back(c.matrix, c.outside);
    EXPECT_EQ(got, (std::vector<std::pair<std::int64_t, std::int64_t>>{{2, 3}, {8, 2}, {11, 1}}));
  }
}

TEST(StackedMatmul, WrongShapesAreNamed) {
  const TensorData A = random_tensor(bf16, {2, 3, 64}, 1, "A"), B = random_tensor(bf16, {64, 5}, 2, "B");
  const ClaimSpec claim = parse_claim("--in bf16 --out bf16");
  const auto message = [&](const TensorData& a, const TensorData& b, const TensorData& c) {
    try {
      check_matmul(a, b, c, claim);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(A, B, random_tensor(bf16, {6, 5}, 3, "C")),
            "shape mismatch: A (A) is [2, 3, 64] (..., M, K) and B (B) is [64, 5] (K x N) give ..., M, N = [2, 3, 5], "
            "but C (C) is [6, 5]");
  // A batch of B pairs with A's matrices one to one; broadcasting is not guessed.
  EXPECT_EQ(message(A, random_tensor(bf16, {2, 64, 5}, 4, "B"), random_tensor(bf16, {2, 3, 5}, 3, "C")), "no error");
  EXPECT_EQ(message(A, random_tensor(bf16, {1, 64, 5}, 4, "B"), random_tensor(bf16, {2, 3, 5}, 3, "C")),
            "shape mismatch: A (A) is [2, 3, 64] and B (B) is [1, 64, 5]: a stack of B ([..., K, N]) needs A's leading "
            "axes, one B per matrix of A (broadcasting is not taken: repeat the shared matrix, or give one K x N B for "
            "all)");
  EXPECT_NE(message(random_tensor(bf16, {3, 64}, 1, "A"), random_tensor(bf16, {2, 64, 5}, 4, "B"),
                    random_tensor(bf16, {2, 3, 5}, 3, "C"))
                .find("a stack of B ([..., K, N]) needs A's leading axes"),
            std::string::npos);
  EXPECT_EQ(message(A, random_tensor(bf16, {2, 32, 5}, 4, "B"), random_tensor(bf16, {2, 3, 5}, 3, "C")),
            "shape mismatch: A (A) is [2, 3, 64] (..., M, K) and B (B) is [2, 32, 5] (..., K, N): K differs (64 vs 32)");
  EXPECT_NE(message(random_tensor(bf16, {64}, 1, "A"), B, random_tensor(bf16, {5}, 3, "C")).find("or a stack of them"),
            std::string::npos);
  // Quantised and scaled GEMMs lay scales and zero points out per row of an M×K A.
  const TensorData A8 = random_tensor(fp8_e4m3, {2, 3, 64}, 1, "A"), B8 = random_tensor(fp8_e4m3, {64, 5}, 2, "B");
  try {
    check_matmul(A8, B8, random_tensor(bf16, {2, 3, 5}, 3, "C"),
                 parse_claim("--in fp8_e4m3 --out bf16 --scale-a 0.5 --scale-b 0.25"));
    ADD_FAILURE() << "a stacked A under a scaled claim was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a scaled GEMM takes A as a matrix (M x K)"), std::string::npos) << e.what();
  }
  try {
    check_matmul(random_tensor(int8, {2, 3, 64}, 1, "A"), random_tensor(int8, {2, 64, 5}, 2, "B"),
                 random_tensor(int32, {2, 3, 5}, 3, "C"), parse_claim("--in int8 --acc int32 --out int32"));
    ADD_FAILURE() << "a batch under an integer claim was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("an integer GEMM takes A as a matrix (M x K)"), std::string::npos) << e.what();
  }
  try {
    check_matmul(random_tensor(int8, {3, 64}, 1, "A"), random_tensor(int8, {2, 64, 5}, 2, "B"),
                 random_tensor(int32, {2, 3, 5}, 3, "C"), parse_claim("--in int8 --acc int32 --out int32"));
    ADD_FAILURE() << "a stack of B under an integer claim was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("an integer GEMM takes B as a matrix (K x N)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace numfid
