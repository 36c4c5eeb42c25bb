// `numfid quantize`: MX-quantise a float tensor into the element and E8M0 scale tensors a
// block-scaled GEMM reads (OCP MX v1.0 §6.3; numerics/scaled_gemm.h quantize_mx_operand).
#include <limits>

#include <fmt/format.h>

#include "cli/commands_verdict.h"
#include "io/error.h"
#include "io/tensor_io.h"
#include "numerics/scaled_gemm.h"

namespace numfid::cli {

namespace {

struct QuantizeArgs {
  std::string x, in, mx, elements, scales, operand = "a", rounding = "rne";
  std::size_t block = mx_default_block_size;
};

void write_output(const std::string& path, const FormatSpec& f, std::vector<std::int64_t> shape,
                  std::span<const Bits> values, const char* what) {
  try {
    write_tensor(path, make_tensor(f, std::move(shape), values));
  } catch (const InputError& e) {
    throw UsageError(fmt::format("{} {}: {}", what, path, e.what()));
  }
}

int run_quantize(const QuantizeArgs& q) {
  const MxFormat* f = find_mx_format(q.mx);
  if (!f) throw UsageError(fmt::format("--mx '{}': unknown MX format (mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, "
                                       "mxfp4_e2m1, mxint8)",
                                       q.mx));
  if (q.block == 0) throw UsageError("--block: the block size must be positive");
  // The scale block the printed --scale-block states must be one a claim takes (1xk, k < 2^31).
  if (q.block > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw UsageError(fmt::format("--block {}: at most 2^31 - 1 elements per block", q.block));
  for (const std::string* p : {&q.elements, &q.scales})
    if (!p->ends_with(".npy") && !p->ends_with(".safetensors"))
      throw UsageError(fmt::format("{}: the file name must end in .npy or .safetensors", *p));
  check_output(q.elements, "--elements", {{q.x, "--x"}, {q.scales, "--scales"}});
  check_output(q.scales, "--scales", {{q.x, "--x"}});
  const FormatSpec& from = format_named(q.in);
  RoundOptions o;
  o.rounding = rounding_named(q.rounding, "--rounding");
  if (o.rounding == Rounding::stochastic)  // no stream to name: a quantisation is to be reproducible
    throw UsageError("--rounding stochastic: quantize rounds deterministically (rne, rtz, rup, rdn or rna)");
  const TensorData x = load_operand(q.x, from, "--x");
  if (x.shape.size() != 2) throw UsageError(fmt::format("--x {}: a matrix (2 dimensions) is needed", q.x));
  const bool b = q.operand == "b";
  const MxOperand m = quantize_mx_operand(*f, x.values, from, x.shape[0], x.shape[1], b, q.block, o);
  write_output(q.elements, *f->element, x.shape, m.elements, "--elements");
  write_output(q.scales, e8m0, {m.scale_rows, m.scale_cols}, m.scales, "--scales");
  fmt::print(stderr, "numfid quantize: {} blocks of {} along K ({}'s layout: --scale-block 1x{}), elements {} -> {}, "
                     "E8M0 scales [{}, {}] -> {}\n",
             m.scales.size(), q.block, b ? "B" : "A", q.block, f->element->name, q.elements, m.scale_rows, m.scale_cols,
             q.scales);
  return exit_ok;
}

}  // namespace

Command add_quantize_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("quantize", "MX-quantise a matrix into elements and E8M0 scales (OCP MX v1.0 §6.3)");
  auto q = std::make_shared<QuantizeArgs>();
  app->add_option("--x", q->x, "the matrix (.npy or FILE.safetensors:NAME)")->required();
  app->add_option("--in", q->in, "format of its values")->required();
  app->add_option("--mx", q->mx, "MX format: mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, mxfp4_e2m1, mxint8")->required();
  app->add_option("--operand", q->operand, "a: A (M×K), blocks along rows; b: B (K×N), blocks down columns")
      ->check(CLI::IsMember({"a", "b"}))
      ->capture_default_str();
  app->add_option("--block", q->block, "elements per block along K")->capture_default_str();
  app->add_option("--rounding", q->rounding, "rounding of the elements (rne, rtz, rup, rdn, rna)")->capture_default_str();
  app->add_option("--elements", q->elements, "where to write the elements (.npy / .safetensors)")->check(output_file())->required();
  app->add_option("--scales", q->scales, "where to write the E8M0 scales (uint8 patterns)")->check(output_file())->required();
  return {app, [=]() { return run_quantize(*q); }};
}

}  // namespace numfid::cli
