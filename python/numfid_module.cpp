// numfid._numfid: the compiled half of the `numfid` Python package (docs/python.md). It only
// turns arrays into numfid tensors, calls the library pipeline the CLI calls
// (tolerances/check.h: parse_claim, check_matmul, check_dot, check_sum, check_rows, tolerance,
// emulate_matmul, emulate_dot; formats/convert.h; numerics/profile.h) and hands back what it
// returns. No numerics here (STYLE.md rule 11). The pure-Python half (python/numfid/) maps
// NumPy / PyTorch / ml_dtypes arrays to (C-contiguous buffer, container type) pairs.
//
// Errors: InputError and ProfileError (bad claim, format, shape, value, profile) become
// ValueError with the library's message, the one the CLI prints after "numfid: ". The GIL is
// released while the pipeline runs; a CancelScope (tolerances/cancel.h) polls Python's signal
// handlers every few milliseconds, so Ctrl-C raises KeyboardInterrupt out of a long check.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "formats/convert.h"
#include "formats/error.h"
#include "gates/gate.h"
#include "io/tensor.h"
#include "numerics/probe.h"
#include "numerics/profile.h"
#include "tolerances/cancel.h"
#include "tolerances/check.h"
#include "tolerances/check_detail.h"
#include "tolerances/quant_check.h"
#include "tolerances/row_bounds.h"
#include "tolerances/scale_files.h"

namespace py = pybind11;

// The profile directory of an installed package: numerics/profile.cpp asks this hook (after
// NUMFID_PROFILES and <exe>/../share/numfid/profiles; the executable here is the Python
// interpreter). The package sets it at import to its own profiles/ folder when it ships one
// (an installed module); the build tree keeps the source tree's profiles.
namespace {
std::string package_profiles = NUMFID_SOURCE_PROFILES;
}  // namespace
extern "C" const char* numfid_package_profile_directory() { return package_profiles.c_str(); }

namespace numfid::python {

namespace {

// ------------------------------------------------------------------- operands

/// The container types the Python side names (io/tensor.h ElementType, by its enumerator name).
ElementType element_type_named(const std::string& s) {
  static const std::pair<const char*, ElementType> types[] = {
      {"F16", ElementType::F16},         {"F32", ElementType::F32}, {"F64", ElementType::F64},
      {"BF16", ElementType::BF16},       {"F8_E4M3", ElementType::F8_E4M3},
      {"F8_E5M2", ElementType::F8_E5M2}, {"I8", ElementType::I8},   {"I16", ElementType::I16},
      {"I32", ElementType::I32},         {"U8", ElementType::U8},   {"U16", ElementType::U16},
      {"U32", ElementType::U32},         {"V8", ElementType::V8},   {"V16", ElementType::V16}};
  for (const auto& [name, t] : types)
    if (s == name) return t;
  throw py::type_error(fmt::format("numfid: unknown container type '{}'", s));
}

/// An operand from the Python side: (array, container type, name). The array must be
/// C-contiguous, little-endian and of the container's item size (the package makes it so);
/// the tensor reads its memory in place, so `keep` must outlive every use of `tensor`.
struct Operand {
  py::array keep;
  Tensor tensor;
};

std::optional<Operand> operand(const py::object& o) {
  if (o.is_none()) return std::nullopt;
  const auto t = o.cast<py::tuple>();
  if (t.size() != 3) throw py::type_error("numfid: an operand is (array, container type, name)");
  Operand r;
  r.keep = t[0].cast<py::array>();
  Tensor& x = r.tensor;
  x.type = element_type_named(t[1].cast<std::string>());
  x.source = t[2].cast<std::string>();
  x.dtype_desc = py::str(r.keep.dtype()).cast<std::string>();
  if ((r.keep.flags() & py::array::c_style) == 0)
    throw py::type_error(fmt::format("numfid: {}: the buffer must be C-contiguous", x.source));
  if (r.keep.itemsize() != element_size(x.type))
    throw py::type_error(fmt::format("numfid: {}: items of {} bytes for container {}", x.source, r.keep.itemsize(),
                                     element_type_name(x.type)));
  for (py::ssize_t d = 0; d < r.keep.ndim(); ++d) x.shape.push_back(static_cast<std::int64_t>(r.keep.shape(d)));
  x.data = {static_cast<const std::byte*>(r.keep.data()), static_cast<std::size_t>(r.keep.nbytes())};
  return r;
}

ShapeRef shape_ref(const Operand& o) { return {o.tensor.shape, o.tensor.source}; }

/// The operand's values under `f`; an unsigned array read as integer values under a float format
/// of another width (docs/io.md: a uint16 array under fp32) adds io's container_note to `notes`,
/// which warn() issues as the CLI prints it on stderr (the verdict alone would not say why).
TensorData values_of(const Operand& o, const FormatSpec& f, std::vector<std::string>& notes) {
  if (std::string n = container_note(o.tensor, f); !n.empty()) notes.push_back(std::move(n));
  return tensor_data(o.tensor, f);
}

/// Each note as a UserWarning (with the GIL held); a warnings filter that makes it an error raises.
void warn(const std::vector<std::string>& notes) {
  for (const std::string& n : notes)
    if (PyErr_WarnEx(PyExc_UserWarning, fmt::format("numfid: note: {}", n).c_str(), 1) != 0) throw py::error_already_set();
}

// ------------------------------------------------------------------- GIL and Ctrl-C

/// Runs `f` without the GIL, polling Python's signal handlers (Ctrl-C) every 20 ms from the
/// pipeline's loops. A handler that raises (KeyboardInterrupt) cancels the run and its
/// exception is re-raised here; the pipeline's own exceptions propagate unchanged.
template <class F>
auto without_gil(F&& f) -> decltype(f()) {
  using clock = std::chrono::steady_clock;
  bool interrupted = false;
  auto next = clock::now() + std::chrono::milliseconds(20);
  const auto poll = [&] {
    const auto now = clock::now();
    if (now < next) return false;
    next = now + std::chrono::milliseconds(20);
    const py::gil_scoped_acquire gil;
    interrupted = PyErr_CheckSignals() != 0;  // runs the handlers; an exception stays set
    return interrupted;
  };
  try {
    const py::gil_scoped_release release;
    const CancelScope scope(poll);
    return f();
  } catch (const Cancelled&) {
    if (interrupted) throw py::error_already_set();  // the handler's exception (KeyboardInterrupt)
    throw;
  }
}

// ------------------------------------------------------------------- claims

/// A claim parsed, with the scale files it names read (relative to the working directory):
/// the one reader the CLI and the gate call (tolerances/scale_files.h).
ClaimSpec claim_with_files(const std::string& text) {
  ClaimSpec c = parse_claim(text);
  read_claim_scale_files(c);
  return c;
}

// ------------------------------------------------------------------- check

struct CheckArgs {
  std::string op, claim;
  py::object a, b, c, x, addend, ref, gamma, beta;
  std::optional<std::string> addend_format, ref_profile;
  int worst = 8;
  RowOptionsGiven row;  ///< axis (sum too), eps, variance, softmax, param_format, norm_form, masked_row: as given
};

void require(const std::optional<Operand>& o, const std::string& op, const char* name) {
  if (!o) throw py::type_error(fmt::format("numfid.check('{}'): missing operand {}", op, name));
}

CheckResult check(const CheckArgs& args) {
  const std::string& op = args.op;
  const bool reduction = op == "matmul" || op == "dot";
  const std::optional<RowOp> row_op = find_row_op(op);
  if (!reduction && op != "sum" && !row_op) {
    throw py::value_error(fmt::format("numfid.check: unknown op '{}' (known: {})", op, fmt::join(check_op_names(), ", ")));
  }
  std::optional<Operand> A = operand(args.a), B = operand(args.b), C = operand(args.c), X = operand(args.x),
                         addend = operand(args.addend), ref = operand(args.ref), gamma = operand(args.gamma),
                         beta = operand(args.beta);
  require(C, op, "c");
  if (reduction) {
    require(A, op, "a");
    require(B, op, "b");
  } else {
    require(X, op, "x");
  }
  std::vector<std::string> notes;
  CheckResult result = without_gil([&]() -> CheckResult {
    const ClaimSpec claim = reduction ? claim_with_files(args.claim) : parse_claim(args.claim);
    if (reduction) {
      const FormatSpec& fa = *claim.in;
      const FormatSpec& fb = claim.in_b ? *claim.in_b : fa;
      // Shapes first, as the CLI: a wrong-shaped operand is refused before any value is read.
      const ShapeRef sc = shape_ref(*C);
      if (op == "dot") rowwise_dot_dims(shape_ref(*A), shape_ref(*B), &sc);
      else matmul_dims(shape_ref(*A), shape_ref(*B), &sc);
      const TensorData a = values_of(*A, fa, notes), b = values_of(*B, fb, notes), c = values_of(*C, *claim.out, notes);
      // The library names the CLI's --addend; here the keyword.
      detail::refuse_addend_placement(claim, addend.has_value(), fmt::format("numfid.check('{}')", op), "addend=");
      MatmulCheckOptions o;
      o.worst = args.worst;
      const FormatSpec& fd = addend_format(claim, addend.has_value(), args.addend_format, "addend_format=", "addend=");
      if (addend) o.addend = values_of(*addend, fd, notes);
      if (ref) {
        // The library's message names the CLI's flags (--ref, --ref-profile); here the keywords.
        if (!args.ref_profile && !is_quantised_claim(claim))
          throw InputError("ref= needs ref_profile= (the platform that produced the reference)");
        o.ref = values_of(*ref, *claim.out, notes);
        if (args.ref_profile) o.ref_claim = claim_with_profile(claim, *args.ref_profile, "ref_profile=");
      } else if (args.ref_profile) {
        throw InputError("ref_profile= names the platform of a reference output: give that output with ref=");
      }
      return op == "dot" ? check_dot(a, b, c, claim, o) : check_matmul(a, b, c, claim, o);
    }
    const TensorData x = values_of(*X, *claim.in, notes), c = values_of(*C, *claim.out, notes);
    if (op == "sum") return check_sum(x, c, args.row.axis.value_or(RowCheckOptions{}.axis), claim, args.worst);
    RowCheckOptions o;
    o.worst = args.worst;
    apply_row_options(o, *row_op, args.row, claim, gamma.has_value() || beta.has_value());
    const FormatSpec& fparam = o.param_format != nullptr ? *o.param_format : *claim.in;
    if (gamma) o.gamma = values_of(*gamma, fparam, notes);
    if (beta) o.beta = values_of(*beta, fparam, notes);
    return check_rows(*row_op, x, c, claim, o);
  });
  warn(notes);
  return result;
}

// ------------------------------------------------------------------- results as arrays

/// `shape` as NumPy dimensions, refused unless it holds exactly `n` elements (the arrays below
/// are filled from n values: a shape of fewer would be written past its end).
std::vector<py::ssize_t> dims_of(const std::vector<std::int64_t>& shape, std::size_t n) {
  std::int64_t count = 1;
  for (const std::int64_t d : shape) count = d < 0 || (d > 0 && count > std::numeric_limits<std::int64_t>::max() / d) ? -1 : count * d;
  if (count < 0 || static_cast<std::uint64_t>(count) != n)
    throw py::value_error(fmt::format("numfid: a result of {} values cannot take the shape [{}]", n, fmt::join(shape, ", ")));
  return {shape.begin(), shape.end()};
}

/// Patterns of `f` as a NumPy array of the narrowest unsigned type that holds them; a signed
/// integer format's in its own signed type (int8, int32), whose values are its two's-complement
/// patterns: an unsigned container holds *values* of an integer format (docs/io.md), so uint8
/// patterns of int8 would read back as 128..255, out of range.
py::array bits_array(const FormatSpec& f, const std::vector<std::int64_t>& shape, const std::vector<Bits>& v) {
  const std::vector<py::ssize_t> dims = dims_of(shape, v.size());
  const auto fill = [&]<class T>(T) {
    py::array_t<T> a(dims);
    T* p = a.mutable_data();
    for (std::size_t i = 0; i < v.size(); ++i) p[i] = std::bit_cast<T>(static_cast<std::make_unsigned_t<T>>(v[i].raw));
    return py::array(a);
  };
  if (f.kind == FormatKind::integer && f.is_signed) {
    if (f.bits == 8) return fill(std::int8_t{});
    if (f.bits == 32) return fill(std::int32_t{});
  }
  if (f.bits <= 8) return fill(std::uint8_t{});
  if (f.bits <= 16) return fill(std::uint16_t{});
  return fill(std::uint32_t{});
}

/// Values of `f`, exactly: float32 for every format float32 holds exactly, float64 for int32.
py::array values_array(const FormatSpec& f, const std::vector<std::int64_t>& shape, const std::vector<Bits>& v) {
  const std::vector<py::ssize_t> dims = dims_of(shape, v.size());
  const auto fill = [&]<class T>(T) {
    py::array_t<T> a(dims);
    T* p = a.mutable_data();
    for (std::size_t i = 0; i < v.size(); ++i) p[i] = static_cast<T>(to_double(f, v[i]));
    return py::array(a);
  };
  if (f == int32) return fill(double{});
  if (f == fp32) {  // the patterns themselves: a NaN keeps its payload (0x7fffffff from a CUDA preset)
    py::array_t<float> a(dims);
    float* p = a.mutable_data();
    for (std::size_t i = 0; i < v.size(); ++i) p[i] = std::bit_cast<float>(v[i].raw);
    return py::array(a);
  }
  return fill(float{});
}

/// A result tensor: its format name and its patterns (the Python side picks bits or values).
py::tuple tensor_result(const TensorData& t, bool bits) {
  return py::make_tuple(std::string(t.format->name),
                        bits ? bits_array(*t.format, t.shape, t.values) : values_array(*t.format, t.shape, t.values));
}

// ------------------------------------------------------------------- emulate, convert

py::tuple emulate(const std::string& op, const std::string& claim_text, const py::object& a, const py::object& b,
                  const py::object& c, const std::optional<std::string>& c_format, bool bits) {
  if (op != "matmul" && op != "dot")
    throw py::value_error(fmt::format("numfid.emulate: unknown op '{}' (matmul or dot)", op));
  const std::optional<Operand> A = operand(a), B = operand(b), C = operand(c);
  require(A, op, "a");
  require(B, op, "b");
  std::vector<std::string> notes;
  const TensorData d = without_gil([&] {
    const ClaimSpec claim = claim_with_files(claim_text);
    const FormatSpec& fa = *claim.in;
    const FormatSpec& fb = claim.in_b ? *claim.in_b : fa;
    const ShapeRef sc = C ? shape_ref(*C) : ShapeRef{};
    if (op == "dot") rowwise_dot_dims(shape_ref(*A), shape_ref(*B), C ? &sc : nullptr);
    else matmul_dims(shape_ref(*A), shape_ref(*B), C ? &sc : nullptr);
    const TensorData ta = values_of(*A, fa, notes), tb = values_of(*B, fb, notes);
    std::optional<TensorData> tc;
    // C's values: c_format, else the accumulator's (fp32 under a profile), as the CLI.
    const FormatSpec& fc = addend_format(claim, C.has_value(), c_format, "c_format=", "c=");
    if (C) tc = values_of(*C, fc, notes);
    detail::refuse_addend_placement(claim, C.has_value(), fmt::format("numfid.emulate('{}')", op), "c=");
    return op == "dot" ? emulate_dot(ta, tb, tc, claim) : emulate_matmul(ta, tb, tc, claim);
  });
  warn(notes);
  return tensor_result(d, bits);
}

py::tuple emulate_sum_array(const std::string& claim_text, const py::object& x, int axis, bool bits) {
  const std::optional<Operand> X = operand(x);
  require(X, "sum", "x");
  std::string note;
  std::vector<std::string> notes;
  const TensorData d = without_gil([&] {
    const ClaimSpec claim = claim_with_files(claim_text);
    const TensorData xd = values_of(*X, *claim.in, notes);
    TensorData r = emulate_sum(xd, axis, claim);
    note = numpy_strided_axis_note(xd, axis, claim);
    return r;
  });
  warn(notes);
  py::tuple t = tensor_result(d, bits);
  return py::make_tuple(t[0], t[1], note);
}

py::tuple convert_array(const py::object& x, const std::string& from, const std::string& to, const std::string& rounding,
                        bool saturate, std::uint64_t seed, int sr_bits, bool bits) {
  const std::optional<Operand> X = operand(x);
  require(X, "convert", "array");
  TensorData out = without_gil([&] {
    const FormatSpec& ft = format_named(to);
    RoundOptions o;
    o.rounding = rounding_named(rounding, "rounding");
    o.overflow = saturate ? Overflow::saturate : Overflow::ieee;
    o.seed = seed;
    o.sr_bits = sr_bits;
    TensorData r;
    r.format = &ft;
    r.shape = X->tensor.shape;
    r.values.resize(static_cast<std::size_t>(X->tensor.element_count()));
    const auto n = r.values.size();
    if (X->tensor.type == ElementType::F64 && from.empty()) {  // binary64: no numfid format, one rounding
      const auto* p = reinterpret_cast<const double*>(X->tensor.data.data());
      for (std::size_t i = 0; i < n; ++i) {
        if (i % 65536 == 0) check_cancelled();
        o.stream = i;  // stochastic rounding: the element index is the stream, as the CLI's line index
        r.values[i] = convert_double(ft, p[i], o).bits;
      }
      return r;
    }
    const FormatSpec* container = container_format(X->tensor.type);
    if (from.empty() && container == nullptr)
      throw InputError(fmt::format("{}: a {} array holds no format of its own; declare it (from_=...)", X->tensor.source,
                                   element_type_name(X->tensor.type)));
    const FormatSpec& ff = from.empty() ? *container : format_named(from);
    const std::vector<Bits> src = tensor_values(X->tensor, ff);
    for (std::size_t i = 0; i < n; ++i) {
      if (i % 65536 == 0) check_cancelled();
      o.stream = i;
      r.values[i] = convert(ff, ft, src[i], o).bits;
    }
    return r;
  });
  return tensor_result(out, bits);
}

// ------------------------------------------------------------------- profiles, formats

py::list profiles_list() {
  const std::string dir = profile_directory();
  py::list out;
  for (const std::string& name : list_profiles(dir)) {
    const Profile p = load_profile(dir + "/" + name + ".yaml");
    const std::string model(profile_model_name(p.model));
    py::list fields;
    for (const ProfileField& f : p.fields)
      fields.append(py::dict(py::arg("section") = f.section, py::arg("key") = f.key, py::arg("value") = f.value,
                             py::arg("provenance") = std::string(provenance_kind_name(f.provenance.kind)),
                             py::arg("source") = f.provenance.text));
    out.append(py::dict(py::arg("name") = name, py::arg("version") = p.version, py::arg("model") = model,
                        py::arg("summary") = p.summary, py::arg("path") = p.path, py::arg("fields") = fields));
  }
  return out;
}

py::dict format_info(const std::string& name) {
  const FormatSpec& f = format_named(name);
  return py::dict(py::arg("name") = std::string(f.name), py::arg("bits") = f.bits,
                  py::arg("float") = is_float(f), py::arg("max_finite") = max_finite(f));
}


// ------------------------------------------------------------------- probe

/// numfid.probe: the black box is a Python callable fn(a, b) -> array, a and b float32
/// arrays of the input values (every probe input format fits float32 exactly; b is None for
/// "sum"); each output value must be exactly a value of the output format. Runs with the GIL
/// held (the callable is Python).
py::dict probe_callable(py::object fn, const std::string& op, std::int64_t k, const std::string& in_name,
                        const std::string& out_name, std::uint64_t seed, std::int64_t budget, std::int64_t validation,
                        const std::string& name) {
  ProbeOptions o;
  const auto pop = parse_probe_op(op);
  if (!pop) throw py::value_error(fmt::format("numfid.probe: op '{}' must be dot, matmul or sum", op));
  o.op = *pop;
  o.k = k;
  o.in = find_format(in_name);
  o.out = find_format(out_name);
  if (!o.in || !o.out) throw py::value_error(fmt::format("numfid.probe: unknown format '{}'", !o.in ? in_name : out_name));
  if (o.in->kind != FormatKind::binary_float || o.in->precision > 24 || emax(*o.in) > 127)
    throw py::value_error("numfid.probe: the input format must fit float32");
  o.seed = seed;
  o.budget = budget;
  o.validation_elements = validation;
  o.name = name;
  BlackBox box = [&](const ProbeCall& c) {
    auto values = [&](const std::vector<Bits>& v, std::int64_t rows, std::int64_t cols) {
      py::array_t<float> a({rows, cols});
      float* p = a.mutable_data();
      for (std::size_t i = 0; i < v.size(); ++i) p[i] = static_cast<float>(to_double(*c.in, v[i]));
      return a;
    };
    py::object b = py::none();
    if (c.op == ProbeOp::dot) b = values(c.b, c.rows, c.k);
    if (c.op == ProbeOp::matmul) b = values(c.b, c.k, c.cols);
    // What fn returned, checked here (the Python caller's error, in Python's terms): not an
    // array of numbers (None, a str) is a TypeError, the wrong number of values a ValueError.
    const py::object got = fn(values(c.a, c.rows, c.k), b);
    const std::int64_t want = c.op == ProbeOp::matmul ? c.rows * c.cols : c.rows;
    const std::string needs = c.op == ProbeOp::matmul
                                  ? fmt::format("{} values ({} rows × {} columns)", want, c.rows, c.cols)
                                  : fmt::format("{} values (one per row of a)", want);
    if (got.is_none())
      throw py::type_error(fmt::format("numfid.probe: fn returned None; it must return an array of {}", needs));
    const auto out = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(got);
    if (!out)
      throw py::type_error(fmt::format("numfid.probe: fn returned a {}, not an array of numbers; it must return an array of {}",
                                       Py_TYPE(got.ptr())->tp_name, needs));
    if (static_cast<std::int64_t>(out.size()) != want)
      throw py::value_error(fmt::format("numfid.probe: fn returned {} values (shape {}) for a call that needs {}", out.size(),
                                        py::repr(out.attr("shape")).cast<std::string>(), needs));
    std::vector<Bits> r;
    r.reserve(static_cast<std::size_t>(out.size()));
    for (py::ssize_t i = 0; i < out.size(); ++i) {
      const double v = out.data()[i];
      const Result x = convert_double(*o.out, v);
      if (x.status != status_ok && !std::isnan(v) && !std::isinf(v))
        throw py::value_error(fmt::format("numfid.probe: output {} = {} is not a {} value", i, v, o.out->name));
      r.push_back(x.bits);
    }
    return r;
  };
  const ProbeResult res = probe(box, o);
  py::dict d;
  d["pinned"] = res.pinned;
  d["yaml"] = res.yaml;
  d["model"] = res.model ? py::object(py::str(res.model->text())) : py::object(py::none());
  d["tree"] = res.tree;
  d["tree_note"] = res.tree_note;
  d["candidates"] = res.candidates;
  d["candidate_count"] = res.candidate_count < 0 ? py::object(py::none()) : py::object(py::int_(res.candidate_count));
  d["calls"] = res.calls;
  d["probe_rows"] = res.probe_rows;
  d["validation_elements"] = res.validation_elements;
  d["validation_mismatches"] = res.validation_mismatches;
  d["message"] = res.message;
  return d;
}

}  // namespace

}  // namespace numfid::python

PYBIND11_MODULE(_numfid, m) {
  using namespace numfid;
  using namespace numfid::python;
  m.doc() = "numfid's compiled core (use the `numfid` package)";
  // The library's bad-input exceptions are ValueError with the library's message (the CLI's).
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const ProfileError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  py::class_<CheckResult>(m, "CheckResult")
      .def("text", &CheckResult::text)
      .def("json", &CheckResult::json)
      .def("exit_code", &CheckResult::exit_code)
      .def_property_readonly("output_format", [](const CheckResult& r) { return std::string(r.output->name); })
      .def("predicted", [](const CheckResult& r, const std::vector<std::int64_t>& shape, bool bits) -> py::object {
        if (r.predicted.empty()) return py::none();
        return bits ? bits_array(*r.output, shape, r.predicted) : values_array(*r.output, shape, r.predicted);
      });
  py::class_<ToleranceResult>(m, "ToleranceResult")
      .def("text", &ToleranceResult::text)
      .def("json", &ToleranceResult::json);

  m.def(
      "check",
      [](std::string op, std::string claim, py::object a, py::object b, py::object c, py::object x, py::object addend,
         py::object ref, py::object gamma, py::object beta, std::optional<std::string> addend_format,
         std::optional<std::string> ref_profile, std::optional<int> axis, std::optional<double> eps, int worst,
         std::optional<std::string> variance, std::optional<std::string> softmax,
         std::optional<std::string> param_format, std::optional<std::string> norm_form,
         std::optional<std::string> masked_row) {
        CheckArgs args{std::move(op),
                       std::move(claim),
                       std::move(a),
                       std::move(b),
                       std::move(c),
                       std::move(x),
                       std::move(addend),
                       std::move(ref),
                       std::move(gamma),
                       std::move(beta),
                       std::move(addend_format),
                       std::move(ref_profile),
                       worst,
                       {.axis = axis,
                        .eps = eps,
                        .variance = std::move(variance),
                        .norm_form = std::move(norm_form),
                        .softmax = std::move(softmax),
                        .param_format = std::move(param_format),
                        .masked_row = std::move(masked_row)}};
        return check(args);
      },
      py::arg("op"), py::arg("claim"), py::arg("a") = py::none(), py::arg("b") = py::none(), py::arg("c") = py::none(),
      py::arg("x") = py::none(), py::arg("addend") = py::none(), py::arg("ref") = py::none(),
      py::arg("gamma") = py::none(), py::arg("beta") = py::none(), py::arg("addend_format") = py::none(),
      py::arg("ref_profile") = py::none(), py::arg("axis") = py::none(), py::arg("eps") = py::none(),
      py::arg("worst") = 8, py::arg("variance") = py::none(), py::arg("softmax") = py::none(),
      py::arg("param_format") = py::none(), py::arg("norm_form") = py::none(), py::arg("masked_row") = py::none());
  // The library's table of which op takes which option (the CLI's declarations and gate files
  // read the same).
  m.def("check_takes", [](const std::string& op, const std::string& name) { return check_takes(op, name); });
  m.def("check_options_list", [](const std::string& op) { return check_options_list(op); });
  m.def("check_op_names", &check_op_names);
  m.attr("max_worst") = max_worst;  // worst='s range, the CLI's --worst range
  m.def(
      "tol",
      [](const std::string& op, const std::string& claim_text, std::int64_t k, bool addend,
         std::optional<std::string> ref_profile, std::optional<std::string> target_profile, std::optional<double> eps,
         std::optional<std::string> variance, std::optional<std::string> softmax, std::optional<std::string> norm_form) {
        return without_gil([&] {
          if (op == "matmul" || op == "dot")  // the library names the CLI's --addend; here the keyword
            detail::refuse_addend_placement(parse_claim(claim_text), addend, fmt::format("numfid.tol('{}')", op), "addend=True");
          return tol(op, claim_text, k,
                     {.addend = addend,
                      .ref_profile = std::move(ref_profile),
                      .target_profile = std::move(target_profile),
                      .eps = eps,
                      .variance = std::move(variance),
                      .norm_form = std::move(norm_form),
                      .softmax = std::move(softmax)});
        });
      },
      py::arg("op"), py::arg("claim"), py::arg("k"), py::arg("addend") = false, py::arg("ref_profile") = py::none(),
      py::arg("target_profile") = py::none(), py::arg("eps") = py::none(), py::arg("variance") = py::none(),
      py::arg("softmax") = py::none(), py::arg("norm_form") = py::none());
  m.def("emulate", &emulate, py::arg("op"), py::arg("claim"), py::arg("a"), py::arg("b"), py::arg("c") = py::none(),
        py::arg("c_format") = py::none(), py::arg("bits") = false);
  m.def("emulate_sum", &emulate_sum_array, py::arg("claim"), py::arg("x"), py::arg("axis") = -1, py::arg("bits") = false);
  m.def("convert", &convert_array, py::arg("x"), py::arg("from_format"), py::arg("to"), py::arg("rounding") = "rne",
        py::arg("saturate") = false, py::arg("seed") = 0, py::arg("sr_bits") = 0, py::arg("bits") = false);
  m.def("profiles", &profiles_list);
  m.def("probe", &probe_callable, py::arg("fn"), py::arg("op"), py::arg("k"), py::arg("in_format"), py::arg("out_format"),
        py::arg("seed"), py::arg("budget"), py::arg("validation"), py::arg("name"));
  m.def("format_info", &format_info, py::arg("name"));
  m.def("format_names", [] {
    std::vector<std::string> names;
    for (const FormatSpec* f : all_formats) names.emplace_back(f->name);
    return names;
  });
  m.def("set_package_profiles", [](const std::string& dir) { package_profiles = dir; });
  m.def("profile_directory", &profile_directory);
}
