// Profile loading: strict schema (unknown keys and bad values are errors naming file:line),
// provenance required on every field.
#include "numerics/profile.h"

#include "formats/error.h"
#include "numerics/operand_cast.h"
#include "numerics/yaml_strict_detail.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <map>
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

std::string_view profile_model_name(ProfileModel m) {
  switch (m) {
    case ProfileModel::plan: return "plan";
    case ProfileModel::tensor_engine: return "tensor-engine";
    case ProfileModel::block_fma: return "block-fma";
    case ProfileModel::scaled_gemm: return "scaled-gemm";
  }
  return "?";
}

namespace {

struct Loader {
  std::string path;
  Profile p;
  bool nested = false;  ///< loading the profile another one's partial_sums names (that names none)

  [[noreturn]] void fail(const YAML::Node& n, const std::string& msg) const { fail_at(n.Mark(), msg); }

  [[noreturn]] void fail_at(const YAML::Mark& m, const std::string& msg) const {
    if (m.line < 0) throw ProfileError(fmt::format("{}: {}", path, msg));
    throw ProfileError(fmt::format("{}:{}: {}", path, m.line + 1, msg));
  }

  /// The strict-YAML rules of a profile (numerics/yaml_strict_detail.h), failing as fail_at.
  detail::StrictYamlRules rules() const {
    // A profile nests 5 deep (variants: list, map, field, value list); the largest shipped
    // one has a few hundred nodes.
    return {.max_depth = 16, .max_nodes = 100'000, .document = "profile", .fail = [this](int line, const std::string& msg) {
              YAML::Mark m;
              m.line = line;
              fail_at(m, msg);
            }};
  }

  std::string text(const YAML::Node& n, const std::string& what) const { return detail::strict_yaml_text(rules(), n, what); }

  void check_keys(const YAML::Node& map, const std::vector<std::string>& allowed, const std::string& where) const {
    detail::strict_yaml_check_keys(rules(), map, allowed, where);
  }

  /// A field: {value: X, <documented|published|measured|assumed>: text}.
  /// `list`: the value may be a list (joined with ", "); elsewhere a list is refused.
  std::string field(const YAML::Node& section, const std::string& sname, const std::string& key, bool required,
                    bool list = false) {
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
    if (v.IsSequence() && !list) {
      fail(v, fmt::format("{}.{}: a list where a single value is expected", sname, key));
    } else if (v.IsSequence()) {
      for (const auto& x : v) f.value += (f.value.empty() ? "" : ", ") + text(x, fmt::format("{}.{}: a list item", sname, key));
    } else if (v.IsScalar()) {
      f.value = v.Scalar();
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
        f.provenance = {kind, text(n[name], fmt::format("{}.{}: the {} provenance", sname, key, name))};
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
    if (!section[key]) return false;
    const std::string v = field(section, sname, key, false);
    if (v == "false") return false;
    if (v == "true") return true;
    fail(section[key], fmt::format("{}.{}: '{}' is not true or false", sname, key, v));
  }

  /// A whole-text decimal integer; nullopt with *too_large set when it is all digits but
  /// past 64 bits.
  static std::optional<std::int64_t> parse_int(const std::string& v, bool* too_large) {
    std::int64_t x = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    *too_large = ec == std::errc::result_out_of_range && p == v.data() + v.size();
    if (ec != std::errc{} || p != v.data() + v.size()) return std::nullopt;
    return x;
  }

  /// A positive integer field at most `max` (`max_text` says what the limit is).
  std::int64_t integer(const YAML::Node& section, const std::string& sname, const std::string& key,
                       std::int64_t max = INT_MAX, std::string_view max_text = "2^31 - 1") {
    const std::string v = field(section, sname, key, true);
    bool too_large = false;
    const auto x = parse_int(v, &too_large);
    if ((x && *x > max) || (too_large && v.front() != '-'))
      fail(section[key], fmt::format("{}.{}: '{}' is larger than {} ({})", sname, key, v, max, max_text));
    if (x && *x > 0) return *x;
    fail(section[key], fmt::format("{}.{}: '{}' is not a positive integer", sname, key, v));
  }

  /// An integer field in [min, 2^31 - 1].
  std::int64_t signed_integer(const YAML::Node& section, const std::string& sname, const std::string& key,
                              std::int64_t min) {
    const std::string v = field(section, sname, key, true);
    bool too_large = false;
    const auto x = parse_int(v, &too_large);
    if ((x && *x > INT_MAX) || (too_large && v.front() != '-'))
      fail(section[key], fmt::format("{}.{}: '{}' is larger than {} (2^31 - 1)", sname, key, v, INT_MAX));
    if (x && *x >= min) return *x;
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
    fail(section[key], fmt::format("{}.{}: '{}' must be one of {}", sname, key, v, detail::join_names(names)));
  }

  /// One block_fma variant: every BlockFmaModel field, each with its provenance.
  void variant(const YAML::Node& v) {
    check_keys(v,
               {"name", "instruction", "input", "output", "datapath", "block_size", "instruction_k", "interleave",
                "addend", "addend_rounding", "accumulator_fraction_bits", "extra_alignment_bits", "alignment",
                "min_alignment_exponent", "normalisation", "final_rounding", "input_subnormals", "output_subnormals",
                "overflow_to_infinity", "nan", "zero_result"},
               "a block_fma variant");
    if (!v["name"] || !v["name"].IsScalar()) fail(v, "a block_fma variant needs a name");
    BlockFmaVariant bv;
    bv.name = v["name"].Scalar();
    bv.instruction = v["instruction"] ? text(v["instruction"], "a block_fma variant's instruction") : "";
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
    if (v["zero_result"])
      m.zero_results_positive = choice<bool>(v, sn, "zero_result", {{"signed", false}, {"positive", true}});
    if (const std::string err = validate(m); !err.empty()) fail(v, fmt::format("{}: {}", sn, err));
    for (const BlockFmaVariant& o : p.variants)
      if (o.model.input == m.input && o.model.output == m.output)
        fail(v, fmt::format("{}: a second variant for {}->{}", sn, m.input->name, m.output->name));
    p.variants.push_back(std::move(bv));
  }

  AccumulatorModel accumulator(const YAML::Node& s, const std::string& sname) {
    check_keys(s, {"format", "rounding", "ftz", "daz", "zero_start", "products"}, sname);
    AccumulatorModel a;
    a.format = format(s, sname, "format", false);
    if (!can_accumulate(*a.format))
      fail(s["format"], fmt::format("{}.format must be a signed float format (partial sums are signed and may be 0)", sname));
    a.rounding.rounding = rounding(s, sname, "rounding");
    a.rounding.ftz = boolean(s, sname, "ftz");
    // Optional (default false): subnormal inputs read as zero, as AVX-512 vdpbf16ps does.
    a.rounding.daz = s["daz"] ? boolean(s, sname, "daz") : false;
    // Optional (default false): each partial sum starts from a zeroed register, fl(+0 + t).
    a.zero_start = s["zero_start"] ? boolean(s, sname, "zero_start") : false;
    const std::string prod = s["products"] ? field(s, sname, "products", false) : "exact";
    if (prod != "exact" && prod != "rounded")
      fail(s["products"], fmt::format("{}.products: '{}' must be exact or rounded", sname, prod));
    a.products_rounded = prod == "rounded";
    return a;
  }

  /// "RxK" with 1 <= R, K <= 2^31 - 1; nullopt otherwise.
  static std::optional<ScaleBlock> parse_block(const std::string& t) {
    const std::size_t x = t.find('x');
    if (x == std::string::npos) return std::nullopt;
    bool too_large = false;
    const auto r = parse_int(t.substr(0, x), &too_large);
    const auto k = parse_int(t.substr(x + 1), &too_large);
    if (!r || !k || *r < 1 || *k < 1 || *r > INT_MAX || *k > INT_MAX) return std::nullopt;
    return ScaleBlock{*r, *k};
  }

  /// The block_scaling section of a scaled-gemm profile (after the accumulator section).
  void block_scaling(const YAML::Node& root) {
    const std::string sn = "block_scaling";
    const YAML::Node s = root[sn];
    if (!s) fail(root, "model 'scaled-gemm' needs a 'block_scaling' section");
    check_keys(s, {"operands", "scale_block", "scale_format", "promote_every", "promotion", "partial_sums"}, sn);
    BlockScaling b;
    field(s, sn, "operands", true, true);
    const YAML::Node ov = s["operands"]["value"];
    const auto operand = [&](const YAML::Node& x) {
      const std::string name = text(x, "block_scaling.operands: a list item");
      const FormatSpec* f = find_format(name);
      if (!f || f->kind != FormatKind::binary_float || f->bits > 16)
        fail(x, fmt::format("block_scaling.operands: '{}' is not a narrow float operand format (fp8_e4m3, fp8_e5m2, "
                            "fp6_e3m2, fp6_e2m3, fp4_e2m1, bf16, fp16)",
                            name));
      if (std::find(b.operands.begin(), b.operands.end(), f) != b.operands.end())
        fail(x, fmt::format("block_scaling.operands: '{}' listed twice", name));
      b.operands.push_back(f);
    };
    if (ov.IsSequence() && ov.size() > 0) {
      for (const auto& x : ov) operand(x);
    } else if (ov.IsScalar()) {
      operand(ov);
    } else {
      fail(ov, "block_scaling.operands: value must be a format or a non-empty list of formats");
    }
    const std::string blocks = field(s, sn, "scale_block", true);
    const std::size_t comma = blocks.find(',');
    const auto ba = parse_block(blocks.substr(0, comma));
    const auto bb = comma == std::string::npos ? ba : parse_block(blocks.substr(comma + 1));
    if (!ba || !bb)
      fail(s["scale_block"], fmt::format("block_scaling.scale_block: '{}' is not RxK or RxK,RxK (A's, B's) with "
                                         "integers 1 <= R, K <= 2^31 - 1 (e.g. 1x32, 1x128,128x128)",
                                         blocks));
    b.block_a = *ba;
    b.block_b = *bb;
    const std::string sf = field(s, sn, "scale_format", true);
    b.scale_format = find_format(sf);
    if (b.scale_format == nullptr || (*b.scale_format != fp32 && *b.scale_format != e8m0 && *b.scale_format != fp8_e4m3))
      fail(s["scale_format"], fmt::format("block_scaling.scale_format: '{}' must be one of fp32, e8m0, fp8_e4m3", sf));
    const std::string pe = field(s, sn, "promote_every", true);
    if (pe != "per-block") {
      bool too_large = false;
      const auto x = parse_int(pe, &too_large);
      if (!x || *x < 1 || *x > INT_MAX)
        fail(s["promote_every"], fmt::format("block_scaling.promote_every: '{}' is not per-block or an integer in [1, "
                                             "2^31 - 1]",
                                             pe));
      const std::int64_t n = *x;
      for (const auto& [kk, who] : {std::pair{b.block_a.k, "A"}, std::pair{b.block_b.k, "B"}})
        if (kk % n != 0)
          fail(s["promote_every"], fmt::format("block_scaling.promote_every: {} does not divide {}'s scale blocks of "
                                               "{} along K (a partial sum would straddle two scales)",
                                               n, who, kk));
      b.promote_every = n;
    }
    const std::string pr = field(s, sn, "promotion", true);
    if (pr != "fma")
      fail(s["promotion"], fmt::format("block_scaling.promotion: '{}' must be fma (o = fma(fp32(sa·sb), partial, o))", pr));
    const std::string ps = field(s, sn, "partial_sums", true);
    if (ps == "accumulator") {
      const YAML::Node a = root["accumulator"];
      if (!a) fail(s["partial_sums"], "block_scaling.partial_sums: accumulator needs an 'accumulator' section");
      const AccumulatorModel& m = p.reduction.acc;
      if (m.format->bits > 32 || m.rounding.rounding == Rounding::stochastic || m.rounding.ftz || m.products_rounded ||
          m.zero_start)
        fail(a, "accumulator: the partial sums of a scaled GEMM are a float format of at most 32 bits with a "
                "deterministic rounding, no ftz, no zero_start, products exact");
    } else {
      bool plain = !ps.empty() && ps.front() != '.' && ps.size() <= 200;
      for (const char ch : ps) plain = plain && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.');
      if (!plain)
        fail(s["partial_sums"], fmt::format("block_scaling.partial_sums: '{}' must be accumulator or the name of a "
                                            "block-fma profile",
                                            ps));
      const std::filesystem::path dir = std::filesystem::path(path).parent_path();
      const std::string other = ((dir.empty() ? std::filesystem::path(".") : dir) / (ps + ".yaml")).string();
      std::shared_ptr<Profile> q;
      try {
        if (nested) throw ProfileError("a profile named by partial_sums names none itself");
        Loader l{other, {}, true};
        l.p.path = other;
        l.load(l.read());
        q = std::make_shared<Profile>(std::move(l.p));
      } catch (const ProfileError& e) {
        fail(s["partial_sums"], fmt::format("block_scaling.partial_sums: profile '{}': {}", ps, e.what()));
      }
      if (q->model != ProfileModel::block_fma)
        fail(s["partial_sums"], fmt::format("block_scaling.partial_sums: profile '{}' is a {} profile, not block-fma", ps,
                                            profile_model_name(q->model)));
      for (const FormatSpec* f : b.operands)
        if (!block_fma_for(*q, *f, fp32))
          fail(s["partial_sums"], fmt::format("block_scaling.partial_sums: profile '{}' has no {}->fp32 variant for "
                                              "operand format {} (it has {})",
                                              ps, f->name, f->name, variant_names(*q)));
      if (root["accumulator"])
        fail(root["accumulator"], fmt::format("block_scaling.partial_sums is profile '{}': no accumulator section", ps));
      b.partials = std::move(q);
    }
    p.block_scaling = std::move(b);
  }

  /// The file's bytes: a regular file (a FIFO is opened without blocking and refused, a
  /// directory refused) of at most max_profile_bytes.
  std::string read() const {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw ProfileError(fmt::format("{}: cannot open profile: {}", path, std::strerror(errno)));
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw ProfileError(fmt::format("{}: cannot open profile: {}", path, std::strerror(errno)));
    if (S_ISDIR(st.st_mode)) throw ProfileError(fmt::format("{}: cannot open profile: it is a directory", path));
    if (!S_ISREG(st.st_mode)) throw ProfileError(fmt::format("{}: cannot open profile: not a regular file", path));
    if (static_cast<std::uint64_t>(st.st_size) > max_profile_bytes)
      throw ProfileError(fmt::format("{}: {} bytes: larger than a profile can be ({} bytes)", path, st.st_size,
                                     max_profile_bytes));
    std::string bytes;
    char buf[65536];
    while (true) {
      const ssize_t got = ::read(fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw ProfileError(fmt::format("{}: cannot read profile: {}", path, std::strerror(errno)));
      if (got == 0) break;
      bytes.append(buf, static_cast<std::size_t>(got));
      if (bytes.size() > max_profile_bytes)
        throw ProfileError(fmt::format("{}: larger than a profile can be ({} bytes)", path, max_profile_bytes));
    }
    return bytes;
  }

  void load(const std::string& yaml) {
    if (yaml.size() > max_profile_bytes)
      throw ProfileError(fmt::format("{}: larger than a profile can be ({} bytes)", path, max_profile_bytes));
    const YAML::Node root = detail::load_strict_yaml(yaml, rules());
    try {
      load_root(root);
    } catch (const YAML::Exception& e) {  // a value of an unexpected kind not caught above
      fail_at(e.mark, fmt::format("unexpected YAML value: {}", e.msg));
    }
  }

  void load_root(const YAML::Node& root) {
    check_keys(root,
               {"name", "version", "summary", "model", "input_cast", "plan", "accumulator", "tensor_engine",
                "block_fma", "block_scaling", "output", "elementwise"},
               "the profile");
    for (const char* k : {"name", "version", "summary", "model"})
      if (!root[k] || !root[k].IsScalar()) fail(root, fmt::format("missing top-level '{}'", k));
    p.name = root["name"].Scalar();
    const std::string stem = std::filesystem::path(path).stem().string();
    if (p.name != stem) fail(root["name"], fmt::format("name '{}' does not match the file name '{}'", p.name, stem));
    try {
      p.version = root["version"].as<int>();
    } catch (const YAML::Exception&) {
      fail(root["version"], "version must be an integer");
    }
    if (p.version < 1) fail(root["version"], "version must be >= 1");
    p.summary = root["summary"].Scalar();
    const std::string model = root["model"].Scalar();
    if (model == "plan") p.model = ProfileModel::plan;
    else if (model == "tensor-engine") p.model = ProfileModel::tensor_engine;
    else if (model == "block-fma") p.model = ProfileModel::block_fma;
    else if (model == "scaled-gemm") p.model = ProfileModel::scaled_gemm;
    else fail(root["model"], fmt::format("unknown model '{}' (valid: plan, tensor-engine, block-fma, scaled-gemm)", model));
    if (p.model != ProfileModel::scaled_gemm && root["block_scaling"])
      fail(root["block_scaling"], fmt::format("model '{}' takes no block_scaling section (model scaled-gemm does)", model));

    if (const YAML::Node s = root["input_cast"]) {
      check_keys(s, {"format", "rounding"}, "input_cast");
      p.input_cast = format(s, "input_cast", "format", true);
      if (p.input_cast && !operand_cast_problem(*p.input_cast).empty())  // as a claim's --cast
        fail(s["format"], fmt::format("input_cast.format: '{}': {}", p.input_cast->name, operand_cast_problem(*p.input_cast)));
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
        const std::string fn = kv.first.Scalar();
        const std::string v = field(s, "elementwise", fn, true);
        double ulps = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), ulps);
        if (ec != std::errc{} || end != v.data() + v.size() || !std::isfinite(ulps) || ulps < 0)
          fail(kv.second, fmt::format("elementwise.{}: '{}' is not a number of ulps (a finite number >= 0)", fn, v));
        p.elementwise_ulps[fn] = ulps;
      }
    }
    const bool needs_acc = p.model != ProfileModel::block_fma && p.model != ProfileModel::scaled_gemm;
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
        p.te.tile_k = integer(s, "tensor_engine", "tile_k", max_plan_parameter, "the largest plan parameter, 2^40");
        const std::string order = field(s, "tensor_engine", "inner_order", true);
        if (order != "sequential" && order != "pairwise")
          fail(s["inner_order"], fmt::format("tensor_engine.inner_order: '{}' must be sequential or pairwise", order));
        p.te.inner_order = order == "pairwise" ? PlanKind::pairwise : PlanKind::sequential;
        if (s["double_row"]) {
          field(s, "tensor_engine", "double_row", false, true);  // (checks that it is a {value, provenance} mapping)
          const YAML::Node v = s["double_row"]["value"];
          if (v && v.IsSequence()) {
            for (const auto& x : v) {
              const std::string name = text(x, "tensor_engine.double_row: a list item");
              const FormatSpec* f = find_format(name);
              if (!f) fail(x, fmt::format("tensor_engine.double_row: unknown format '{}'", name));
              p.double_row_formats.push_back(f);
            }
          } else if (!v || !v.IsScalar() || v.Scalar() != "none") {
            fail(s["double_row"], "tensor_engine.double_row: value must be 'none' or a list of formats");
          }
        }
        p.te.array_acc = p.reduction.acc;
        p.te.psum = p.reduction.acc;
        p.te.psum.format = format(s, "tensor_engine", "psum_format", false);
        if (!can_accumulate(*p.te.psum.format))
          fail(s["psum_format"], "tensor_engine.psum_format must be a signed float format (PSUM accumulates signed partial "
                                 "sums, and 0)");
        p.te.psum.rounding.rounding = rounding(s, "tensor_engine", "psum_rounding");
        // emulate folds the K tiles in PSUM's format and rounding, but every bound (tol, check)
        // reads the profile as one blocked plan in the array accumulator (p.reduction): a
        // different PSUM would make the profile's own output fall outside its bounds. Refused
        // until the bounds model it.
        if (*p.te.psum.format != *p.te.array_acc.format)
          fail(s["psum_format"], fmt::format("tensor_engine.psum_format: '{}' differs from the accumulator's format '{}': "
                                             "the bounds have no model of a PSUM format other than the accumulator's",
                                             p.te.psum.format->name, p.te.array_acc.format->name));
        if (p.te.psum.rounding.rounding != p.te.array_acc.rounding.rounding)
          fail(s["psum_rounding"], fmt::format("tensor_engine.psum_rounding: '{}' differs from the accumulator's rounding "
                                               "'{}': the bounds have no model of a PSUM rounding other than the "
                                               "accumulator's",
                                               rounding_name(p.te.psum.rounding.rounding),
                                               rounding_name(p.te.array_acc.rounding.rounding)));
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
        derive_mixed_variants(p);
        if (root["plan"] || root["tensor_engine"]) fail(root, "model 'block-fma' takes no plan/tensor_engine section");
        break;
      }
      case ProfileModel::scaled_gemm: {
        for (const char* k : {"plan", "tensor_engine", "block_fma", "input_cast"})
          if (root[k])
            fail(root[k], fmt::format("model 'scaled-gemm' takes no {} section (its partial sums: block_scaling."
                                      "partial_sums)",
                                      k));
        block_scaling(root);
        break;
      }
    }
  }
};

}  // namespace

namespace {

/// The operand formats an instruction takes as A and B in any combination: PTX ISA 9.0,
/// `mma.sync.aligned.m16n8k32.row.col.dtype.f8type.f8type.ctype` with .f8type = {.e4m3, .e5m2}
/// for A and B independently (sm_89+), and `wgmma.mma_async` .atype/.btype = .e4m3/.e5m2
/// (sm_90a): https://docs.nvidia.com/cuda/parallel-thread-execution/#warp-level-matrix-instructions-mma,
/// #asynchronous-warpgroup-level-matrix-instructions-wgmma-mma-async. No instruction multiplies
/// fp16 by bf16, or a 16-bit format by an fp8 one.
constexpr std::array<const FormatSpec*, 2> mixed_operand_formats{&fp8_e4m3, &fp8_e5m2};

bool takes_mixed(const FormatSpec& f) {
  return std::any_of(mixed_operand_formats.begin(), mixed_operand_formats.end(), [&](const FormatSpec* g) { return *g == f; });
}

/// "e4m3" from "H100 e4m3->fp32 (wgmma)": the word before "->"; empty if there is none.
std::string input_word(const std::string& name) {
  const std::size_t arrow = name.find("->");
  if (arrow == std::string::npos) return {};
  const std::size_t space = name.rfind(' ', arrow);
  return name.substr(space == std::string::npos ? 0 : space + 1, arrow - (space == std::string::npos ? 0 : space + 1));
}

const BlockFmaVariant* find_variant(const std::vector<BlockFmaVariant>& vs, const FormatSpec& a, const FormatSpec& b,
                                    const FormatSpec& out) {
  for (const BlockFmaVariant& v : vs)
    if (*v.model.input == a && v.model.input_b_format() == b && *v.model.output == out) return &v;
  return nullptr;
}

}  // namespace

void derive_mixed_variants(Profile& p) {
  p.mixed_variants.clear();
  for (const BlockFmaVariant& x : p.variants)
    for (const BlockFmaVariant& y : p.variants) {
      if (*x.model.input == *y.model.input || !takes_mixed(*x.model.input) || !takes_mixed(*y.model.input)) continue;
      if (x.model.mixed() || y.model.mixed() || !unit_difference(x.model, y.model).empty()) continue;
      BlockFmaVariant m;
      const std::string wa = input_word(x.name), wb = input_word(y.name);
      const std::size_t arrow = x.name.find("->");
      m.name = !wa.empty() && !wb.empty() ? x.name.substr(0, arrow) + " x " + wb + x.name.substr(arrow)
                                          : fmt::format("{} x {}", x.name, y.model.input->name);
      m.instruction = fmt::format("{} (A {}, B {})", x.instruction, x.model.input->name, y.model.input->name);
      m.model = x.model;
      m.model.input_b = y.model.input;
      m.provenance = fmt::format(
          "assumed: the {} and {} units of {} are the same unit read with another input format (variants '{}' and "
          "'{}', identical but for the input: each reproduces its recorded vectors in the shipped profiles); a mixed "
          "instruction (PTX mma.sync/wgmma with .{} A and .{} B, "
          "https://docs.nvidia.com/cuda/parallel-thread-execution/#warp-level-matrix-instructions-mma) is taken to run "
          "the same datapath, every product exact; recorded mixed vectors exist only for Hopper's mma.sync units "
          "(tests/data/h200/mma, reproduced bit for bit)",
          x.model.input->name, y.model.input->name, p.device.empty() ? p.name : p.device, x.name, y.name,
          wa.empty() ? x.model.input->name : wa, wb.empty() ? y.model.input->name : wb);
      p.mixed_variants.push_back(std::move(m));
    }
}

const BlockFmaVariant& block_fma_unit(const Profile& p, const FormatSpec& a, const FormatSpec& b, const FormatSpec& out,
                                      std::string_view hint) {
  const auto fail = [&](const std::string& why) -> const BlockFmaVariant& {
    throw InputError(hint.empty() ? why : fmt::format("{}; {}", why, hint));
  };
  if (p.model != ProfileModel::block_fma) return fail(fmt::format("profile {} is not a tensor-core (block-fma) profile", p.name));
  const BlockFmaVariant* va = find_variant(p.variants, a, a, out);
  const FormatSpec& o = va ? out : fp32;
  if (!va) va = find_variant(p.variants, a, a, fp32);
  if (!va)
    return fail(fmt::format("profile {} has no tensor-core model for {} inputs (it has {})", p.name, a.name, variant_names(p)));
  if (a == b) return *va;
  if (const BlockFmaVariant* m = find_variant(p.mixed_variants, a, b, o)) return *m;
  if (!takes_mixed(a) || !takes_mixed(b))
    return fail(fmt::format("profile {}: a tensor-core profile takes A and B of one format (--in {}, --in-b {}): no "
                            "instruction multiplies {} by {} (PTX mma/wgmma mix only fp8 e4m3 and e5m2)",
                            p.name, a.name, b.name, a.name, b.name));
  const BlockFmaVariant* vb = find_variant(p.variants, b, b, o);
  if (!vb)
    return fail(fmt::format("profile {}: no mixed {} x {} unit: the profile has no unit for {} inputs with {} results "
                            "(it has {})",
                            p.name, a.name, b.name, b.name, o.name, variant_names(p)));
  const std::string diff = unit_difference(va->model, vb->model);
  if (diff.empty())  // a profile built in memory without derive_mixed_variants
    return fail(fmt::format("profile {}: no mixed {} x {} unit derived (derive_mixed_variants)", p.name, a.name, b.name));
  return fail(fmt::format("profile {}: no mixed {} x {} unit: its units for {} ('{}') and {} ('{}') differ in {}, so "
                          "which of them a mixed instruction runs is unknown",
                          p.name, a.name, b.name, a.name, va->name, b.name, vb->name, diff));
}

const BlockFmaModel* block_fma_for(const Profile& p, const FormatSpec& in, const FormatSpec& out) {
  const BlockFmaVariant* v = find_variant(p.variants, in, in, out);  // a profile's own units read A and B alike
  return v ? &v->model : nullptr;
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
  l.load(l.read());
  return std::move(l.p);
}

Profile load_profile_text(const std::string& text, const std::string& path) {
  Loader l{path, {}};
  l.p.path = path;
  l.load(text);
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
