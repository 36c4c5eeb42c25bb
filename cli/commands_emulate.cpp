// `numfid emulate` (the bit-exact output a plan or platform profile predicts) and
// `numfid profiles` (the profiles and the provenance of every field).
#include <fmt/format.h>

#include "cli/commands_verdict.h"
#include "formats/convert.h"
#include "io/error.h"
#include "io/tensor_io.h"
#include "numerics/profile.h"

namespace numfid::cli {

namespace {

struct EmulateArgs {
  std::string a, b, c, output, in, in_b, c_format, acc = "fp32", acc_rounding = "rne", out, out_rounding = "rne";
  std::string plan, profile;
  bool products_rounded = false, ftz = false;
  std::uint64_t seed = 0;
};

void write_output(const EmulateArgs& e, const FormatSpec& fout, std::vector<std::int64_t> shape, const std::vector<Bits>& d,
                  const std::string& what) {
  try {
    write_tensor(e.output, make_tensor(fout, std::move(shape), d));
  } catch (const InputError& x) {
    throw UsageError(fmt::format("--output {}: {}", e.output, x.what()));
  }
  fmt::print(stderr, "numfid emulate: wrote {} ({} {} values, {})\n", e.output, d.size(), fout.name, what);
}

/// A tensor-core profile: each element is one chained block-FMA dot (numerics/block_fma.h),
/// its result (in the instruction's output format) cast to --out.
int run_block_fma(const EmulateArgs& e, const Profile& p, const FormatSpec& fa, const FormatSpec& fb,
                  const FormatSpec& fout, bool dot, const Operand& A, const Operand& B, const std::optional<Operand>& C,
                  const FormatSpec* fc, const MatmulShape& sh) {
  if (&fa != &fb) throw UsageError("a tensor-core profile takes A and B of one format");
  const BlockFmaModel* m = block_fma_for(p, fa, fout);
  if (!m) m = block_fma_for(p, fa, fp32);
  if (!m) throw UsageError(fmt::format("profile {} has no tensor-core model for {} inputs (it has {})", p.name, fa.name, variant_names(p)));
  const std::int64_t M = sh.m, K = sh.k, N = dot ? 1 : sh.n;
  RoundOptions o;
  o.rounding = parse_mode(e.out_rounding, "--out-rounding");
  o.seed = e.seed;
  // Rows of A, and of B (dot) or of B transposed (matmul): each dot reads two contiguous rows.
  std::vector<Bits> bt;
  if (!dot) {
    bt.resize(B.values.size());
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t j = 0; j < N; ++j)
        bt[static_cast<std::size_t>(j * K + k)] = B.values[static_cast<std::size_t>(k * N + j)];
  }
  const std::span<const Bits> brows = dot ? std::span<const Bits>(B.values) : std::span<const Bits>(bt);
  const auto row = [&](std::span<const Bits> v, std::int64_t r) {
    return v.subspan(static_cast<std::size_t>(r * K), static_cast<std::size_t>(K));
  };
  std::vector<Bits> d(static_cast<std::size_t>(M * N));
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      const std::size_t e_idx = static_cast<std::size_t>(i * N + j);
      const Bits c = C ? convert(*fc, *m->output, C->values[e_idx]).bits : zero(*m->output, false);
      o.stream = e_idx;
      d[e_idx] = convert(*m->output, fout, block_fma_dot(*m, row(A.values, i), row(brows, dot ? i : j), c).bits, o).bits;
    }
  write_output(e, fout, dot ? std::vector<std::int64_t>{M} : std::vector<std::int64_t>{M, N}, d,
               fmt::format("profile {} v{}: {}->{} block FMA", p.name, p.version, m->input->name, m->output->name));
  return exit_ok;
}

int run_emulate(const EmulateArgs& e, bool dot) {
  const FormatSpec& fa = lookup_format(e.in);
  const FormatSpec& fb = e.in_b.empty() ? fa : lookup_format(e.in_b);
  const FormatSpec& fout = lookup_format(e.out);
  if (e.plan.empty() == e.profile.empty()) throw UsageError("give exactly one of --plan P or --profile NAME");
  if (!e.output.ends_with(".npy") && !e.output.ends_with(".safetensors"))
    throw UsageError(fmt::format("--output {}: the file name must end in .npy or .safetensors", e.output));
  const Operand A = load_operand(e.a, fa, "--a"), B = load_operand(e.b, fb, "--b");
  std::optional<Operand> C;
  // C's values: --c-format, else the accumulator's (fp32 under a profile).
  const FormatSpec* fc =
      e.c.empty() ? nullptr : &lookup_format(!e.c_format.empty() ? e.c_format : e.profile.empty() ? e.acc : "fp32");
  MatmulShape sh;
  try {
    if (fc) {
      C = load_operand(e.c, *fc, "--c");
      C->tensor.source = e.c;
    }
    sh = dot ? check_rowwise_dot_shapes(A.tensor, B.tensor, C ? &C->tensor : nullptr)
             : check_matmul_shapes(A.tensor, B.tensor, C ? &C->tensor : nullptr);
  } catch (const InputError& x) {
    throw UsageError(x.what());
  }
  ReductionModel m;
  m.acc.format = &lookup_format(e.acc);
  m.acc.rounding.rounding = parse_mode(e.acc_rounding, "--acc-rounding");
  m.acc.rounding.ftz = e.ftz;
  m.acc.rounding.seed = e.seed;
  m.acc.products_rounded = e.products_rounded;
  m.output = &fout;
  m.output_rounding.rounding = parse_mode(e.out_rounding, "--out-rounding");
  m.output_rounding.seed = e.seed;
  std::optional<Profile> p;
  if (!e.plan.empty()) {
    std::string err;
    const auto plan = ReductionPlan::parse(e.plan, &err);
    if (!plan) throw UsageError("--plan: " + err);
    m.plan = *plan;
  } else {
    try {
      p = find_profile(e.profile);
    } catch (const ProfileError& x) {
      throw UsageError(x.what());
    }
    if (p->model == ProfileModel::block_fma) return run_block_fma(e, *p, fa, fb, fout, dot, A, B, C, fc, sh);
    m.acc = p->reduction.acc;
    m.acc.rounding.seed = e.seed;
    m.plan = p->reduction.plan;
    if (e.out_rounding == "rne") m.output_rounding = p->reduction.output_rounding;
    m.output_rounding.seed = e.seed;
  }
  const std::int64_t M = sh.m, K = sh.k, N = sh.n;
  std::vector<Bits> d;
  std::optional<MatrixView> cv;
  if (C) cv = MatrixView{fc, C->values, dot ? M : M, dot ? 1 : N};
  if (dot && p && p->model == ProfileModel::tensor_engine) {
    // Row r is a 1×K · K×1 product on the Tensor Engine (casts, double-row mode and PSUM included).
    TensorEngineModel te = tensor_engine_for(*p, fa);
    te.output = &fout;
    te.output_rounding = m.output_rounding;
    d.resize(static_cast<std::size_t>(M));
    for (std::int64_t r = 0; r < M; ++r) {
      const auto row = [&](const std::vector<Bits>& v) { return std::span<const Bits>(v).subspan(static_cast<std::size_t>(r * K), static_cast<std::size_t>(K)); };
      std::optional<MatrixView> cr;
      if (cv) cr = MatrixView{fc, cv->data.subspan(static_cast<std::size_t>(r), 1), 1, 1};
      d[static_cast<std::size_t>(r)] = tensor_engine_matmul(te, {&fa, row(A.values), 1, K}, {&fb, row(B.values), K, 1}, cr)[0];
    }
  } else if (dot) {
    d = emulate_dot_rows({&fa, A.values, M, K}, {&fb, B.values, M, K}, cv, m);
  } else if (p && p->model == ProfileModel::tensor_engine) {
    TensorEngineModel te = tensor_engine_for(*p, fa);
    te.output = &fout;
    te.output_rounding = m.output_rounding;
    te.array_acc.rounding.seed = te.psum.rounding.seed = e.seed;
    d = tensor_engine_matmul(te, {&fa, A.values, M, K}, {&fb, B.values, K, N}, cv);
  } else {
    if (p && p->input_cast) throw UsageError(fmt::format("profile {}: input casts apply to tensor-engine profiles", p->name));
    d = emulate_matmul({&fa, A.values, M, K}, {&fb, B.values, K, N}, cv, m);
  }
  write_output(e, fout, dot ? std::vector<std::int64_t>{M} : std::vector<std::int64_t>{M, N}, d,
               p ? fmt::format("profile {} v{}", p->name, p->version) : "plan " + m.plan.text());
  return exit_ok;
}

void add_emulate_options(CLI::App& app, EmulateArgs& e) {
  app.add_option("--a", e.a, "A (.npy or FILE.safetensors:NAME)")->required();
  app.add_option("--b", e.b, "B")->required();
  app.add_option("--c", e.c, "addend C that starts each sum");
  app.add_option("--c-format", e.c_format, "format of C's values (default: the accumulator's)");
  app.add_option("--in", e.in, "format of A (and B)")->required();
  app.add_option("--in-b", e.in_b, "format of B when it differs");
  app.add_option("--acc", e.acc, "accumulator format (with --plan)")->capture_default_str();
  app.add_option("--acc-rounding", e.acc_rounding, "accumulator rounding (with --plan)")->capture_default_str();
  app.add_flag("--products-rounded", e.products_rounded, "round products to the accumulator first (with --plan)");
  app.add_flag("--ftz", e.ftz, "flush subnormal partial sums (with --plan)");
  app.add_option("--plan", e.plan, "summation order: sequential, reverse, pairwise, blocked(T[, pairwise|numpy]), "
                                   "splitk(S), strided(L), numpy");
  app.add_option("--profile", e.profile, "platform profile instead of --plan/--acc (see numfid profiles)");
  app.add_option("--out", e.out, "output format")->required();
  app.add_option("--out-rounding", e.out_rounding, "rounding of the output cast")->capture_default_str();
  app.add_option("--seed", e.seed, "seed of stochastic roundings")->capture_default_str();
  app.add_option("--output", e.output, "where to write the result (.npy or .safetensors)")->required();
}

int run_profiles(const std::string& action, const std::string& name) {
  const std::string dir = profile_directory();
  if (action.empty() || action == "list") {
    const auto names = list_profiles(dir);
    if (names.empty()) throw UsageError(fmt::format("no profiles in {} (set NUMFID_PROFILES)", dir));
    fmt::print("{:<22} {:<14} {}\n", "profile", "model", "summary");
    for (const auto& n : names) {
      try {
        const Profile p = load_profile(dir + "/" + n + ".yaml");
        const char* model = p.model == ProfileModel::plan ? "plan" : p.model == ProfileModel::tensor_engine ? "tensor-engine" : "block-fma";
        fmt::print("{:<22} {:<14} {}\n", n, model, p.summary);
      } catch (const ProfileError& e) {
        throw UsageError(e.what());
      }
    }
    return exit_ok;
  }
  if (action != "show") throw UsageError(fmt::format("profiles: unknown action '{}' (list, show NAME)", action));
  if (name.empty()) throw UsageError("profiles show: give a profile NAME");
  Profile p;
  try {
    p = find_profile(name, dir);
  } catch (const ProfileError& e) {
    throw UsageError(e.what());
  }
  fmt::print("{} (version {}): {}\nfile: {}\n", p.name, p.version, p.summary, p.path);
  std::string section;
  for (const ProfileField& f : p.fields) {
    if (f.section != section) fmt::print("{}:\n", section = f.section);
    fmt::print("  {:<16} {:<24} [{}] {}\n", f.key, f.value, provenance_kind_name(f.provenance.kind), f.provenance.text);
  }
  return exit_ok;
}

}  // namespace

Command add_emulate_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("emulate", "write the bit-exact output a plan or platform profile predicts");
  app->require_subcommand(1);
  auto mm = std::make_shared<EmulateArgs>();
  auto dt = std::make_shared<EmulateArgs>();
  CLI::App* m = app->add_subcommand("matmul", "D = C + A·B, A: M×K, B: K×N");
  add_emulate_options(*m, *mm);
  CLI::App* d = app->add_subcommand("dot", "row-wise D[r] = C[r] + Σ_k A[r,k]·B[r,k], A and B: R×K");
  add_emulate_options(*d, *dt);
  return {app, [=]() { return m->parsed() ? run_emulate(*mm, false) : run_emulate(*dt, true); }};
}

Command add_profiles_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("profiles", "list the platform profiles, or show one with provenance");
  auto action = std::make_shared<std::string>();
  auto name = std::make_shared<std::string>();
  app->add_option("action", *action, "list (default) or show");
  app->add_option("name", *name, "profile name (show)");
  return {app, [=]() { return run_profiles(*action, *name); }};
}

}  // namespace numfid::cli
