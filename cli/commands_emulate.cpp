// `numfid emulate` (the bit-exact output a plan or platform profile predicts) and
// `numfid profiles` (the profiles and the provenance of every field).
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "cli/claim_options.h"
#include "cli/commands_verdict.h"
#include "io/error.h"
#include "io/tensor_io.h"
#include "numerics/profile.h"
#include "tolerances/quant_check.h"
#include "tolerances/scale_files.h"

namespace numfid::cli {

namespace {

struct EmulateArgs {
  ClaimOptions claim;
  std::string a, b, c, output, c_format;
};

/// Refuses an --output that is not .npy/.safetensors, cannot be written or is one of the
/// command's inputs, before any work.
void check_emulate_output(const std::string& output, const std::vector<NamedFile>& inputs) {
  if (!output.ends_with(".npy") && !output.ends_with(".safetensors"))
    throw UsageError(fmt::format("--output {}: the file name must end in .npy or .safetensors", output));
  check_output(output, "--output", inputs);
}

/// Writes the emulated tensor (all or nothing) and says what ran.
int write_emulated(const std::string& output, const TensorData& d, const ClaimSpec& claim, const FormatSpec& in) {
  try {
    write_tensor(output, make_tensor(*d.format, d.shape, d.values));
  } catch (const InputError& x) {
    throw UsageError(fmt::format("--output {}: {}", output, x.what()));
  }
  fmt::print(stderr, "numfid emulate: wrote {} ({} {} values, {})\n", output, d.values.size(), d.format->name,
             emulation_description(claim, in));
  return exit_ok;
}

int run_emulate(const EmulateArgs& e, bool dot) {
  ClaimSpec claim = e.claim.parse();
  read_claim_scale_files(claim);  // tolerances/scale_files.h
  // An integer GEMM is exact in every order, a scaled GEMM has its promotion model: no plan
  // needed (tolerances/quant_check.h).
  if (!is_quantised_claim(claim) && !claim.plan == !claim.profile)
    throw UsageError("give exactly one of --plan P or --profile NAME");
  check_emulate_output(e.output, {{e.a, "--a"}, {e.b, "--b"}, {e.c, "--c"}, {e.claim.value("--scale-a"), "--scale-a"},
                                  {e.claim.value("--scale-b"), "--scale-b"}, {e.claim.value("--out-scale"), "--out-scale"}});
  const FormatSpec& fa = *claim.in;
  const FormatSpec& fb = claim.in_b ? *claim.in_b : fa;
  // Shapes from the headers first: a wrong-shaped operand is refused before any value is read.
  const Tensor ta = read_operand(e.a, "--a"), tb = read_operand(e.b, "--b");
  std::optional<Tensor> tc;
  if (!e.c.empty()) tc = read_operand(e.c, "--c");
  const ShapeRef sa{ta.shape, ta.source}, sb{tb.shape, tb.source};
  const ShapeRef sc = tc ? ShapeRef{tc->shape, tc->source} : ShapeRef{};
  if (dot) rowwise_dot_dims(sa, sb, tc ? &sc : nullptr);
  else matmul_dims(sa, sb, tc ? &sc : nullptr);
  const TensorData A = operand_values(ta, fa, "--a"), B = operand_values(tb, fb, "--b");
  std::optional<TensorData> C;
  // C's values: --c-format, else the accumulator's (fp32 under a profile, which states no --acc);
  // --c-format without --c is refused.
  const FormatSpec& fc = addend_format(claim, tc.has_value(), given_text(e.c_format), "--c-format", "--c");
  if (tc) C = operand_values(*tc, fc, "--c");
  return write_emulated(e.output, dot ? emulate_dot(A, B, C, claim) : emulate_matmul(A, B, C, claim), claim, fa);
}

struct EmulateSumArgs {
  ClaimOptions claim;
  std::string x, output;
  int axis = -1;
};

/// `emulate sum`: the plan's sum along one axis (tolerances/check.h emulate_sum), the output
/// `check sum --expect bit-exact` compares against.
int run_emulate_sum(const EmulateSumArgs& e) {
  const ClaimSpec claim = e.claim.parse();
  if (!claim.plan == !claim.profile) throw UsageError("give exactly one of --plan P or --profile NAME");
  check_emulate_output(e.output, {{e.x, "--x"}});
  const TensorData X = operand_values(read_operand(e.x, "--x"), *claim.in, "--x");
  const int rc = write_emulated(e.output, emulate_sum(X, e.axis, claim), claim, *claim.in);
  if (const std::string note = numpy_strided_axis_note(X, e.axis, claim); !note.empty())
    fmt::print(stderr, "numfid emulate: {}\n", note);
  return rc;
}

void add_emulate_options(CLI::App& app, EmulateArgs& e) {
  app.add_option("--a", e.a, "A (.npy or FILE.safetensors:NAME)")->required();
  app.add_option("--b", e.b, "B")->required();
  app.add_option("--c", e.c, "addend C (it starts each sum; --addend-at end|output: added after it)");
  app.add_option("--c-format", e.c_format,
                 "format of C's values (default: the accumulator's; the output's under --addend-at output)");
  e.claim.declare(app, ClaimKind::emulate);
  app.add_option("--output", e.output, "where to write the result (.npy or .safetensors)")->check(output_file())->required();
}

int run_profiles(const std::string& action, const std::string& name) {
  const std::string dir = profile_directory();
  if (action.empty() || action == "list") {
    if (!name.empty())
      throw UsageError(fmt::format("profiles list takes no NAME ('{}'): `numfid profiles show {}` shows one", printable(name),
                                   printable(name)));
    if (std::error_code ec; std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
      throw UsageError(fmt::format("{} is not a directory: NUMFID_PROFILES names the folder of profile YAML files", dir));
    const auto names = list_profiles(dir);
    if (names.empty()) throw UsageError(fmt::format("no profiles in {} (set NUMFID_PROFILES)", dir));
    // Every profile is loaded before anything is printed: a broken one is an error, not a
    // table cut short.
    std::vector<Profile> loaded;
    for (const auto& n : names) {
      try {
        loaded.push_back(load_profile(dir + "/" + n + ".yaml"));
      } catch (const ProfileError& e) {
        throw UsageError(e.what());
      }
    }
    std::size_t width = 22;
    for (const auto& n : names) width = std::max(width, printable(n).size());
    fmt::print("{:<{}} {:<14} {}\n", "profile", width, "model", "summary");
    for (std::size_t i = 0; i < names.size(); ++i) {
      const Profile& p = loaded[i];
      fmt::print("{:<{}} {:<14} {}\n", printable(names[i]), width, profile_model_name(p.model), printable(p.summary));
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
  // Names, values and provenance come from the file: their control bytes are escaped.
  fmt::print("{} (version {}): {}\nfile: {}\n", printable(p.name), p.version, printable(p.summary), printable(p.path));
  std::string section;
  for (const ProfileField& f : p.fields) {
    if (f.section != section) fmt::print("{}:\n", printable(section = f.section));
    fmt::print("  {:<16} {:<24} [{}] {}\n", printable(f.key), printable(f.value), provenance_kind_name(f.provenance.kind),
               printable(f.provenance.text));
  }
  // Units the loader derives from two of the file's (mixed E4M3 x E5M2: numerics/profile.h,
  // block_fma_unit), each with its provenance ("assumed: ...").
  if (!p.mixed_variants.empty()) fmt::print("derived units (--in F_A --in-b F_B):\n");
  for (const BlockFmaVariant& v : p.mixed_variants)
    fmt::print("  {:<40} {}\n", printable(v.name), printable(v.provenance));
  return exit_ok;
}

}  // namespace

Command add_emulate_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("emulate", "write the bit-exact output a plan or platform profile predicts");
  app->require_subcommand(1);
  auto mm = std::make_shared<EmulateArgs>();
  auto dt = std::make_shared<EmulateArgs>();
  CLI::App* m =
      app->add_subcommand("matmul", "D = C + A·B, A: M×K, B: K×N (or stacks: A [..., M, K], B K×N or [..., K, N])");
  add_emulate_options(*m, *mm);
  CLI::App* d = app->add_subcommand("dot", "row-wise D[r] = C[r] + Σ_k A[r,k]·B[r,k], A and B: R×K");
  add_emulate_options(*d, *dt);
  auto sm = std::make_shared<EmulateSumArgs>();
  CLI::App* s = app->add_subcommand("sum", "D = sum of X along an axis (the plan's order), X's shape without that axis");
  s->add_option("--x", sm->x, "X (.npy or FILE.safetensors:NAME)")->required();
  s->add_option("--axis", sm->axis, "axis summed (negative counts from the end)")->capture_default_str();
  sm->claim.declare(*s, ClaimKind::emulate, true);
  s->add_option("--output", sm->output, "where to write the result (.npy or .safetensors)")->check(output_file())->required();
  return {app, [=]() {
            if (s->parsed()) return run_emulate_sum(*sm);
            return m->parsed() ? run_emulate(*mm, false) : run_emulate(*dt, true);
          }};
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
