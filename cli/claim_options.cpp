// Claim options -> claim text -> numfid::parse_claim (claim_options.h).
#include "cli/claim_options.h"

#include "tolerances/quant_check.h"

namespace numfid::cli {

CLI::Option* ClaimOptions::declare_option(CLI::App& app, const std::string& name, const std::string& help,
                                  const std::string& default_text) {
  CLI::Option* o = app.add_option(name, values_[name], help);
  if (!default_text.empty()) o->default_str(default_text);
  entries_.push_back({name, o, false});
  return o;
}

void ClaimOptions::declare(CLI::App& app, ClaimKind kind, bool one_operand) {
  auto opt = [&](const std::string& name, const std::string& help, const std::string& def = {}) {
    declare_option(app, name, help, def);
  };
  auto flag = [&](const std::string& name, const std::string& help) {
    CLI::Option* o = app.add_flag(name, flags_[name], help);
    entries_.push_back({name, o, true});
  };
  const bool reduction = kind != ClaimKind::rows;
  opt("--in", kind == ClaimKind::emulate ? "format of A (and B)" : "format of the inputs (as the kernel reads them)");
  entries_.back().option->required();
  opt("--out", "format of the output");
  entries_.back().option->required();
  if (reduction) {
    opt("--in-b", kind == ClaimKind::emulate ? "format of B when it differs" : "format of B when it differs from A's");
    opt("--acc", kind == ClaimKind::emulate ? "accumulator format (with --plan)" : "accumulator format", "fp32");
    opt("--acc-rounding",
        kind == ClaimKind::emulate ? "accumulator rounding (with --plan)" : "rounding of every accumulation", "rne");
    flag("--products-rounded", kind == ClaimKind::emulate ? "round products to the accumulator first (with --plan)"
                                                          : "products are rounded to the accumulator before adding");
    opt("--cast", "format the kernel casts the inputs to before multiplying (e.g. bf16 autocast)");
    opt("--cast-rounding", "rounding of that cast", "rne");
    flag("--ftz", "the accumulator flushes subnormal results (partial sums, rounded products) to zero (with --plan)");
    flag("--daz", "subnormal inputs (operands, addend) are read as zero (with --plan)");
    flag("--zero-start", "partial sums start from a zeroed register: fl(+0 + t) (with --plan)");
    if (kind == ClaimKind::emulate) {
      opt("--plan", "summation order: sequential, reverse, pairwise, blocked(T[, pairwise|numpy]), splitk(S), strided(L), numpy");
      opt("--profile", "platform profile instead of --plan/--acc (see numfid profiles); a scaled-gemm profile also sets the scale layout and promotion");
    } else {
      opt("--plan", "known summation order: sequential, pairwise, blocked(T), ... (its own bound)");
      opt("--profile", "platform profile (profiles/NAME.yaml): its accumulator, casts and order; a scaled-gemm profile: its scale layout, scale format, promotion and partial sums");
    }
    opt("--addend-at", "where the addend enters: start (the sum's first term, the tensor-core instruction's C), end "
                       "(added to the finished sum in the accumulator, then the output cast: cuBLASLt's bias epilogue, "
                       "F.linear), output (added after the output cast, in the output's format: torch.addmm with a "
                       "bf16/fp16 C)",
        "start");
    opt("--seed", "seed of stochastic roundings (stream = the output element's index)", "0");
    opt("--sr-bits", "stochastic roundings draw this many random bits (1..64; biased toward zero by < 2^-R ulp); "
                     "default: exact stochastic rounding");
    // Integer GEMM (int8/uint8 inputs, --acc int32): zero points and requantisation.
    opt("--zero-point-a", "integer GEMM: zero point subtracted from A's values");
    opt("--zero-point-b", "integer GEMM: zero point subtracted from B's values");
    opt("--out-scale", "integer GEMM: requantisation scale S, S0,S1,... per output column, or a file (.npy of fp32)");
    opt("--out-zero-point", "integer GEMM: zero point added after the rounding (integer outputs)");
    opt("--requant-rounding", "integer GEMM: rounding of acc × scale (rne, rna, rtz, rup, rdn)", "rne");
    flag("--requant-fixed-point", "integer GEMM: gemmlowp/TFLite fixed-point multiplier + shift instead of exact rounding");
    // Scaled float GEMM (fp8/fp6/fp4/bf16 operands with block scales).
    opt("--scale-a", "scaled GEMM: A's scales, ⌈M/R⌉×⌈K/k⌉ (.npy fp32, or uint8 E8M0 patterns: E4M3 under --scale-format fp8_e4m3), or one number");
    opt("--scale-b", "scaled GEMM: B's scales, ⌈K/k⌉×⌈N/R⌉, or one number");
    opt("--scale-block", "scaled GEMM: RxK block of the scales (one for both, or A,B: 1x128,128x128; MX: 1x32)");
    opt("--scale-format", "scaled GEMM: every scale must be a value of fp32, e8m0 or fp8_e4m3 (else exit 2 naming it)");
    opt("--promote-every", "scaled GEMM: partial sums promoted into an fp32 accumulator every N products");
  }
  opt("--out-rounding", "rounding of the output cast", "rne");
  flag("--saturate", "the output cast clamps out-of-range results to ±max finite, ±inf too (OCP saturating mode, "
                     "CUDA .satfinite); an integer output to its range");
  if (kind != ClaimKind::emulate) {
    opt("--confidence", "per-element probability of the probabilistic bound", "0.999999");
    if (reduction)
      flag("--probabilistic-defects",
           "more elements outside the probabilistic bound than chance explains is a defect also under "
           "round-to-nearest (default: only under stochastic rounding, where the bound is a theorem)");
    if (reduction)
      opt("--expect", "bit-exact: the output must equal the model of --plan/--profile bit for bit (else a defect "
                      "listing the differing elements)");
  }
  if (one_operand)
    for (const Entry& e : entries_)
      if (e.name == "--in-b" || e.name == "--addend-at" || e.name == "--cast" || e.name == "--cast-rounding" ||
          numfid::detail::is_quant_option(e.name) || numfid::detail::is_quant_flag(e.name))
        e.option->group("");
}

std::string ClaimOptions::text() const {
  std::string t;
  for (const Entry& e : entries_) {
    if (e.option->count() == 0) continue;
    if (e.flag) append_claim_flag(t, e.name);
    else append_claim_option(t, e.name, values_.at(e.name));
  }
  return t;
}

ClaimSpec ClaimOptions::parse() const { return parse_claim(text()); }

std::string ClaimOptions::value(const std::string& name) const {
  for (const Entry& e : entries_)
    if (e.name == name && e.option->count() > 0) return e.flag ? "1" : values_.at(e.name);
  return {};
}

}  // namespace numfid::cli
