// Platform profiles: named, versioned YAML files (profiles/*.yaml) describing how a platform
// computes a reduction, every field with its provenance (documented URL, published paper,
// measured data set, or assumed + why). Loaded with yaml-cpp and validated strictly.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "numerics/block_fma.h"
#include "numerics/scaled_gemm.h"
#include "numerics/tensor_engine.h"

namespace numfid {

/// A profile file that cannot be used: the message names file:line and what is wrong.
class ProfileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Where a field's value comes from.
struct Provenance {
  enum class Kind : std::uint8_t { documented, published, measured, assumed };
  Kind kind = Kind::assumed;
  std::string text;  ///< URL, paper and section, data set, or the reason for the assumption
};
std::string_view provenance_kind_name(Provenance::Kind k);

/// One field as written in the file (for `numfid profiles show`).
struct ProfileField {
  std::string section, key, value;
  Provenance provenance;
  int line = 0;
};

/// What kind of model a profile describes.
enum class ProfileModel : std::uint8_t {
  plan,           ///< a reduction plan + accumulator (CPUs, GPU reduction kernels)
  tensor_engine,  ///< Trainium / Inferentia2 Tensor Engine + PSUM
  block_fma,      ///< NVIDIA tensor-core block FMA
  scaled_gemm,    ///< a block-scaled GEMM recipe (fp8 with fp32 promotion, MXFP8, NVFP4, MX)
};

/// "plan", "tensor-engine", "block-fma", "scaled-gemm": the `model` key's values.
std::string_view profile_model_name(ProfileModel m);

struct Profile;

/// A block-scaled GEMM recipe: the `block_scaling` section of a scaled-gemm profile. It stands
/// for the claim options --scale-block, --scale-format, --promote-every and the partial sums'
/// arithmetic (--profile BLOCK-FMA or --acc F --acc-rounding R); the scale tensors themselves
/// come from --scale-a/--scale-b. Promotion is o = fma(fp32(sa·sb), partial, o) (the one kind).
struct BlockScaling {
  std::vector<const FormatSpec*> operands;     ///< the operand formats A and B may have
  ScaleBlock block_a, block_b;                 ///< scale blocks (rows x K) of A and of B
  const FormatSpec* scale_format = nullptr;    ///< fp32, e8m0 or fp8_e4m3: every scale must be a value of it
  std::optional<std::int64_t> promote_every;   ///< products per promoted partial sum; absent: one per scale block
  /// The partial sums' arithmetic: a block-FMA profile (its X->fp32 variants, loaded from the
  /// same directory), or null: the profile's own accumulator section (products exact).
  std::shared_ptr<const Profile> partials;
};
/// One tensor-core instruction's model in a block-fma profile.
struct BlockFmaVariant {
  std::string name;         ///< e.g. "H100 fp16->fp32"
  std::string instruction;  ///< the PTX instruction the parameters describe
  BlockFmaModel model;      ///< (model.name is left empty: `name` owns the text)
  /// Empty for a variant of the file (its fields carry their provenance). For a mixed-operand
  /// unit derived from two of them (Profile::mixed_variants): where it comes from, as
  /// "assumed: ..." with the reason.
  std::string provenance;
};

/// A loaded profile.
struct Profile {
  std::string name, summary, path;
  int version = 0;
  ProfileModel model = ProfileModel::plan;
  std::vector<ProfileField> fields;  ///< in file order
  /// Operand cast applied before the products (compiler auto-cast); nullptr: none.
  const FormatSpec* input_cast = nullptr;
  Rounding input_cast_rounding = Rounding::rne;
  ReductionModel reduction;    ///< plan, accumulator and output rounding (plan model)
  TensorEngineModel te;        ///< tensor_engine model
  std::vector<const FormatSpec*> double_row_formats;  ///< operand formats that use fp8 double-row mode
  std::string device;                    ///< block_fma: the GPU
  std::vector<BlockFmaVariant> variants;  ///< block_fma: one model per input/output format pair
  /// block_fma: the E4M3 x E5M2 (and E5M2 x E4M3) units, derived by the loader from two variants
  /// with the same output and otherwise identical parameters (block_fma_unit).
  std::vector<BlockFmaVariant> mixed_variants;
  /// Accuracy claims of elementwise functions in ulps (e.g. exp: 2), from the `elementwise` section.
  std::map<std::string, double> elementwise_ulps;
  std::optional<BlockScaling> block_scaling;  ///< scaled_gemm: the recipe
};

/// The Tensor Engine model for operands of format `in` (double-row mode where it applies).
TensorEngineModel tensor_engine_for(const Profile& p, const FormatSpec& in);

/// The block-FMA model of a block-fma profile for inputs `in` and outputs `out`; nullptr if
/// the profile has none (the caller names the pairs it has, see variant_names).
const BlockFmaModel* block_fma_for(const Profile& p, const FormatSpec& in, const FormatSpec& out);

/// The unit a block-fma profile runs for A in `a`, B in `b` and results in `out`: the variant
/// for (a, out), else the one for (a, fp32) whose result the caller casts to `out`. Where b
/// differs from a, the mixed-operand unit of Profile::mixed_variants for that output: it exists
/// where the instruction set takes the two formats as A and B of one instruction (PTX
/// mma.sync/wgmma .e4m3 x .e5m2, either order) and the profile's units for a and for b are the
/// same unit read with another input format (unit_difference empty). Otherwise an InputError
/// saying why (no unit for a, no instruction for the pair, no unit for b, or the two units
/// differ and in which parameter), followed by `hint`. The one resolution behind check, tol,
/// emulate, the prediction, the scaled GEMM and the Python module.
const BlockFmaVariant& block_fma_unit(const Profile& p, const FormatSpec& a, const FormatSpec& b, const FormatSpec& out,
                                      std::string_view hint = {});

/// Derives p.mixed_variants from p.variants (load_profile calls it; a profile built in memory
/// calls it after filling `variants`).
void derive_mixed_variants(Profile& p);

/// "fp16->fp32, bf16->fp32, ..." for messages.
std::string variant_names(const Profile& p);

/// The largest profile file read (1 MiB; the shipped ones are a few KiB): a larger file is a
/// ProfileError, not an allocation.
inline constexpr std::size_t max_profile_bytes = std::size_t{1} << 20;

/// Loads and validates one profile file. Everything wrong with it is a ProfileError naming
/// file:line: not a regular file, larger than max_profile_bytes, YAML syntax, nesting deeper
/// than yaml-cpp's limit, a second document, a duplicate key in any mapping, unknown keys,
/// values of the wrong kind, integers out of range (tile_k at most max_plan_parameter, the
/// block_fma sizes at most 2^31 - 1), elementwise ulps that are not finite and >= 0, a
/// block_scaling field out of its domain (a scale block that is not RxK with 1 <= R, K <=
/// 2^31 - 1, a scale format other than fp32/e8m0/fp8_e4m3, a promotion interval that does not
/// divide the blocks' K extent, partial sums naming a profile that is not a block-fma profile
/// of the same directory or that lacks an operand's ->fp32 variant).
Profile load_profile(const std::string& path);

/// The same for a profile held in memory; `path` is used in messages and for the name check
/// (its stem must equal the profile's name). The entry point of the profile fuzz target.
Profile load_profile_text(const std::string& text, const std::string& path);

/// The profile directory: $NUMFID_PROFILES if set, else an installed numfid's (beside the running
/// program's bin/ as ../share/numfid/profiles, or the package the program was built against),
/// else (build tree) the source tree's profiles/.
std::string profile_directory();

/// Names of the profiles in `dir` (file stems of *.yaml), sorted.
std::vector<std::string> list_profiles(const std::string& dir = profile_directory());

/// Loads profile `name` from `dir`; throws ProfileError naming the known profiles if absent.
Profile find_profile(const std::string& name, const std::string& dir = profile_directory());

}  // namespace numfid
