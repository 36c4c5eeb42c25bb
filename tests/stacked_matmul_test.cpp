// A stack of matrices as A ([..., M, K] with one K×N B: torch.matmul of activations [batch, seq,
// K] and a weight) in check matmul and emulate matmul: the matrix of A's rows, so the verdict,
// the bounds and every element's report equal those of A reshaped to [M', K] (compared as whole
// JSON reports); C, the addend and a reference output keep the stack's shape; a batch of B
// (torch.bmm) and a stacked A under quantised or scaled claims are refused by name.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "formats/convert.h"
#include "formats/error.h"
#include "formats/format_spec.h"
#include "tolerances/check.h"

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
    EXPECT_EQ(r.json(), flat.json());
    EXPECT_EQ(r.text(), flat.text());
    ASSERT_FALSE(r.verdict.worst.empty());
    EXPECT_EQ(r.verdict.worst.front().row, 3);  // [row over the leading axes flattened, column]
    EXPECT_EQ(r.verdict.worst.front().col, 2);
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
  EXPECT_NE(message(A, random_tensor(bf16, {2, 64, 5}, 4, "B"), random_tensor(bf16, {2, 3, 5}, 3, "C"))
                .find("a batch of B, as torch.bmm's, is not taken"),
            std::string::npos);
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
}

}  // namespace
}  // namespace numfid
