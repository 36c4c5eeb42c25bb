// The claim's one text form: parse_claim() and ClaimSpec::text(), shared by the CLI, gate
// files, the Python module and C++ callers; format and rounding lookup with the messages
// every entry point prints.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <limits>

#include <fmt/format.h>

#include "formats/error.h"
#include "formats/exact.h"
#include "formats/platform.h"
#include "io/error.h"
#include "numerics/operand_cast.h"
#include "numerics/profile.h"
#include "tolerances/check.h"
#include "tolerances/check_detail.h"
#include "tolerances/row_bounds.h"
#include "tolerances/quant_check.h"

namespace numfid {

const FormatSpec& format_named(std::string_view name) {
  if (const FormatSpec* f = find_format(name)) return *f;
  throw InputError(fmt::format("unknown format '{}' (known: {}; aliases such as bfloat16 or float8_e4m3fn "
                               "are accepted, see `numfid formats`)",
                               name, format_names()));
}

Rounding rounding_named(std::string_view s, std::string_view option) {
  if (const auto r = parse_rounding(s)) return *r;
  throw InputError(fmt::format("{} '{}': unknown rounding mode (known: rne, rtz, rup, rdn, rna, stochastic)", option, s));
}

Rounding ClaimSpec::output_rounding() const {
  if (out_rounding) return *out_rounding;
  if (profile) return profile->reduction.output_rounding.rounding;
  return Rounding::rne;
}

bool ClaimSpec::output_saturates() const {
  return saturate || (profile && profile->reduction.output_rounding.overflow == Overflow::saturate);
}

namespace {

/// Whether any rounding a profile states is stochastic: every field that reads as a rounding
/// mode (the loader parses rounding keys with parse_rounding, so the text is what it read), and
/// the partial sums' profile of a scaled-gemm recipe.
bool profile_rounds_stochastically(const Profile& p) {
  for (const ProfileField& f : p.fields)
    if (parse_rounding(f.value) == Rounding::stochastic) return true;
  return p.block_scaling && p.block_scaling->partials && profile_rounds_stochastically(*p.block_scaling->partials);
}

/// Whether a --seed can change anything the claim computes: some rounding of it is stochastic
/// (the accumulator's, the output's, the input cast's, or one its profile states).
bool rounds_stochastically(const ClaimSpec& c) {
  return c.acc_rounding == Rounding::stochastic || c.output_rounding() == Rounding::stochastic ||
         (c.cast && c.cast_rounding == Rounding::stochastic) || (c.profile && profile_rounds_stochastically(*c.profile));
}

/// Splits the claim text into tokens: whitespace separates, '...' and "..." quote.
std::vector<std::string> tokenize(std::string_view text) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
    if (i == text.size()) break;
    std::string tok;
    bool quoted = false;
    while (i < text.size() && !(text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) {
      const char q = text[i];
      if (q == '\'' || q == '"') {
        const std::size_t end = text.find(q, i + 1);
        if (end == std::string_view::npos)
          throw InputError(fmt::format("claim: unterminated quote {} in '{}'", q, text.substr(i)));
        tok.append(text.substr(i + 1, end - i - 1));
        i = end + 1;
        quoted = true;
      } else {
        tok.push_back(q);
        ++i;
      }
    }
    if (!tok.empty() || quoted) out.push_back(std::move(tok));
  }
  return out;
}

double parse_number(const std::string& option, const std::string& s) {
  double v = 0;
  if (const std::string why = read_decimal(s, v); !why.empty()) throw InputError(fmt::format("{}: {}", option, why));
  return v;
}

}  // namespace

std::string read_decimal(const std::string& text, double& value) {
  const char* first = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(first, &end);
  if (text.empty() || end != first + text.size()) return fmt::format("'{}' is not a number", printable(text));
  // ERANGE with a subnormal result is a number strtod could only round (glibc sets it there too).
  if (errno == ERANGE && (std::isinf(v) || v == 0)) return fmt::format("'{}' is out of range", printable(text));
  value = v;
  return {};
}

std::uint64_t parse_seed(const std::string& s) {
  // Digits only, and at most 2^64 - 1: strtoull would accept a sign and wrap.
  bool ok = !s.empty() && s.size() <= 20;
  for (const char ch : s) ok = ok && ch >= '0' && ch <= '9';
  unsigned long long v = 0;
  if (ok) {
    errno = 0;
    v = std::strtoull(s.c_str(), nullptr, 10);
    ok = errno != ERANGE;
  }
  if (!ok) throw InputError(fmt::format("--seed '{}' must be an integer in [0, 2^64 - 1]", s));
  return v;
}

void append_claim_flag(std::string& text, std::string_view flag) {
  if (!text.empty()) text += ' ';
  text += flag;
}

namespace {
/// A value as one token of the claim text: quoted where it is empty or holds spaces or quotes,
/// so that tokenize() gives it back whole. A value holding both kinds of quote is written as
/// adjacent quoted pieces, which tokenize() joins into one token: "a'b"'"'"c" for a'b"c (found
/// by the claim fuzz target: a value with both was wrapped in "..." and split at its own ").
std::string quoted_value(std::string_view value) {
  if (!value.empty() && value.find_first_of(" \t\n\r'\"") == std::string_view::npos) return std::string(value);
  if (value.find('\'') == std::string_view::npos) return fmt::format("'{}'", value);
  if (value.find('"') == std::string_view::npos) return fmt::format("\"{}\"", value);
  std::string out;
  std::size_t start = 0;
  for (std::size_t q = value.find('"'); q != std::string_view::npos; q = value.find('"', start)) {
    if (q > start) out += fmt::format("\"{}\"", value.substr(start, q - start));
    out += "'\"'";
    start = q + 1;
  }
  if (start < value.size()) out += fmt::format("\"{}\"", value.substr(start));
  return out;
}
}  // namespace

void append_claim_option(std::string& text, std::string_view option, std::string_view value) {
  append_claim_flag(text, option);
  text += ' ';
  text += quoted_value(value);
}

ClaimSpec parse_claim(std::string_view text) {
  const std::vector<std::string> tokens = tokenize(text);
  ClaimSpec c;
  std::vector<std::string> seen;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::string opt = tokens[i], value;
    bool has_inline = false;
    if (const std::size_t eq = opt.find('='); opt.starts_with("--") && eq != std::string::npos) {
      value = opt.substr(eq + 1);
      opt.resize(eq);
      has_inline = true;
    }
    if (!opt.starts_with("--")) throw InputError(fmt::format("claim: unexpected token '{}' (options start with --)", opt));
    const bool flag = opt == "--products-rounded" || opt == "--probabilistic-defects" || opt == "--ftz" ||
                      opt == "--daz" || opt == "--zero-start" ||
                      opt == "--saturate" || detail::is_quant_flag(opt);
    static constexpr std::string_view known[] = {
        "--in",   "--in-b",         "--acc",  "--acc-rounding", "--products-rounded", "--ftz", "--daz", "--zero-start", "--cast",       "--cast-rounding",
        "--plan", "--profile",      "--out",  "--out-rounding", "--saturate", "--addend-at", "--seed", "--sr-bits", "--confidence", "--probabilistic-defects",
        "--ulps", "--compute",      "--exp-ulps",     "--fn-ulps", "--fn-abs", "--expect"};
    bool is_known = false;
    for (std::string_view k : known) is_known = is_known || k == opt;
    if (!is_known && !detail::is_quant_option(opt)) {
      // An option of `numfid check` beside the claim (--variance, --softmax, --eps, --ref, ...),
      // written into the claim text: say where it goes instead of calling it unknown.
      std::string key, ops;
      for (const char ch : std::string_view(opt).substr(2)) key += ch == '-' ? '_' : ch;
      for (const std::string& op : check_op_names())
        if (check_takes(op, key)) ops += fmt::format("{}{}", ops.empty() ? "" : ", ", op);
      if (!ops.empty())
        throw InputError(fmt::format("claim: '{}' is an option of `numfid check` ({}), not part of the claim text: give it "
                                     "beside the claim (a gate case's key '{}', the Python keyword {}; in C++ "
                                     "RowCheckOptions / RowSuiteOptions for row ops, the check function's arguments for "
                                     "matmul and dot)",
                                     opt, ops, key, key));
    }
    if (!is_known && !detail::is_quant_option(opt))
      throw InputError(fmt::format("claim: unknown option '{}' (known: --in, --in-b, --acc, --acc-rounding, "
                                   "--products-rounded, --ftz, --daz, --zero-start, --cast, --cast-rounding, --plan, --profile, --out, "
                                   "--out-rounding, --saturate, --addend-at, --seed, --sr-bits, --confidence, --probabilistic-defects, --ulps, --compute, "
                                   "--fn-ulps, --fn-abs, --exp-ulps, --expect; integer GEMM: {})",
                                   opt, detail::quant_option_names()));
    for (const std::string& s : seen)
      if (s == opt) throw InputError(fmt::format("claim: {} given twice", opt));
    seen.push_back(opt);
    if (flag) {
      if (has_inline) throw InputError(fmt::format("claim: {} is a flag and takes no value", opt));
    } else if (!has_inline) {
      if (i + 1 >= tokens.size() || (tokens[i + 1].starts_with("--") && tokens[i + 1].size() > 2 &&
                                      !std::isdigit(static_cast<unsigned char>(tokens[i + 1][2]))))
        throw InputError(fmt::format("claim: {} needs a value", opt));
      value = tokens[++i];
    }
    if (detail::parse_quant_option(c.quant, opt, value)) continue;  // integer GEMM (quant_check.cpp)
    if (opt == "--in") c.in = &format_named(value);
    else if (opt == "--in-b") c.in_b = &format_named(value);
    else if (opt == "--acc") {
      c.acc = &format_named(value);
      // Integers are integer claims' (--acc int32), refused for float inputs where the claim is set up.
      detail::refuse_unsigned_accumulator(*c.acc);
    }
    else if (opt == "--acc-rounding") c.acc_rounding = rounding_named(value, "--acc-rounding");
    else if (opt == "--products-rounded") c.products_rounded = true;
    else if (opt == "--ftz") c.acc_ftz = true;
    else if (opt == "--daz") c.acc_daz = true;
    else if (opt == "--zero-start") c.acc_zero_start = true;
    else if (opt == "--cast") c.cast = &format_named(value);
    else if (opt == "--cast-rounding") c.cast_rounding = rounding_named(value, "--cast-rounding");
    else if (opt == "--plan") {
      std::string err;
      c.plan = ReductionPlan::parse(value, &err);
      if (!c.plan) throw InputError("--plan: " + err);
    } else if (opt == "--profile") {
      try {
        c.profile = std::make_shared<const Profile>(find_profile(value));
      } catch (const ProfileError& e) {
        throw InputError(e.what());
      }
      c.profile_name = value;
    } else if (opt == "--out") c.out = &format_named(value);
    else if (opt == "--out-rounding") c.out_rounding = rounding_named(value, "--out-rounding");
    else if (opt == "--saturate") c.saturate = true;
    else if (opt == "--addend-at") {
      if (value == "start") c.addend_at = AddendAt::start;
      else if (value == "end") c.addend_at = AddendAt::end;
      else if (value == "output") c.addend_at = AddendAt::output;
      else
        throw InputError(fmt::format("--addend-at '{}': give start (the addend is the sum's first term, the tensor-core "
                                     "instruction's C), end (added to the finished sum in the accumulator's format, "
                                     "then the output cast: cuBLASLt's bias epilogue) or output (added after the output "
                                     "cast, in the output's format: torch.addmm with a bf16/fp16 output)",
                                     value));
    }
    else if (opt == "--seed") c.seed = parse_seed(value);
    else if (opt == "--sr-bits") {
      const bool digits = !value.empty() && value.size() <= 2 &&
                          std::all_of(value.begin(), value.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
      c.sr_bits = digits ? std::stoi(value) : 0;
      if (c.sr_bits < 1 || c.sr_bits > 64)
        throw InputError(fmt::format("--sr-bits '{}' must be an integer from 1 to 64: the random bits each stochastic "
                                     "rounding draws",
                                     value));
    }
    else if (opt == "--confidence") {
      double p = 0;
      try {
        p = parse_number(opt, value);
      } catch (const InputError&) {
        p = 0;
      }
      if (!(p > 0 && p < 1))
        throw InputError(fmt::format("--confidence '{}' must be a probability strictly between 0 and 1 (e.g. 0.999999)", value));
      c.confidence = p;
    } else if (opt == "--probabilistic-defects") c.probabilistic_defects = true;
    else if (opt == "--ulps") {
      const double u = parse_number(opt, value);
      if (!(u > 0) || !std::isfinite(u))
        throw InputError(fmt::format("--ulps '{}' must be a positive number of output ulps (0.5 = correctly rounded)", value));
      c.ulps = u;
    } else if (opt == "--compute") {
      // fp64 is a compute format only (tensors hold <= 32-bit patterns).
      c.compute = (value == "fp64" || value == "float64" || value == "double") ? &fp64_compute : &format_named(value);
    } else if (opt == "--exp-ulps" || opt == "--fn-ulps") {  // --exp-ulps: softmax's older name
      const double u = parse_number(opt, value);
      if (!(u >= 0) || !std::isfinite(u)) throw InputError(fmt::format("{} '{}' must be a finite number >= 0", opt, value));
      c.fn_ulps = u;
    } else if (opt == "--fn-abs") {
      const double e = parse_number(opt, value);
      if (!(e >= 0) || !std::isfinite(e)) throw InputError(fmt::format("--fn-abs '{}' must be a finite number >= 0", value));
      c.fn_abs = e;
    } else if (opt == "--expect") {
      if (value != "bit-exact")
        throw InputError(fmt::format("--expect '{}': the one expectation is bit-exact (the output equals the model of "
                                     "--plan or --profile bit for bit)",
                                     value));
      c.expect_bit_exact = true;
    }
  }
  if (!c.in) throw InputError("claim: --in F is required (the format of the inputs)");
  if (!c.out) throw InputError("claim: --out F is required (the format of the output)");
  if (c.plan && c.profile) throw InputError("--plan and --profile are exclusive: a profile has its order");
  if (c.ulps && c.compute) throw InputError("--ulps and --compute are exclusive");
  if (c.expect_bit_exact && !c.plan && !c.profile)
    throw InputError("--expect bit-exact needs the model to match: give --plan P or --profile NAME");
  for (const std::string& o : seen)
    if ((o == "--fn-ulps" || o == "--fn-abs" || o == "--exp-ulps") && !c.compute)
      throw InputError(fmt::format("{} needs --compute F (the arithmetic it describes)", o));
  for (const std::string& o : seen)
    if (o == "--exp-ulps")
      for (const std::string& o2 : seen)
        if (o2 == "--fn-ulps") throw InputError("--exp-ulps is --fn-ulps's older name: give one of them");
  if (c.compute && c.compute->kind != FormatKind::binary_float)
    throw InputError(fmt::format("--compute {}: not a float format", c.compute->name));
  // E8M0 (a scale format) holds no 0 and no negative value: no arithmetic computes in it, and
  // no operand is cast to it.
  if (c.compute && !can_accumulate(*c.compute))
    throw InputError(fmt::format("--compute {}: not a signed float format (intermediate values are signed and may be 0)",
                                 c.compute->name));
  if (c.cast && !operand_cast_problem(*c.cast).empty())
    throw InputError(fmt::format("--cast {}: {}", c.cast->name, operand_cast_problem(*c.cast)));
  if (std::find(seen.begin(), seen.end(), "--cast-rounding") != seen.end() && !c.cast)
    throw InputError("--cast-rounding needs --cast F (the cast it rounds): without it nothing is cast");
  // A seed that no rounding draws from would be ignored silently (as convert refuses it too).
  if (std::find(seen.begin(), seen.end(), "--seed") != seen.end() && !rounds_stochastically(c))
    throw InputError(fmt::format("--seed {}: no rounding of this claim is stochastic (--acc-rounding, --out-rounding, "
                                 "--cast-rounding{}), so a seed changes nothing: drop it, or state the stochastic "
                                 "rounding it is for",
                                 c.seed, c.profile ? fmt::format(" or profile {}'s roundings", c.profile_name) : ""));
  if (c.sr_bits > 0 && !rounds_stochastically(c))
    throw InputError(fmt::format("--sr-bits {}: no rounding of this claim is stochastic (--acc-rounding, --out-rounding, "
                                 "--cast-rounding{}): state the stochastic rounding whose random bits it counts",
                                 c.sr_bits, c.profile ? fmt::format(" or profile {}'s roundings", c.profile_name) : ""));
  c.given = std::move(seen);        // (validate_quant_claim names an option only where it was given)
  detail::validate_quant_claim(c);  // a scaled-gemm profile's own refusals first
  // A profile states the accumulation itself: an accumulator option beside it would be ignored,
  // and a claim that says fp16 accumulation must not be judged as the profile's fp32 silently.
  // A tensor-core profile's --acc names which of its units runs (the one with results in that
  // format: claim_block_fma_unit); the unit states the rest.
  if (c.profile)
    for (const std::string& o : c.given)
      if ((o == "--acc" && c.profile->model != ProfileModel::block_fma) || o == "--acc-rounding" || o == "--products-rounded" || o == "--ftz" || o == "--daz" ||
          o == "--zero-start")
        throw InputError(fmt::format("{}: profile {} states the accumulation itself (accumulator format, rounding, "
                                     "products, FTZ/DAZ, start value); give accumulator options with --plan or "
                                     "without a profile, not with --profile{}",
                                     o, c.profile_name,
                                     c.profile->model == ProfileModel::block_fma
                                         ? " (--acc F picks the tensor-core unit with results in F)"
                                         : ""));
  return c;
}

namespace {
/// A claim's options in place of a profile's name ('--in bf16 --profile trn2'): parse_claim
/// would say "--profile needs a value", about a --profile nobody wrote.
void require_profile_name(std::string_view profile, std::string_view what) {
  if (profile.empty() || profile.front() == '-')
    throw InputError(fmt::format("{} '{}' is not a profile: give a profile's name or file (`numfid profiles` lists them), "
                                 "not claim options",
                                 what, printable(profile)));
}
}  // namespace

ClaimSpec claim_with_profile(const ClaimSpec& c, std::string_view profile, std::string_view what) {
  require_profile_name(profile, what);
  ClaimSpec r = c;
  r.plan.reset();
  r.profile.reset();
  r.profile_name.clear();
  const ClaimSpec plain;  // the accumulator options at their defaults: text() leaves them out
  r.acc = plain.acc;
  r.acc_rounding = plain.acc_rounding;
  r.products_rounded = plain.products_rounded;
  r.acc_ftz = plain.acc_ftz;
  r.acc_daz = plain.acc_daz;
  r.acc_zero_start = plain.acc_zero_start;
  r.seed = 0;  // carried over below: the other profile may round stochastically where this claim does not
  r.sr_bits = 0;
  std::string text = r.text();
  append_claim_option(text, "--profile", profile);
  ClaimSpec p = parse_claim(text);
  if (rounds_stochastically(p)) {
    p.seed = c.seed;
    p.sr_bits = c.sr_bits;
  }
  p.quant = c.quant;  // the scale values read already (the profile changes none of them)
  return p;
}

namespace detail {
void refuse_unsigned_accumulator(const FormatSpec& acc) {
  // A float format without a sign (E8M0) holds no 0 and no negative partial sum.
  if (is_float(acc) && !can_accumulate(acc))
    throw InputError(fmt::format("--acc {}: not a signed float format (an accumulator holds signed partial sums and 0)",
                                 acc.name));
}

void refuse_options_of_other_ops(const ClaimSpec& c, bool row_op, std::string_view command) {
  const ClaimSpec plain;
  // The first option of `names` the text stated, at any value: at its default (`--acc fp32`)
  // it would otherwise pass unnoticed. A claim built in code has no text: its fields tell.
  const auto stated = [&c](std::initializer_list<const char*> names) -> const char* {
    for (const std::string& o : c.given)
      for (const char* n : names)
        if (o == n) return n;
    return nullptr;
  };
  if (row_op) {
    refuse_gemm_options(c, command);
    const char* given = stated({"--plan", "--profile", "--acc", "--acc-rounding", "--products-rounded", "--ftz", "--daz",
                                "--zero-start", "--cast", "--cast-rounding", "--probabilistic-defects"});
    if (!given) {
      if (c.plan) given = "--plan";
      else if (c.profile) given = "--profile";
      else if (c.acc != plain.acc) given = "--acc";
      else if (c.acc_rounding != plain.acc_rounding) given = "--acc-rounding";
      else if (c.products_rounded) given = "--products-rounded";
      else if (c.acc_ftz) given = "--ftz";
      else if (c.acc_daz) given = "--daz";
      else if (c.acc_zero_start) given = "--zero-start";
      else if (c.cast) given = "--cast";
      else if (c.cast_rounding != plain.cast_rounding) given = "--cast-rounding";
      else if (c.in_b) given = "--in-b";
      else if (c.probabilistic_defects) given = "--probabilistic-defects";
    }
    if (given)
      throw InputError(fmt::format("{}: {} belongs to a reduction's claim (matmul, dot, sum); a row or elementwise "
                                   "op's arithmetic is --compute F [--fn-ulps N] [--fn-abs E], or --ulps N",
                                   command, given));
    return;
  }
  const char* given = stated({"--compute", "--fn-ulps", "--exp-ulps", "--fn-abs", "--ulps"});
  if (!given) {
    if (c.compute) given = "--compute";
    else if (c.ulps) given = "--ulps";
    else if (c.fn_ulps != plain.fn_ulps) given = "--fn-ulps";
    else if (c.fn_abs != plain.fn_abs) given = "--fn-abs";
  }
  if (given)
    throw InputError(fmt::format("{}: {} states a row or elementwise op's arithmetic; a reduction's is --acc, "
                                 "--acc-rounding, --plan or --profile",
                                 command, given));
}

void refuse_exp_ulps_outside_softmax(const ClaimSpec& c, RowOp op, std::string_view command) {
  if (op != RowOp::softmax && std::find(c.given.begin(), c.given.end(), "--exp-ulps") != c.given.end())
    throw InputError(fmt::format("{}: --exp-ulps is softmax's older name of --fn-ulps: give --fn-ulps", command));
}

void refuse_gemm_options(const ClaimSpec& c, std::string_view command) {
  const char* given = nullptr;
  for (const std::string& o : c.given)
    if (o == "--in-b" || o == "--addend-at" || is_quant_option(o) || is_quant_flag(o)) {
      given = o.c_str();
      break;
    }
  if (!given && c.in_b) given = "--in-b";
  if (!given && c.addend_at != AddendAt::start) given = "--addend-at";
  if (!given && (c.quant.any() || c.quant.scaled())) given = "an integer or block-scaled GEMM option";
  if (given)
    throw InputError(fmt::format("{}: {} belongs to a GEMM's claim (matmul, dot: a second operand's format, where the "
                                 "addend enters, integer zero points and requantisation, block scales); this op has one "
                                 "operand",
                                 command, given));
}

const BlockFmaVariant& claim_block_fma_unit(const ClaimSpec& c, const FormatSpec& a, const FormatSpec& b,
                                            std::string_view hint) {
  const bool acc_given = std::find(c.given.begin(), c.given.end(), "--acc") != c.given.end();
  const BlockFmaVariant& v = block_fma_unit(*c.profile, a, b, acc_given ? *c.acc : *c.out, hint);
  if (acc_given && *v.model.output != *c.acc)
    throw InputError(fmt::format("--acc {}: profile {} has no tensor-core unit for {}{} inputs with {} results (it has "
                                 "{}): --acc names the unit whose results are cast to --out",
                                 c.acc->name, c.profile_name, a.name, a == b ? "" : fmt::format(" x {}", b.name),
                                 c.acc->name, variant_names(*c.profile)));
  return v;
}

bool profile_casts(const Profile& p, const FormatSpec& in, const FormatSpec* in_b) {
  return p.input_cast && (*p.input_cast != in || (in_b && *p.input_cast != *in_b));
}

void refuse_sum_model_options(const ClaimSpec& c, std::string_view command) {
  if (c.profile && c.profile->model != ProfileModel::plan)
    throw InputError(fmt::format("{}: profile {}: a tensor-core or Tensor Engine profile models matmul and dot, not a sum "
                                 "(a sum run as a product with a vector of ones: check dot or matmul)",
                                 command, c.profile->name));
  if (c.cast) throw InputError(fmt::format("{}: --cast applies to matmul and dot operands, not to a sum", command));
}
}  // namespace detail

ClaimSpec parse_claim_with_profile(std::string_view text, std::string_view profile, std::string_view what) {
  require_profile_name(profile, what);
  const std::vector<std::string> tokens = tokenize(text);
  std::string kept;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].starts_with("--profile=")) continue;
    if (tokens[i] == "--profile") {
      ++i;  // and its value (parse_claim names a missing one when the profile is appended)
      continue;
    }
    // Re-quoted as one token each: a plan such as 'blocked(128, pairwise)' stays one value.
    const std::string& t = tokens[i];
    if (const std::size_t eq = t.find('='); t.starts_with("--") && eq != std::string::npos)
      append_claim_option(kept, std::string_view(t).substr(0, eq), std::string_view(t).substr(eq + 1));
    else append_claim_flag(kept, t.starts_with("--") ? t : quoted_value(t));
  }
  append_claim_option(kept, "--profile", profile);
  return parse_claim(kept);
}

std::string ClaimSpec::text() const {
  std::string s;
  auto add = [&s](std::string_view opt, std::string_view v = {}) {
    if (v.empty()) append_claim_flag(s, opt);
    else append_claim_option(s, opt, v);
  };
  if (in) add("--in", in->name);
  if (in_b) add("--in-b", in_b->name);
  if (cast) {
    add("--cast", cast->name);
    if (cast_rounding != Rounding::rne) add("--cast-rounding", rounding_name(cast_rounding));
  }
  if (!profile) {
    if (*acc != fp32) add("--acc", acc->name);  // the default is left out: row-op commands take no --acc
    if (acc_rounding != Rounding::rne) add("--acc-rounding", rounding_name(acc_rounding));
    if (products_rounded) add("--products-rounded");
    if (acc_ftz) add("--ftz");
    if (acc_daz) add("--daz");
    if (acc_zero_start) add("--zero-start");
  }
  if (plan) add("--plan", plan->text());
  if (profile) add("--profile", profile_name);
  if (profile && std::find(given.begin(), given.end(), "--acc") != given.end()) add("--acc", acc->name);
  if (out) add("--out", out->name);
  if (out_rounding) add("--out-rounding", rounding_name(*out_rounding));
  detail::append_quant_claim(s, quant, saturate);  // --saturate among them
  if (addend_at != AddendAt::start) add("--addend-at", addend_at_name(addend_at));
  if (ulps) add("--ulps", fmt::format("{}", *ulps));
  if (compute) {
    add("--compute", compute->name);
    add("--fn-ulps", fmt::format("{}", fn_ulps));
    if (fn_abs > 0) add("--fn-abs", fmt::format("{}", fn_abs));
  }
  if (seed != 0) add("--seed", fmt::format("{}", seed));
  if (sr_bits != 0) add("--sr-bits", fmt::format("{}", sr_bits));
  if (confidence != 0.999999) add("--confidence", fmt::format("{}", confidence));
  if (probabilistic_defects) add("--probabilistic-defects");
  if (expect_bit_exact) add("--expect", "bit-exact");
  return s;
}

// ------------------------------------------------------------------- tensors in memory

std::int64_t TensorData::element_count() const {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) n *= d;
  return n;
}

namespace detail {

std::int64_t element_count_of(std::span<const std::int64_t> shape, std::string_view what) {
  std::int64_t n = 1;
  bool overflow = false;
  for (const std::int64_t d : shape) {
    if (d < 0) throw InputError(fmt::format("{}: shape {} has a negative extent", what, shape_text(shape)));
    overflow = overflow || (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d);
    if (!overflow) n *= d;
  }
  // A zero extent after an overflowing prefix still holds no element.
  if (overflow && std::find(shape.begin(), shape.end(), 0) == shape.end())
    throw InputError(fmt::format("{}: shape {} has more than 2^63 - 1 elements", what, shape_text(shape)));
  return overflow ? 0 : n;
}

}  // namespace detail

namespace {

using detail::shape_text;

TensorData start(std::vector<std::int64_t> shape, std::string_view format, std::string name, std::size_t size) {
  TensorData t;
  t.format = &format_named(format);
  const std::int64_t n = detail::element_count_of(shape, name);
  if (static_cast<std::uint64_t>(n) != size)
    throw InputError(fmt::format("{}: shape {} holds {} elements, the data has {}", name, shape_text(shape), n, size));
  t.shape = std::move(shape);
  t.name = std::move(name);
  t.values.reserve(size);
  return t;
}

template <class T>
TensorData view_values(std::span<const T> data, std::vector<std::int64_t> shape, std::string_view format, std::string name) {
  TensorData t = start(std::move(shape), format, std::move(name), data.size());
  const FpEnvGuard env;  // a caller's DAZ would read a subnormal float as 0 (and call it exact)
  for (std::size_t i = 0; i < data.size(); ++i) {
    const auto v = static_cast<double>(data[i]);
    const std::optional<Bits> b = exactly(*t.format, v);
    if (!b) throw InputError(fmt::format("{}: element {} = {} ({:a}) is not a {} value", t.name, i, v, v, t.format->name));
    t.values.push_back(*b);
  }
  return t;
}

template <class T>
TensorData view_bits(std::span<const T> data, std::vector<std::int64_t> shape, std::string_view format, std::string name) {
  TensorData t = start(std::move(shape), format, std::move(name), data.size());
  for (std::size_t i = 0; i < data.size(); ++i) {
    const Bits b{static_cast<std::uint32_t>(data[i])};
    if (!fits(*t.format, b))
      throw InputError(fmt::format("{}: element {} = {:#x} has bits outside the {}-bit {} pattern", t.name, i,
                                   static_cast<std::uint32_t>(data[i]), t.format->bits, t.format->name));
    t.values.push_back(b);
  }
  return t;
}

}  // namespace

TensorData view(std::span<const float> data, std::vector<std::int64_t> shape, std::string_view format, std::string name) {
  return view_values(data, std::move(shape), format, std::move(name));
}
TensorData view(std::span<const double> data, std::vector<std::int64_t> shape, std::string_view format, std::string name) {
  return view_values(data, std::move(shape), format, std::move(name));
}
TensorData view(std::span<const std::uint16_t> bits, std::vector<std::int64_t> shape, std::string_view format,
                std::string name) {
  return view_bits(bits, std::move(shape), format, std::move(name));
}
TensorData view(std::span<const std::uint8_t> bits, std::vector<std::int64_t> shape, std::string_view format,
                std::string name) {
  return view_bits(bits, std::move(shape), format, std::move(name));
}
TensorData view(std::span<const std::uint32_t> bits, std::vector<std::int64_t> shape, std::string_view format,
                std::string name) {
  return view_bits(bits, std::move(shape), format, std::move(name));
}

}  // namespace numfid
