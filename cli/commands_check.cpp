// `numfid check` and `numfid tol`: parse the options, load the operands, call the check
// pipeline (tolerances/check.h) and print what it returns. No numerics here.
#include <cstdio>
#include <optional>

#include <fmt/format.h>

#include "cli/claim_options.h"
#include "cli/commands_verdict.h"
#include "io/tensor_io.h"
#include "tolerances/quant_check.h"
#include "tolerances/row_bounds.h"
#include "tolerances/scale_files.h"

namespace numfid::cli {

namespace {

/// Writes the JSON (all or nothing) and then prints the report: a JSON that cannot be written
/// is an input error (exit 2) before any verdict is printed. Returns the exit code.
int report(const CheckResult& r, const std::string& json_path) {
  if (!json_path.empty()) write_text_output(json_path, r.json(), "--json");
  fmt::print("{}", r.text());
  return r.exit_code();
}

// ------------------------------------------------------------------- check matmul

struct MatmulArgs {
  bool dot = false;  ///< `check dot`: row-wise D[r] = C[r] + Σ_k A[r,k]·B[r,k]
  ClaimOptions claim;
  std::string a, b, c, addend, addend_format, json, ref, ref_profile;
  int worst = 8;
};

int run_check_matmul(const MatmulArgs& m) {
  ClaimSpec claim = m.claim.parse();
  read_claim_scale_files(claim);  // tolerances/scale_files.h
  if (!m.json.empty())
    check_output(m.json, "--json",
                 {{m.a, "--a"}, {m.b, "--b"}, {m.c, "--c"}, {m.addend, "--addend"}, {m.ref, "--ref"},
                  {m.claim.value("--scale-a"), "--scale-a"}, {m.claim.value("--scale-b"), "--scale-b"},
                  {m.claim.value("--out-scale"), "--out-scale"}});
  // An integer GEMM is exact on every platform: its reference is judged under the same claim.
  const bool integer = is_integer_claim(claim);
  if (!m.ref.empty() && m.ref_profile.empty() && !integer)
    throw UsageError("--ref needs --ref-profile (the platform that produced the reference)");
  if (m.ref.empty() && !m.ref_profile.empty())
    throw UsageError("--ref-profile names the platform of a reference output: give that output with --ref R");
  if (integer && !m.ref_profile.empty())
    throw UsageError("--ref-profile: an integer GEMM takes no profile (it is exact on every platform); give --ref R "
                     "alone: both outputs are judged against the exact result");
  const FormatSpec& fa = *claim.in;
  const FormatSpec& fb = claim.in_b ? *claim.in_b : fa;
  // Shapes from the headers first: a wrong-shaped operand is refused before any value is read.
  const Tensor ta = read_operand(m.a, "--a"), tb = read_operand(m.b, "--b"), tc = read_operand(m.c, "--c");
  std::optional<Tensor> td, tr;
  if (!m.addend.empty()) td = read_operand(m.addend, "--addend");
  if (!m.ref.empty()) tr = read_operand(m.ref, "--ref");
  const ShapeRef sd = td ? ShapeRef{td->shape, td->source} : ShapeRef{}, sr = tr ? ShapeRef{tr->shape, tr->source} : ShapeRef{};
  matmul_check_dims({ta.shape, ta.source}, {tb.shape, tb.source}, {tc.shape, tc.source}, td ? &sd : nullptr,
                    tr ? &sr : nullptr, m.dot);
  const TensorData A = operand_values(ta, fa, "--a"), B = operand_values(tb, fb, "--b"),
                   C = operand_values(tc, *claim.out, "--c");
  MatmulCheckOptions o;
  o.worst = m.worst;
  const FormatSpec& fd = addend_format(claim, td.has_value(), given_text(m.addend_format), "--addend-format", "--addend");
  if (td) o.addend = operand_values(*td, fd, "--addend");
  if (tr) {
    o.ref = operand_values(*tr, *claim.out, "--ref");
    if (!integer) {
      o.ref_claim = claim_with_profile(m.claim.parse(), m.ref_profile, "--ref-profile");
      read_claim_scale_files(*o.ref_claim);
    }
  }
  return report(m.dot ? check_dot(A, B, C, claim, o) : check_matmul(A, B, C, claim, o), m.json);
}

// ------------------------------------------------------------------- check sum

struct SumArgs {
  ClaimOptions claim;
  std::string x, c, json;
  int axis = -1;
  int worst = 8;
};

int run_check_sum(const SumArgs& a) {
  const ClaimSpec claim = a.claim.parse();
  if (!a.json.empty()) check_output(a.json, "--json", {{a.x, "--x"}, {a.c, "--c"}});
  const TensorData X = load_operand(a.x, *claim.in, "--x"), C = load_operand(a.c, *claim.out, "--c");
  return report(check_sum(X, C, a.axis, claim, a.worst), a.json);
}

// ------------------------------------------------------------------- check elementwise / rows

struct RowArgs {
  RowOp op = RowOp::softmax;
  const CLI::App* app = nullptr;  ///< the op's subcommand: which options were given
  ClaimOptions claim;
  std::string x, c, json, gamma, beta, param_format, variance, softmax, norm_form, masked_row;
  double eps = RowCheckOptions{}.eps;
  int worst = 8, axis = RowCheckOptions{}.axis;
};

/// `value` if the option `name` was given on the command line (even at its default), else nothing.
template <class T>
std::optional<T> given(const CLI::App& app, const char* name, const T& value) {
  const CLI::Option* o = app.get_option_no_throw(name);
  return o != nullptr && o->count() > 0 ? std::optional<T>(value) : std::nullopt;
}

int run_check_rows(const RowArgs& a) {
  const ClaimSpec claim = a.claim.parse();
  if (!a.json.empty())
    check_output(a.json, "--json", {{a.x, "--x"}, {a.c, "--c"}, {a.gamma, "--gamma"}, {a.beta, "--beta"}});
  const FormatSpec& fin = *claim.in;
  const TensorData X = load_operand(a.x, fin, "--x"), C = load_operand(a.c, *claim.out, "--c");
  RowCheckOptions o;
  o.worst = a.worst;
  const CLI::App& app = *a.app;
  apply_row_options(o, a.op,
                    {.axis = given(app, "--axis", a.axis),
                     .eps = given(app, "--eps", a.eps),
                     .variance = given(app, "--variance", a.variance),
                     .norm_form = given(app, "--norm-form", a.norm_form),
                     .softmax = given(app, "--softmax", a.softmax),
                     .param_format = given(app, "--param-format", a.param_format),
                     .masked_row = given(app, "--masked-row", a.masked_row)},
                    claim, !a.gamma.empty() || !a.beta.empty());
  const FormatSpec& fparam = o.param_format != nullptr ? *o.param_format : fin;
  if (!a.gamma.empty()) o.gamma = load_operand(a.gamma, fparam, "--gamma");
  if (!a.beta.empty()) o.beta = load_operand(a.beta, fparam, "--beta");
  return report(check_rows(a.op, X, C, claim, o), a.json);
}

// ------------------------------------------------------------------- tol

struct TolArgs {
  std::string op = "matmul";
  const CLI::App* app = nullptr;
  ClaimOptions claim;
  std::string variance, softmax, norm_form;
  double eps = RowCheckOptions{}.eps;
  std::int64_t k = 0;
  bool addend = false, json = false;
  std::string ref_profile, target_profile;
};

int run_tol(const TolArgs& t) {
  const CLI::App& app = *t.app;
  const ToleranceResult r = tol(t.op, t.claim.text(), t.k,
                                {.addend = t.addend,
                                 .ref_profile = given(app, "--ref-profile", t.ref_profile),
                                 .target_profile = given(app, "--target-profile", t.target_profile),
                                 .eps = given(app, "--eps", t.eps),
                                 .variance = given(app, "--variance", t.variance),
                                 .norm_form = given(app, "--norm-form", t.norm_form),
                                 .softmax = given(app, "--softmax", t.softmax)});
  fmt::print("{}", t.json ? r.json() : r.text());
  return exit_ok;
}

}  // namespace

Command add_check_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("check", "is an output consistent with its claimed arithmetic? (exit 0 consistent, 1 defect, 2 input error)");
  app->require_subcommand(1);
  auto mm = std::make_shared<MatmulArgs>();
  auto dt = std::make_shared<MatmulArgs>();
  dt->dot = true;
  auto sum = std::make_shared<SumArgs>();
  auto rows = std::make_shared<RowArgs>();
  // matmul and the row-wise dot take the same options; only the shapes differ.
  // Which op takes which option: the library's table (check_takes), as gate files and Python.
  const auto reduction_options = [](CLI::App* c, MatmulArgs& a, const char* out_shape) {
    const auto takes = [&](std::string_view option) { return check_takes(c->get_name(), option); };
    c->add_option("--a", a.a, "A (.npy or FILE.safetensors:NAME)")->required();
    c->add_option("--b", a.b, "B")->required();
    c->add_option("--c", a.c, fmt::format("the output to judge ({})", out_shape))->required();
    if (takes("addend")) c->add_option("--addend", a.addend, fmt::format("the addend the kernel added ({})", out_shape));
    if (takes("addend_format"))
      c->add_option("--addend-format", a.addend_format,
                    "format of the addend (default: the accumulator's; the output's under --addend-at output)");
    if (takes("ref"))
      c->add_option("--ref", a.ref,
                    "judge the output against this reference output of another platform instead of the exact result");
    if (takes("ref_profile")) c->add_option("--ref-profile", a.ref_profile, "the profile of the platform that produced --ref");
    c->add_option("--json", a.json, "also write the verdict as JSON")->check(output_file());
    c->add_option("--worst", a.worst, "elements to list")->check(CLI::Range(0, max_worst))->capture_default_str();
    a.claim.declare(*c, ClaimKind::reduction);
  };
  CLI::App* m = app->add_subcommand("matmul", "C = A·B (+ addend), A: M×K, B: K×N, C: M×N (or stacks: A [..., M, K], "
                                              "B K×N or [..., K, N], C [..., M, N])");
  reduction_options(m, *mm, "M×N");
  CLI::App* d = app->add_subcommand("dot", "row-wise D[r] = C[r] + Σ_k A[r,k]·B[r,k], A and B: R×K, D: R (as `emulate dot`)");
  reduction_options(d, *dt, "R elements");
  CLI::App* s = app->add_subcommand("sum", "C = sum of X along an axis");
  s->add_option("--x", sum->x, "X")->required();
  s->add_option("--c", sum->c, "the output to judge")->required();
  if (check_takes("sum", "axis"))
    s->add_option("--axis", sum->axis, "axis summed (negative counts from the end)")->capture_default_str();
  s->add_option("--json", sum->json, "also write the verdict as JSON")->check(output_file());
  s->add_option("--worst", sum->worst, "elements to list")->check(CLI::Range(0, max_worst))->capture_default_str();
  sum->claim.declare(*s, ClaimKind::reduction, true);
  std::vector<std::pair<CLI::App*, RowOp>> row_apps;
  for (const RowOp op : row_ops()) {
    const std::string name(row_op_name(op));
    CLI::App* r = app->add_subcommand(
        name, check_takes(name, "axis")
                  ? fmt::format("C = {}(X) (rows: the last axis, or --axis), under --compute F (derived bound) or --ulps N", name)
                  : fmt::format("C = {}(X) elementwise, under --compute F (derived bound) or --ulps N", name));
    r->add_option("--x", rows->x, "X")->required();
    r->add_option("--c", rows->c, "the output to judge")->required();
    rows->claim.declare_option(*r, "--compute",
                               "the format the op computes in, rounding to nearest (fp32, bf16, fp16, fp64): bound "
                               "derived from its textbook formula");
    rows->claim.declare_option(*r, "--fn-ulps", "with --compute: accuracy of each elementary function in compute ulps", "1");
    rows->claim.declare_option(*r, "--fn-abs", "with --compute: ... and/or its absolute error (polynomial approximations)");
    // softmax's older name of --fn-ulps; hidden on the other ops, whose claim the library refuses
    // with its own message (refuse_exp_ulps_outside_softmax) rather than CLI11's "not expected".
    CLI::Option* exp_ulps = rows->claim.declare_option(*r, "--exp-ulps", "older name of --fn-ulps");
    if (op != RowOp::softmax) exp_ulps->group("");
    rows->claim.declare_option(*r, "--ulps", "or: claimed accuracy in output ulps at the exact value (0.5 = correctly rounded)");
    r->add_option("--json", rows->json, "also write the verdict as JSON")->check(output_file());
    r->add_option("--worst", rows->worst, "elements to list")->check(CLI::Range(0, max_worst))->capture_default_str();
    // Which op takes which option: the library's table (check_takes), as gate files and Python.
    const auto takes = [&](std::string_view option) { return check_takes(name, option); };
    if (takes("axis"))
      r->add_option("--axis", rows->axis,
                    "the axis the op runs along (negative counts from the end; PyTorch's dim); elements are listed at "
                    "their index in C (JSON's row and col: the row and the position along the axis)")
          ->capture_default_str();
    if (takes("softmax"))
      r->add_option("--softmax", rows->softmax,
                    "with --compute: textbook (max, then Σ exp; the default) or online (running max and rescaled sum, "
                    "any merge tree)");
    if (takes("masked_row"))
      r->add_option("--masked-row", rows->masked_row,
                    "what a fully masked row (every entry -inf) must give: nan (0/0, torch.softmax; the default) or "
                    "zero (a guarded kernel: PyTorch's _safe_softmax, FlashAttention-style)");
    if (takes("eps"))
      r->add_option("--eps", rows->eps, "epsilon added to the variance, inside the square root")->capture_default_str();
    if (takes("gamma")) r->add_option("--gamma", rows->gamma, "scale, 1-D, one per column");
    if (takes("beta")) r->add_option("--beta", rows->beta, "shift, 1-D, one per column");
    if (takes("param_format")) r->add_option("--param-format", rows->param_format, "format of gamma/beta (default: --in)");
    if (takes("variance"))
      r->add_option("--variance", rows->variance,
                    "with --compute: two-pass, welford, sumsq, any (those three; the default), chan (Welford runs "
                    "merged by Chan's update in any tree) or rowwise-moments(V) (PyTorch CPU's tree, V lanes)");
    if (takes("norm_form"))
      r->add_option("--norm-form", rows->norm_form,
                    "with --compute: centred ((x - μ)·r; the default) or shifted (x·r + b, b = -r·μ rounded: PyTorch CPU)");
    rows->claim.declare(*r, ClaimKind::rows);
    row_apps.emplace_back(r, op);
  }
  return {app, [=]() {
            if (m->parsed()) return run_check_matmul(*mm);
            if (d->parsed()) return run_check_matmul(*dt);
            if (s->parsed()) return run_check_sum(*sum);
            for (const auto& [r, op] : row_apps)
              if (r->parsed()) {
                rows->op = op;
                rows->app = r;
                return run_check_rows(*rows);
              }
            return exit_usage;
          }};
}

Command add_tol_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("tol", "tolerance calculator: the bounds a claim implies, with their derivation");
  auto t = std::make_shared<TolArgs>();
  t->app = app;
  const std::vector<std::string> ops = check_op_names();
  app->add_option("op", t->op, "matmul, dot, sum, or a row/elementwise op (softmax, layernorm, gelu_erf, ...: with --compute)")
      ->check(CLI::IsMember(ops))
      ->capture_default_str();
  app->add_option("--k", t->k, "reduction length K (row ops: the row length)")->required();
  t->claim.declare_option(*app, "--compute", "row ops: the format the op computes in (fp32, bf16, fp16, fp64)");
  t->claim.declare_option(*app, "--fn-ulps", "row ops: accuracy of each elementary function in compute ulps", "1");
  t->claim.declare_option(*app, "--fn-abs", "row ops: ... and/or its absolute error");
  app->add_option("--variance", t->variance,
                  "layernorm: two-pass, welford, sumsq, any (those three; the default), chan or rowwise-moments(V)");
  app->add_option("--norm-form", t->norm_form, "layernorm: centred (the default) or shifted");
  app->add_option("--softmax", t->softmax, "softmax/log_softmax: textbook (the default) or online");
  app->add_option("--eps", t->eps, "layernorm/rmsnorm: epsilon inside the square root")->capture_default_str();
  app->add_flag("--addend", t->addend, "the sum starts from an addend C (D = C + A·B)");
  app->add_flag("--json", t->json, "print JSON instead of text");
  app->add_option("--ref-profile", t->ref_profile, "cross-platform: bound |out_A - out_B| for profile A ...");
  app->add_option("--target-profile", t->target_profile, "... and profile B");
  t->claim.declare(*app, ClaimKind::reduction);
  return {app, [=]() { return run_tol(*t); }};
}

}  // namespace numfid::cli
