// The gtest assertions over the check pipeline: the failure message and the reproduction.
#include "suites/assertions.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>

#include <fmt/format.h>

#include "formats/exact.h"
#include "io/tensor.h"
#include "numerics/profile.h"
#include "io/tensor_io.h"

namespace numfid::testing {

namespace {

std::string trimmed(std::string s) {
  const auto b = s.find_first_not_of(' ');
  return b == std::string::npos ? std::string() : s.substr(b);
}

std::string percent(std::int64_t k, std::int64_t n) {
  return fmt::format("{}/{} ({:.3g}%)", k, n, n > 0 ? 100.0 * static_cast<double>(k) / static_cast<double>(n) : 0.0);
}

/// A path or value for a shell command line: single-quoted when it holds anything a shell reads.
std::string shell_word(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+") ==
                        std::string::npos)
    return s;
  std::string q = "'";
  for (const char ch : s) {
    if (ch == '\'') q.append("'\\''");
    else q.push_back(ch);
  }
  q.push_back('\'');
  return q;
}

/// A folder for this test's dump: NUMFID_DUMP_DIR/<suite>.<test>-<n> ('/' of parameterised
/// names replaced), n counting the dumps of the process so that two never share a folder.
std::filesystem::path dump_folder(const char* root) {
  static std::atomic<int> counter{0};
  std::string name = "numfid";
  if (const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info())
    name = fmt::format("{}.{}", t->test_suite_name(), t->name());
  for (char& ch : name)
    if (ch == '/' || ch == '\\' || ch == ' ') ch = '_';
  return std::filesystem::path(root) / fmt::format("{}-{}", name, counter.fetch_add(1));
}

std::string claim_text_of(const ClaimSpec& c) { return trimmed(c.text()); }

/// The claim text of a row op for the CLI: ClaimSpec::text() always writes the accumulator
/// ("--acc fp32"), which `numfid check softmax` and the other row commands reject as a
/// reduction-only option; it says nothing about a row op, so it is left out there.
std::string row_claim_text_of(const ClaimSpec& c) {
  std::string t = claim_text_of(c);
  const std::string acc = fmt::format("--acc {}", c.acc ? c.acc->name : "");
  if (const auto at = t.find(acc); at != std::string::npos) {
    t.erase(at, acc.size());
    if (at < t.size() && t[at] == ' ') t.erase(at, 1);
    else if (at > 0 && t[at - 1] == ' ') t.erase(at - 1, 1);
  }
  return t;
}

}  // namespace

// ------------------------------------------------------------------- checking helpers

namespace {

/// Whether a claim's --scale-a/--scale-b/--out-scale text is a value (a number or a list of
/// them) rather than the name of a file.
bool is_number_list(const std::string& text) {
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    char* stop = nullptr;
    errno = 0;
    std::strtod(item.c_str(), &stop);
    if (item.empty() || stop != item.c_str() + item.size()) return false;
    at = end + 1;
  }
  return true;
}

/// Scale values attached in code (attach_operand_scales, per-channel out_scale) under a file
/// name the test never wrote: written as fp32 operands of the reproduction instead, and left
/// out of its claim text.
void scales_as_operands(Checked& k, const ClaimSpec& claim) {
  ClaimSpec shown = claim;
  const auto move = [&](std::string& text, const std::vector<double>& values, const char* option) {
    if (text.empty() || values.empty() || is_number_list(text)) return;
    std::vector<Bits> bits;
    for (const double v : values) {
      const std::optional<Bits> b = exactly(fp32, v);
      if (!b) {
        k.not_reproducible = fmt::format("{} value {} is not an fp32 value (the CLI reads scale files as fp32)", option, v);
        return;
      }
      bits.push_back(*b);
    }
    k.operands.emplace_back(option, TensorData{&fp32, {static_cast<std::int64_t>(bits.size())}, std::move(bits), option});
    text.clear();
  };
  move(shown.quant.scale_a_text, claim.quant.scale_a, "--scale-a");
  move(shown.quant.scale_b_text, claim.quant.scale_b, "--scale-b");
  move(shown.quant.out_scale_text, claim.quant.out_scale, "--out-scale");
  k.claim_text = claim_text_of(shown);
}

}  // namespace

Checked check_matmul(const TensorData& a, const TensorData& b, const TensorData& c, const ClaimSpec& claim,
                     const MatmulCheckOptions& opt) {
  Checked k{numfid::check_matmul(a, b, c, claim, opt), "check matmul", {{"--a", a}, {"--b", b}, {"--c", c}}, {},
            claim_text_of(claim)};
  if (opt.addend) {
    k.operands.emplace_back("--addend", *opt.addend);
    k.extra_args = {"--addend-format", std::string(opt.addend->format->name)};
  }
  if (opt.ref) {
    // A cross-platform check: R and its platform. The CLI names the platform by a profile.
    k.operands.emplace_back("--ref", *opt.ref);
    if (opt.ref_claim && opt.ref_claim->profile)
      k.extra_args.insert(k.extra_args.end(), {"--ref-profile", std::string(opt.ref_claim->profile->name)});
    else
      k.not_reproducible = "the reference's claim names no profile (the CLI's --ref-profile takes a profile)";
  }
  scales_as_operands(k, claim);
  return k;
}

Checked check_matmul(const TensorData& a, const TensorData& b, const TensorData& c, std::string_view claim,
                     const MatmulCheckOptions& opt) {
  return testing::check_matmul(a, b, c, parse_claim(claim), opt);
}

Checked check_sum(const TensorData& x, const TensorData& c, int axis, const ClaimSpec& claim) {
  return Checked{numfid::check_sum(x, c, axis, claim), "check sum", {{"--x", x}, {"--c", c}},
                 {"--axis", std::to_string(axis)}, claim_text_of(claim)};
}

Checked check_sum(const TensorData& x, const TensorData& c, int axis, std::string_view claim) {
  return testing::check_sum(x, c, axis, parse_claim(claim));
}

Checked check_rows(RowOp op, const TensorData& x, const TensorData& c, const ClaimSpec& claim,
                   const RowCheckOptions& opt) {
  Checked k{numfid::check_rows(op, x, c, claim, opt), fmt::format("check {}", row_op_name(op)), {{"--x", x}, {"--c", c}},
            {}, row_claim_text_of(claim)};
  // The command that reruns the check states every option that changes it.
  const bool row = op == RowOp::softmax || op == RowOp::log_softmax || op == RowOp::layernorm || op == RowOp::rmsnorm;
  if (op == RowOp::layernorm || op == RowOp::rmsnorm) k.extra_args = {"--eps", fmt::format("{}", opt.eps)};
  if (op == RowOp::layernorm && opt.variance != VarianceMethod::any)
    k.extra_args.insert(k.extra_args.end(),
                        {"--variance", variance_choice_name({opt.variance, opt.variance_lanes})});
  if (op == RowOp::layernorm && opt.norm_form != NormForm::centred)
    k.extra_args.insert(k.extra_args.end(), {"--norm-form", std::string(norm_form_name(opt.norm_form))});
  if ((op == RowOp::softmax || op == RowOp::log_softmax) && opt.softmax != SoftmaxMethod::textbook)
    k.extra_args.insert(k.extra_args.end(), {"--softmax", std::string(softmax_method_name(opt.softmax))});
  if (op == RowOp::softmax && opt.masked_row != MaskedRow::nan)
    k.extra_args.insert(k.extra_args.end(), {"--masked-row", std::string(masked_row_name(opt.masked_row))});
  if (row && opt.axis != -1) k.extra_args.insert(k.extra_args.end(), {"--axis", fmt::format("{}", opt.axis)});
  if (opt.param_format) k.extra_args.insert(k.extra_args.end(), {"--param-format", std::string(opt.param_format->name)});
  if (opt.gamma) k.operands.emplace_back("--gamma", *opt.gamma);
  if (opt.beta) k.operands.emplace_back("--beta", *opt.beta);
  return k;
}

Checked check_rows(RowOp op, const TensorData& x, const TensorData& c, std::string_view claim,
                   const RowCheckOptions& opt) {
  return testing::check_rows(op, x, c, parse_claim(claim), opt);
}

// ------------------------------------------------------------------- the message

std::string explain(const CheckResult& r) {
  const Verdict& v = r.verdict;
  // The label says proven or probable, as `numfid check` does: a probable defect has no element
  // outside the deterministic bound, and "DEFECT" alone read as a proof.
  std::string out = fmt::format("numfid {}: {} — {}\n", r.op, r.verdict_label(), v.reason);
  out += fmt::format("  claim: {}\n", r.claim_text);
  out += fmt::format("  elements: {} outside the deterministic bound, {} outside only the probabilistic bound, "
                     "{} within it, {} bit-exact; max error {:.3g} output ulps\n",
                     percent(v.counts[3], v.elements), percent(v.counts[2], v.elements),
                     percent(v.counts[1], v.elements), percent(v.counts[0], v.elements), v.max_error_ulps);
  if (r.model)
    out += fmt::format("  model: {} equal the bit-exact output of {}{}\n", percent(r.model->equal, r.model->elements),
                       r.model->model, r.model->note);
  bool header = false;
  for (const ElementReport& e : v.worst) {
    if (e.ratio <= 0) break;
    if (!header) {
      out += "  worst elements (index: got [bits] vs exact; error in output ulps, as a fraction of the deterministic "
             "bound; class):\n";
      header = true;
    }
    const std::string where = r.matrix ? fmt::format("[{}, {}]", e.row, e.col) : fmt::format("[{}]", e.index);
    out += fmt::format("    {}: got {:.9g} [{}] vs exact {:.9g} ({:a}); error {:+.3g} ulps = {:.3g}× bound {:.3g}; {}\n",
                       where, e.value, to_hex(*r.output, e.bits), e.exact, e.exact, e.error_ulps, e.ratio, e.det_bound,
                       class_name(e.cls));
  }
  if (v.signatures.empty()) {
    out += "  signatures: none\n";
  } else {
    out += "  signatures:\n";
    for (const Signature& s : v.signatures) out += fmt::format("    {}: {}\n", s.name, s.evidence);
  }
  std::string derivation;
  for (const std::string& d : r.bound.derivation) {
    if (!derivation.empty()) derivation.append("; ");
    derivation.append(trimmed(d));
  }
  out += fmt::format("  bound: {}\n", derivation.empty() ? "(none)" : derivation);
  return out;
}

std::string reproduction(const Checked& c) {
  const char* root = std::getenv("NUMFID_DUMP_DIR");
  if (root == nullptr || *root == '\0')
    return "  reproduce: set NUMFID_DUMP_DIR=<folder> to write the operands as .npy and print the numfid command\n";
  try {
    const std::filesystem::path dir = dump_folder(root);
    std::filesystem::create_directories(dir);
    std::string cmd = "numfid " + c.command;
    for (const auto& [option, t] : c.operands) {
      std::string stem = option.substr(option.find_first_not_of('-'));
      const std::filesystem::path file = dir / (stem + ".npy");
      write_tensor(file, make_tensor(*t.format, t.shape, t.values));
      cmd += fmt::format(" {} {}", option, shell_word(file.string()));
    }
    for (const std::string& a : c.extra_args) cmd += fmt::format(" {}", shell_word(a));
    // The claim text is already in the CLI's tokens (quoted where a value holds spaces).
    cmd += fmt::format(" {}", c.claim_text);
    if (!c.not_reproducible.empty())
      return fmt::format("  reproduce: operands written to {}; no numfid command gives this check: {}\n", dir.string(),
                         c.not_reproducible);
    return fmt::format("  reproduce: operands written to {}\n    {}\n", dir.string(), cmd);
  } catch (const std::exception& e) {
    return fmt::format("  reproduce: writing the operands to NUMFID_DUMP_DIR={} failed: {}\n", root, e.what());
  }
}

// ------------------------------------------------------------------- predicate-formatters

namespace {

::testing::AssertionResult judged(const char* expr, const CheckResult& r, bool want_defect, const Checked* c) {
  const bool defect = r.verdict.kind == TensorKind::defect;
  if (defect == want_defect) return ::testing::AssertionSuccess();
  ::testing::AssertionResult f = ::testing::AssertionFailure();
  f << "Expected " << expr << (want_defect ? " to be a numfid DEFECT" : " to be numfid-consistent") << ", but it is "
    << r.verdict_label() << ".\n"
    << explain(r);
  if (c != nullptr) {
    f << reproduction(*c);
  } else {
    f << "  reproduce: no operands kept: check with numfid::testing::check_matmul / check_sum / check_rows "
         "(not numfid::check_*) and set NUMFID_DUMP_DIR=<folder> to write them and the numfid command\n";
  }
  return f;
}

}  // namespace

::testing::AssertionResult numfid_consistent(const char* expr, const CheckResult& r) {
  return judged(expr, r, false, nullptr);
}
::testing::AssertionResult numfid_consistent(const char* expr, const Checked& c) {
  return judged(expr, c.result, false, &c);
}
::testing::AssertionResult numfid_defect(const char* expr, const CheckResult& r) { return judged(expr, r, true, nullptr); }
::testing::AssertionResult numfid_defect(const char* expr, const Checked& c) { return judged(expr, c.result, true, &c); }

}  // namespace numfid::testing
