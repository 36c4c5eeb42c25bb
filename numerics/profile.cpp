// Profile loading: strict schema (unknown keys and bad values are errors naming file:line),
// provenance required on every field.
#include "numerics/profile.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <set>

namespace numfid {

std::string_view provenance_kind_name(Provenance::Kind k) {
  switch (k) {
    case Provenance::Kind::documented: return "documented";
    case Provenance::Kind::published: return "published";
    case Provenance::Kind::measured: return "measured";
    case Provenance::Kind::assumed: return "assumed";
  }
  return "?";
}

namespace {

struct Loader {
  std::string path;
  Profile p;

  [[noreturn]] void fail(const YAML::Node& n, const std::string& msg) const {
    const YAML::Mark m = n.Mark();
    throw ProfileError(fmt::format("{}:{}: {}", path, m.line >= 0 ? m.line + 1 : 0, msg));
  }

  static std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  }

  void check_keys(const YAML::Node& map, const std::vector<std::string>& allowed, const std::string& where) const {
    if (!map.IsMap()) fail(map, fmt::format("{} must be a mapping", where));
    for (const auto& kv : map) {
      const std::string k = kv.first.as<std::string>();
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
        fail(kv.first, fmt::format("unknown key '{}' in {} (valid: {})", k, where, join(allowed)));
    }
  }

  /// A field: {value: X, <documented|published|measured|assumed>: text}.
  std::string field(const YAML::Node& section, const std::string& sname, const std::string& key, bool required) {
    const YAML::Node n = section[key];
    if (!n) {
      if (required) fail(section, fmt::format("{}: missing field '{}'", sname, key));
      return {};
    }
    check_keys(n, {"value", "documented", "published", "measured", "assumed", "note"}, fmt::format("{}.{}", sname, key));
    if (!n["value"]) fail(n, fmt::format("{}.{}: missing 'value'", sname, key));
    ProfileField f;
    f.section = sname;
    f.key = key;
    f.line = n.Mark().line + 1;
    const YAML::Node v = n["value"];
    if (v.IsSequence()) {
      for (const auto& x : v) f.value += (f.value.empty() ? "" : ", ") + x.as<std::string>();
    } else if (v.IsScalar()) {
      f.value = v.as<std::string>();
    } else {
      fail(v, fmt::format("{}.{}: value must be a scalar or a list", sname, key));
    }
    int kinds = 0;
    for (auto [name, kind] : {std::pair{"documented", Provenance::Kind::documented},
                              std::pair{"published", Provenance::Kind::published},
                              std::pair{"measured", Provenance::Kind::measured},
                              std::pair{"assumed", Provenance::Kind::assumed}}) {
      if (n[name]) {
        ++kinds;
        f.provenance = {kind, n[name].as<std::string>()};
        if (f.provenance.text.empty()) fail(n[name], fmt::format("{}.{}: empty {} provenance", sname, key, name));
      }
    }
    if (kinds != 1)
      fail(n, fmt::format("{}.{}: exactly one provenance (documented, published, measured or assumed) is required, "
                          "found {}",
                          sname, key, kinds));
    p.fields.push_back(f);
    return f.value;
  }

  const FormatSpec* format(const YAML::Node& section, const std::string& sname, const std::string& key, bool allow_none) {
    const std::string v = field(section, sname, key, true);
    if (allow_none && v == "none") return nullptr;
    const FormatSpec* f = find_format(v);
    if (!f) fail(section[key], fmt::format("{}.{}: unknown format '{}' (valid: {})", sname, key, v, format_names()));
    return f;
  }

  Rounding rounding(const YAML::Node& section, const std::string& sname, const std::string& key) {
    const std::string v = field(section, sname, key, true);
    const auto r = parse_rounding(v);
    if (!r) fail(section[key], fmt::format("{}.{}: unknown rounding '{}' (valid: rne, rtz, rup, rdn, rna, stochastic)", sname, key, v));
    return *r;
  }

  bool boolean(const YAML::Node& section, const std::string& sname, const std::string& key) {
    const std::string v = field(section, sname, key, false);
    if (v.empty() || v == "false") return false;
    if (v == "true") return true;
    fail(section[key], fmt::format("{}.{}: '{}' is not true or false", sname, key, v));
  }

  std::int64_t integer(const YAML::Node& section, const std::string& sname, const std::string& key) {
    const std::string v = field(section, sname, key, true);
    try {
      std::size_t used = 0;
      const long long x = std::stoll(v, &used);
      if (used == v.size() && x > 0) return x;
    } catch (const std::exception&) {
    }
    fail(section[key], fmt::format("{}.{}: '{}' is not a positive integer", sname, key, v));
  }

  std::int64_t signed_integer(const YAML::Node& section, const std::string& sname, const std::string& key,
                              std::int64_t min) {
    const std::string v = field(section, sname, key, true);
    try {
      std::size_t used = 0;
      const long long x = std::stoll(v, &used);
      if (used == v.size() && x >= min) return x;
    } catch (const std::exception&) {
    }
    fail(section[key], fmt::format("{}.{}: '{}' is not an integer >= {}", sname, key, v, min));
  }

  template <typename E>
  E choice(const YAML::Node& section, const std::string& sname, const std::string& key,
           std::initializer_list<std::pair<const char*, E>> options) {
    const std::string v = field(section, sname, key, true);
    std::vector<std::string> names;
    for (const auto& [n, e] : options) {
      if (v == n) return e;
      names.emplace_back(n);
    }
    fail(section[key], fmt::format("{}.{}: '{}' must be one of {}", sname, key, v, join(names)));
  }

  /// One block_fma variant: every BlockFmaModel field, each with its provenance.
  void variant(const YAML::Node& v) {
    check_keys(v,
               {"name", "instruction", "input", "output", "datapath", "block_size", "instruction_k", "interleave",
                "addend", "addend_rounding", "accumulator_fraction_bits", "extra_alignment_bits", "alignment",
                "min_alignment_exponent", "normalisation", "final_rounding", "input_subnormals", "output_subnormals",
                "overflow_to_infinity", "nan"},
               "a block_fma variant");
    if (!v["name"] || !v["name"].IsScalar()) fail(v, "a block_fma variant needs a name");
    BlockFmaVariant bv;
    bv.name = v["name"].as<std::string>();
    bv.instruction = v["instruction"] ? v["instruction"].as<std::string>() : "";
    const std::string sn = "block_fma[" + bv.name + "]";
    BlockFmaModel& m = bv.model;
    m.input = format(v, sn, "input", false);
    m.output = format(v, sn, "output", false);
    m.datapath = v["datapath"] ? format(v, sn, "datapath", true) : nullptr;
    m.block_size = static_cast<int>(integer(v, sn, "block_size"));
    m.instruction_k = static_cast<int>(integer(v, sn, "instruction_k"));
    m.interleave = v["interleave"] ? static_cast<int>(signed_integer(v, sn, "interleave", 0)) : 0;
    m.addend = choice<AddendEntry>(v, sn, "addend", {{"in_block", AddendEntry::in_block}, {"after_blocks", AddendEntry::after_blocks}});
    if (v["addend_rounding"]) m.addend_rounding = rounding(v, sn, "addend_rounding");
    m.accumulator_fraction_bits = static_cast<int>(integer(v, sn, "accumulator_fraction_bits"));
    m.extra_alignment_bits = static_cast<int>(signed_integer(v, sn, "extra_alignment_bits", 0));
    m.alignment = choice<AlignmentRounding>(v, sn, "alignment", {{"truncate", AlignmentRounding::truncate}, {"rne", AlignmentRounding::rne}});
    m.min_alignment_exponent = static_cast<int>(signed_integer(v, sn, "min_alignment_exponent", -100000));
    m.normalisation = choice<Normalisation>(v, sn, "normalisation",
                                            {{"normalised", Normalisation::normalised}, {"at_alignment", Normalisation::at_alignment}});
    m.final_rounding = rounding(v, sn, "final_rounding");
    m.input_subnormals = choice<bool>(v, sn, "input_subnormals", {{"keep", true}, {"flush", false}});
    m.output_subnormals = choice<bool>(v, sn, "output_subnormals", {{"keep", true}, {"flush", false}});
    m.overflow_to_infinity = choice<bool>(v, sn, "overflow_to_infinity", {{"true", true}, {"false", false}});
    m.nan = choice<NanResult>(v, sn, "nan", {{"canonical", NanResult::canonical}, {"all_ones", NanResult::all_ones}});
    if (const std::string err = validate(m); !err.empty()) fail(v, fmt::format("{}: {}", sn, err));
    for (const BlockFmaVariant& o : p.variants)
      if (o.model.input == m.input && o.model.output == m.output)
        fail(v, fmt::format("{}: a second variant for {}->{}", sn, m.input->name, m.output->name));
    p.variants.push_back(std::move(bv));
  }

  AccumulatorModel accumulator(const YAML::Node& s, const std::string& sname) {
    check_keys(s, {"format", "rounding", "ftz", "products"}, sname);
    AccumulatorModel a;
    a.format = format(s, sname, "format", false);
    if (a.format->kind != FormatKind::binary_float) fail(s["format"], fmt::format("{}.format must be a float format", sname));
    a.rounding.rounding = rounding(s, sname, "rounding");
    a.rounding.ftz = boolean(s, sname, "ftz");
    const std::string prod = s["products"] ? field(s, sname, "products", false) : "exact";
    if (prod != "exact" && prod != "rounded")
      fail(s["products"], fmt::format("{}.products: '{}' must be exact or rounded", sname, prod));
    a.products_rounded = prod == "rounded";
    return a;
  }

  void load() {
    YAML::Node root;
    try {
      root = YAML::LoadFile(path);
    } catch (const YAML::BadFile&) {
      throw ProfileError(fmt::format("{}: cannot open profile", path));
    } catch (const YAML::Exception& e) {
      throw ProfileError(fmt::format("{}:{}: {}", path, e.mark.line + 1, e.msg));
    }
    check_keys(root,
               {"name", "version", "summary", "model", "input_cast", "plan", "accumulator", "tensor_engine",
                "block_fma", "output", "elementwise"},
               "the profile");
    for (const char* k : {"name", "version", "summary", "model"})
      if (!root[k] || !root[k].IsScalar()) fail(root, fmt::format("missing top-level '{}'", k));
    p.name = root["name"].as<std::string>();
    const std::string stem = std::filesystem::path(path).stem().string();
    if (p.name != stem) fail(root["name"], fmt::format("name '{}' does not match the file name '{}'", p.name, stem));
    try {
      p.version = root["version"].as<int>();
    } catch (const YAML::Exception&) {
      fail(root["version"], "version must be an integer");
    }
    if (p.version < 1) fail(root["version"], "version must be >= 1");
    p.summary = root["summary"].as<std::string>();
    const std::string model = root["model"].as<std::string>();
    if (model == "plan") p.model = ProfileModel::plan;
    else if (model == "tensor-engine") p.model = ProfileModel::tensor_engine;
    else if (model == "block-fma") p.model = ProfileModel::block_fma;
    else fail(root["model"], fmt::format("unknown model '{}' (valid: plan, tensor-engine, block-fma)", model));

    if (const YAML::Node s = root["input_cast"]) {
      check_keys(s, {"format", "rounding"}, "input_cast");
      p.input_cast = format(s, "input_cast", "format", true);
      if (s["rounding"]) p.input_cast_rounding = rounding(s, "input_cast", "rounding");
    }
    if (const YAML::Node s = root["output"]) {
      check_keys(s, {"rounding"}, "output");
      p.reduction.output_rounding.rounding = rounding(s, "output", "rounding");
    }
    if (const YAML::Node s = root["elementwise"]) {
      check_keys(s, {"exp", "log", "tanh", "sigmoid", "silu", "gelu", "gelu_tanh", "reciprocal", "rsqrt", "softmax",
                     "log_softmax", "layernorm", "rmsnorm"},
                 "elementwise");
      for (const auto& kv : s) {
        const std::string fn = kv.first.as<std::string>();
        const std::string v = field(s, "elementwise", fn, true);
        try {
          p.elementwise_ulps[fn] = std::stod(v);
        } catch (const std::exception&) {
          fail(kv.second, fmt::format("elementwise.{}: '{}' is not a number of ulps", fn, v));
        }
      }
    }
    const bool needs_acc = p.model != ProfileModel::block_fma;
    if (needs_acc && !root["accumulator"]) fail(root, "missing section 'accumulator'");
    if (root["accumulator"]) p.reduction.acc = accumulator(root["accumulator"], "accumulator");
    switch (p.model) {
      case ProfileModel::plan: {
        const YAML::Node s = root["plan"];
        if (!s) fail(root, "model 'plan' needs a 'plan' section");
        check_keys(s, {"order"}, "plan");
        const std::string text = field(s, "plan", "order", true);
        std::string err;
        const auto plan = ReductionPlan::parse(text, &err);
        if (!plan) fail(s["order"], "plan.order: " + err);
        p.reduction.plan = *plan;
        if (root["tensor_engine"] || root["block_fma"]) fail(root, "model 'plan' takes no tensor_engine/block_fma section");
        break;
      }
      case ProfileModel::tensor_engine: {
        const YAML::Node s = root["tensor_engine"];
        if (!s) fail(root, "model 'tensor-engine' needs a 'tensor_engine' section");
        check_keys(s, {"tile_k", "double_row", "inner_order", "psum_format", "psum_rounding"}, "tensor_engine");
        p.te.tile_k = integer(s, "tensor_engine", "tile_k");
        const std::string order = field(s, "tensor_engine", "inner_order", true);
        if (order != "sequential" && order != "pairwise")
          fail(s["inner_order"], fmt::format("tensor_engine.inner_order: '{}' must be sequential or pairwise", order));
        p.te.inner_order = order == "pairwise" ? PlanKind::pairwise : PlanKind::sequential;
        if (s["double_row"]) {
          const YAML::Node v = s["double_row"]["value"];
          field(s, "tensor_engine", "double_row", false);
          if (v && v.IsSequence()) {
            for (const auto& x : v) {
              const FormatSpec* f = find_format(x.as<std::string>());
              if (!f) fail(x, fmt::format("tensor_engine.double_row: unknown format '{}'", x.as<std::string>()));
              p.double_row_formats.push_back(f);
            }
          } else if (!v || v.as<std::string>() != "none") {
            fail(s["double_row"], "tensor_engine.double_row: value must be 'none' or a list of formats");
          }
        }
        p.te.array_acc = p.reduction.acc;
        p.te.psum = p.reduction.acc;
        p.te.psum.format = format(s, "tensor_engine", "psum_format", false);
        p.te.psum.rounding.rounding = rounding(s, "tensor_engine", "psum_rounding");
        p.te.autocast = p.input_cast;
        p.te.autocast_rounding = p.input_cast_rounding;
        p.te.output_rounding = p.reduction.output_rounding;
        // The profile's reduction view: K tiles folded in order (blocked), for bounds.
        p.reduction.plan = {PlanKind::blocked, p.te.tile_k,
                            p.te.inner_order == PlanKind::pairwise ? InnerOrder::pairwise : InnerOrder::sequential};
        if (root["plan"] || root["block_fma"]) fail(root, "model 'tensor-engine' takes no plan/block_fma section");
        break;
      }
      case ProfileModel::block_fma: {
        const YAML::Node s = root["block_fma"];
        if (!s) fail(root, "model 'block-fma' needs a 'block_fma' section");
        check_keys(s, {"device", "variants"}, "block_fma");
        p.device = field(s, "block_fma", "device", true);
        const YAML::Node vs = s["variants"];
        if (!vs || !vs.IsSequence() || vs.size() == 0) fail(s, "block_fma.variants must be a non-empty list");
        for (const auto& v : vs) variant(v);
        if (root["plan"] || root["tensor_engine"]) fail(root, "model 'block-fma' takes no plan/tensor_engine section");
        break;
      }
    }
  }
};

}  // namespace

const BlockFmaModel* block_fma_for(const Profile& p, const FormatSpec& in, const FormatSpec& out) {
  for (const BlockFmaVariant& v : p.variants)
    if (*v.model.input == in && *v.model.output == out) return &v.model;
  return nullptr;
}

std::string variant_names(const Profile& p) {
  std::string s;
  for (const BlockFmaVariant& v : p.variants)
    s += fmt::format("{}{}->{}", s.empty() ? "" : ", ", v.model.input->name, v.model.output->name);
  return s;
}

TensorEngineModel tensor_engine_for(const Profile& p, const FormatSpec& in) {
  TensorEngineModel te = p.te;
  const FormatSpec& used = p.input_cast ? *p.input_cast : in;
  te.double_row = std::find(p.double_row_formats.begin(), p.double_row_formats.end(), &used) != p.double_row_formats.end();
  return te;
}

Profile load_profile(const std::string& path) {
  Loader l{path, {}};
  l.p.path = path;
  l.load();
  return std::move(l.p);
}

// Defined (weakly) only in programs linking the installed numfid package: it returns that
// package's profile directory (cmake/numfid_package_profiles.cpp). Null elsewhere. (C linkage:
// the global symbol, although declared in this namespace.)
extern "C" __attribute__((weak)) const char* numfid_package_profile_directory();

namespace {

// <prefix>/share/numfid/profiles for a program running from <prefix>/bin (the installed CLI),
// when that directory exists (NUMFID_PROFILES_FROM_BINDIR: the install layout's relative path).
// /proc/self/exe resolves symbolic links to the real binary.
std::optional<std::string> profiles_beside_executable() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  const std::filesystem::path dir = (exe.parent_path() / NUMFID_PROFILES_FROM_BINDIR).lexically_normal();
  if (!std::filesystem::is_directory(dir, ec)) return std::nullopt;
  return dir.string();
}

}  // namespace

// Only the build tree (and add_subdirectory users) reach the compiled-in source path: the
// installed CLI finds bin/../share/numfid/profiles, a program built against the installed CMake
// package has the hook, and the build tree's bin/ has neither. (pkg-config users have no hook:
// they set NUMFID_PROFILES to numfid.pc's `profilesdir`.)
std::string profile_directory() {
  if (const char* env = std::getenv("NUMFID_PROFILES"); env && *env) return env;
  if (auto dir = profiles_beside_executable()) return *dir;
  if (numfid_package_profile_directory != nullptr) return numfid_package_profile_directory();
  return NUMFID_SOURCE_PROFILES;
}

std::vector<std::string> list_profiles(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

Profile find_profile(const std::string& name, const std::string& dir) {
  const auto names = list_profiles(dir);
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw ProfileError(fmt::format("unknown profile '{}' in {} (known: {})", name, dir, known.empty() ? "none" : known));
  }
  return load_profile((std::filesystem::path(dir) / (name + ".yaml")).string());
}

}  // namespace numfid
