// Which op of `check` and `tol` takes which option: one table each, consulted by the CLI's
// declarations, gate files and Python's keywords, so that the three cannot drift apart (they
// once did: Python's axis= was ignored by row ops, default-valued options were accepted on ops
// that do not take them). And the two calls that turn options given as text into options of
// the pipeline: apply_row_options (check) and tol.
#include <fmt/format.h>

#include "formats/error.h"
#include "numerics/profile.h"
#include "tolerances/check.h"
#include "tolerances/check_detail.h"
#include "tolerances/row_bounds.h"

namespace numfid {

namespace {

/// The kinds of op, as bits, so that a table row can name several.
enum OpBits : unsigned {
  kReduction = 1,  ///< matmul, dot
  kSum = 2,
  kSoftmax = 4,
  kLayernorm = 8,
  kRmsnorm = 16,
  kElementwise = 32,
  kLogSoftmax = 64,
};

unsigned op_bit(std::string_view op) {
  if (op == "matmul" || op == "dot") return kReduction;
  if (op == "sum") return kSum;
  const std::optional<RowOp> row = find_row_op(op);
  if (!row) return 0;
  switch (*row) {
    case RowOp::softmax: return kSoftmax;
    case RowOp::log_softmax: return kLogSoftmax;
    case RowOp::layernorm: return kLayernorm;
    case RowOp::rmsnorm: return kRmsnorm;
    default: return kElementwise;
  }
}

struct OptionRow {
  std::string_view name;
  bool operand;  ///< an optional operand (a tensor), not an option
  unsigned ops;  ///< OpBits of the ops that take it
};

// `check OP`: the options and optional operands beyond the claim, the required operands,
// --json and --worst (which every op takes).
constexpr OptionRow kCheckOptions[] = {
    {"addend", true, kReduction},
    {"addend_format", false, kReduction},
    {"ref", true, kReduction},
    {"ref_profile", false, kReduction},
    {"axis", false, kSum | kSoftmax | kLogSoftmax | kLayernorm | kRmsnorm},
    {"softmax", false, kSoftmax | kLogSoftmax},
    // softmax only: guarded attention kernels write zeros in a fully masked row (MaskedRow);
    // for log_softmax (-inf - (-inf) = NaN) we know of no convention to offer instead.
    {"masked_row", false, kSoftmax},
    {"eps", false, kLayernorm | kRmsnorm},
    {"gamma", true, kLayernorm | kRmsnorm},
    {"beta", true, kLayernorm},
    {"param_format", false, kLayernorm | kRmsnorm},
    {"variance", false, kLayernorm},
    {"norm_form", false, kLayernorm},
};

// `tol OP`: rows of K elements have no axis and no parameters (their values do not enter the
// derivation); a reduction's options.
constexpr OptionRow kTolOptions[] = {
    {"addend", false, kReduction},  // check sum has no addend
    {"ref_profile", false, kReduction | kSum},
    {"target_profile", false, kReduction | kSum},
    {"eps", false, kLayernorm | kRmsnorm},
    {"variance", false, kLayernorm},
    {"norm_form", false, kLayernorm},
    {"softmax", false, kSoftmax | kLogSoftmax},
};

template <std::size_t N>
bool takes(const OptionRow (&table)[N], std::string_view op, std::string_view name) {
  const unsigned bit = op_bit(op);
  for (const OptionRow& r : table)
    if (r.name == name) return (r.ops & bit) != 0;
  return false;
}

std::string flag(std::string_view name) {
  std::string f = "--";
  for (const char ch : name) f += ch == '_' ? '-' : ch;
  return f;
}

}  // namespace

std::vector<std::string> check_op_names() {
  std::vector<std::string> v{"matmul", "dot", "sum"};
  for (const RowOp op : row_ops()) v.emplace_back(row_op_name(op));
  return v;
}

bool check_takes(std::string_view op, std::string_view name) { return takes(kCheckOptions, op, name); }

std::string check_options_list(std::string_view op) {
  std::string list;
  const unsigned bit = op_bit(op);
  for (const OptionRow& r : kCheckOptions)
    if (!r.operand && (r.ops & bit) != 0) list += fmt::format("{}{}", list.empty() ? "" : ", ", r.name);
  return list;
}

void apply_row_options(RowCheckOptions& o, RowOp op, const RowOptionsGiven& g, const ClaimSpec& claim,
                       bool params_given) {
  const std::string_view name = row_op_name(op);
  const std::pair<bool, std::string_view> given[] = {
      {g.axis.has_value(), "axis"},         {g.eps.has_value(), "eps"},
      {g.variance.has_value(), "variance"}, {g.norm_form.has_value(), "norm_form"},
      {g.softmax.has_value(), "softmax"},   {g.param_format.has_value(), "param_format"},
      {g.masked_row.has_value(), "masked_row"}};
  for (const auto& [is_given, option] : given)
    if (is_given && !check_takes(name, option)) {
      const std::string list = check_options_list(name);
      throw InputError(fmt::format("check {}: option {} does not apply to {}{}", name, option, name,
                                   list.empty() ? std::string() : fmt::format(" (it takes {})", list)));
    }
  if (claim.ulps) {  // (a claim with neither: check_rows and row_tolerance ask for the arithmetic)
    const std::pair<bool, std::string_view> method[] = {
        {g.variance.has_value(), "--variance"}, {g.norm_form.has_value(), "--norm-form"}, {g.softmax.has_value(), "--softmax"}};
    for (const auto& [is_given, option] : method)
      if (is_given)
        throw InputError(fmt::format("check {}: {} describes the arithmetic of --compute F; an --ulps claim states an "
                                     "accuracy at the exact value, which no method changes (give --compute, or drop {})",
                                     name, option, option));
  }
  if (g.param_format && !params_given)
    throw InputError(fmt::format("check {}: --param-format names the format of --gamma/--beta, and neither is given", name));
  if (g.axis) o.axis = *g.axis;
  if (g.eps) o.eps = *g.eps;
  if (g.variance) {
    const VarianceChoice v = variance_named(*g.variance);
    o.variance = v.method;
    o.variance_lanes = v.lanes;
  }
  if (g.norm_form) o.norm_form = norm_form_named(*g.norm_form);
  if (g.softmax) o.softmax = softmax_method_named(*g.softmax);
  if (g.masked_row) o.masked_row = masked_row_named(*g.masked_row);
  if (g.param_format) o.param_format = &format_named(*g.param_format);
}

const FormatSpec& addend_format(const ClaimSpec& claim, bool has_addend, const std::optional<std::string>& named,
                                std::string_view format_what, std::string_view addend_what) {
  if (named && !has_addend)
    throw InputError(fmt::format("{} names the format of an addend: give the addend with {}", format_what, addend_what));
  // After the output cast the addend is added in the output's format (torch.addmm's C has the
  // output's dtype); elsewhere it enters the accumulator.
  if (!named && claim.addend_at == AddendAt::output && claim.out != nullptr) return *claim.out;
  return named ? format_named(*named) : *claim.acc;
}

ToleranceResult tol(std::string_view op, std::string_view claim_text, std::int64_t k, const TolRequest& r) {
  if (op_bit(op) == 0)  // tolerance() alone takes matmul, dot and sum: name every op tol takes
    throw InputError(fmt::format("tol: unknown op '{}' (known: {})", op, fmt::join(check_op_names(), ", ")));
  const std::pair<bool, std::string_view> given[] = {
      {r.addend, "addend"},
      {r.ref_profile.has_value(), "ref_profile"},
      {r.target_profile.has_value(), "target_profile"},
      {r.eps.has_value(), "eps"},
      {r.variance.has_value(), "variance"},
      {r.norm_form.has_value(), "norm_form"},
      {r.softmax.has_value(), "softmax"}};
  for (const auto& [is_given, option] : given)
    if (is_given && !takes(kTolOptions, op, option))
      throw InputError(fmt::format("tol {}: {} does not apply to {}", op, flag(option), op));
  const std::optional<RowOp> row = find_row_op(op);
  if (k <= 0)
    throw InputError(row ? "--k: the row length must be a positive integer"
                         : "--k: the reduction length K must be a positive integer");
  if (row) {  // the derivation for rows of k elements
    RowCheckOptions o;
    const ClaimSpec claim = parse_claim(claim_text);
    if (claim.compute)  // (without it row_tolerance asks for the arithmetic, whatever the options)
      apply_row_options(o, *row,
                        {.axis = {}, .eps = r.eps, .variance = r.variance, .norm_form = r.norm_form, .softmax = r.softmax,
                         .param_format = {}, .masked_row = {}},
                        claim, false);
    return row_tolerance(*row, claim, static_cast<std::size_t>(k), o);
  }
  const ClaimSpec parsed = parse_claim(claim_text);
  if (op == "sum") detail::refuse_gemm_options(parsed, "tol sum");  // as check sum does
  if (r.target_profile && parsed.profile)
    throw InputError(fmt::format("tol {}: --target-profile '{}' and the claim's --profile {} both name the target platform: "
                                 "give one of them",
                                 op, *r.target_profile, parsed.profile->name));
  ToleranceOptions o;
  o.addend = r.addend;
  if (r.ref_profile) o.ref_claim = claim_with_profile(parsed, *r.ref_profile);
  return tolerance(op, k, r.target_profile ? parse_claim_with_profile(claim_text, *r.target_profile) : parsed, o);
}

}  // namespace numfid
