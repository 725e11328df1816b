// Shared helpers for every binding file (python/src/*.cc). Include this header
// (not only nanobind) in each binding file: it carries the type casters that let
// a bound function take kiln::DType, std::optional<kiln::DType> and kiln::Scalar
// parameters directly, and return them as kiln.dtype objects / Python numbers.
//
// Typical op binding:
//   m.def("add", [](nb::handle a, nb::handle b, kiln::Scalar alpha) {
//     return kiln::add(py::to_tensor(a), py::to_tensor(b), alpha);
//   }, "input"_a, "other"_a, nb::kw_only(), "alpha"_a = 1);
//   py::def_tensor_method(m, "add");   // t.add(other) calls kiln.add(t, other)
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::py {

namespace nb = nanobind;

// The C++ side of a kiln.dtype object (kiln.float32, ...): one singleton per DType.
struct PyDType {
  DType value;
};

// The kiln.dtype singleton for d (a new reference).
nb::object dtype_object(DType d);
// A dtype from a kiln.dtype, a NumPy dtype or scalar type (np.float32, ml_dtypes.bfloat16),
// a name ("float32", "half", "bf16" is not a name), a torch dtype, or the Python types
// bool/int/float/complex (-> bool/int64/float64/complex128, as torch); TypeError otherwise.
DType to_dtype(nb::handle h);
// None -> nullopt, else to_dtype(h).
std::optional<DType> to_optional_dtype(nb::handle h);
// The NumPy dtype for d (ml_dtypes dtypes for bfloat16 and the FP8 types).
nb::object numpy_dtype(DType d);
// The kiln dtype of a NumPy dtype (by name, native byte order only); TypeError otherwise.
DType dtype_from_numpy(nb::handle np_dtype);

// True for a kiln.Tensor.
bool is_tensor(nb::handle h);
// True for a Python or NumPy number (bool, int, float, complex, np.generic numbers).
bool is_number(nb::handle h);
// Errors for Python numbers that do not fit (one rule throughout, kiln::OverflowError ->
// Python OverflowError): an int outside [-2^63, 2^64) anywhere, a size past int64, and a
// value stored into a dtype whose range it exceeds (fill_, full, masked_fill, x[i] = v,
// clamp bounds; torch raises RuntimeError "value cannot be converted to type uint8_t
// without overflow" for the last kind, NumPy 2 OverflowError). An index past int64 is
// out of range for every tensor: IndexError.
//
// A Python/NumPy number as a kiln::Scalar; TypeError for non-numbers, OverflowError
// "[op] Python integer N does not fit int64 or uint64" for integers outside [-2^63, 2^64).
Scalar to_scalar(nb::handle h, const char* op = "scalar");
// OverflowError "[op] <what> V cannot be converted to D without overflow" unless v.fits(d);
// TypeError for a complex value with an imaginary part into a real dtype.
void check_fits(const Scalar& v, DType d, const char* op, const char* what = "value");
// A Python int (or __index__ object) as int64: TypeError for non-integers (bool
// included), OverflowError "[op] <what> N does not fit int64".
int64_t to_int64(nb::handle h, const char* op, const char* what);
// A kiln::Scalar as a Python bool/int/float/complex.
nb::object scalar_to_python(const Scalar& s);

// True for a numpy.ndarray (any dtype).
bool is_numpy_array(nb::handle h);
// kiln.from_numpy: a zero-copy view of a NumPy array (keeps it alive). Throws ValueError
// on negative strides or strides that are not a multiple of the itemsize.
Tensor from_numpy(nb::handle array);
// kiln.tensor(data, dtype): a new tensor copied from nested lists/tuples of numbers, a
// number, a NumPy array or a kiln.Tensor; dtype inferred as torch (bool, int64, float32,
// complex64; a NumPy array keeps its dtype).
Tensor tensor_from_data(nb::handle data, std::optional<DType> dtype);
// An op's tensor argument: a kiln.Tensor as is (shares storage), a NumPy array as a
// zero-copy view where possible (else a copy), anything else through tensor_from_data.
Tensor to_tensor(nb::handle h);

// An op operand: a tensor or a Python number. A number stays a Scalar so that it takes
// part in type promotion with Priority::Scalar (torch's wrapped-number rule).
using Operand = std::variant<Tensor, Scalar>;
// Numbers -> Scalar, everything else -> to_tensor(h).
Operand to_operand(nb::handle h, const char* op = "scalar");

// out= as the C++ ops take it: an undefined Tensor for None; TypeError naming
// `op` for anything but a kiln.Tensor.
Tensor out_tensor(nb::handle out, const char* op = "out");
// A composite's return: `result` itself for out=None, else `out` after
// write_out (kiln/out.h) checked it and copied result in.
nb::object result_or_out(const char* op, Tensor result, nb::handle out);

// Calls f(x, y) with two binary-op operands as Tensor or Scalar (TypeError when
// both are numbers: torch wants at least one tensor).
template <typename F>
Tensor visit2(const char* op, nb::handle a, nb::handle b, F&& f) {
  const Operand x = to_operand(a, op), y = to_operand(b, op);
  return std::visit(
      [&](const auto& p, const auto& q) -> Tensor {
        using P = std::decay_t<decltype(p)>;
        using Q = std::decay_t<decltype(q)>;
        if constexpr (std::is_same_v<P, Scalar> && std::is_same_v<Q, Scalar>)
          throw TypeError(std::string("[") + op + "] expected at least one tensor argument, got two numbers");
        else
          return f(p, q);
      },
      x, y);
}
// Adds an operand to a ResultType with its torch priority (tensor: Dimensioned or ZeroDim).
void add_operand(ResultType& rt, const Operand& op);
// The tensor for an operand (a Scalar becomes a 0-dim tensor of dtype `d`).
Tensor operand_tensor(const Operand& op, DType d);

// A reduction's dim argument: None -> nullopt, an int -> {d}, a tuple/list of ints -> dims.
// IndexError for a dim past C int.
std::optional<std::vector<int>> to_dims(nb::handle h, const char* op = "dim");
// One dim: an int (TypeError otherwise), IndexError "[op] dimension N is out of range"
// past C int.
int to_dim(nb::handle h, const char* op);
// Dims from *dims arguments: f(0, 1), f((0, 1)) or f([0, 1]).
std::vector<int> dims_from_args(const nb::args& args, const char* op);
// A shape: an int -> {n}, or a tuple/list (or any sequence) of ints; OverflowError
// "[op] size N does not fit int64".
Shape to_shape(nb::handle h, const char* op = "size", const char* what = "size");
// Shape from *size arguments as torch takes them: f(2, 3), f((2, 3)) or f([2, 3]).
Shape shape_from_args(const nb::args& args, const char* op = "size");
// empty(shape, d) for factory `op`: ValueError for a negative size, OverflowError for an
// element count past int64, MemoryError "[op] cannot allocate N bytes (shape [..], dtype
// ..): out of memory" when the system refuses (factories.cc).
Tensor empty_checked(const char* op, const Shape& shape, DType d);
// ---- devices (device.cc) ----
// A device argument: None -> nullopt; a kiln.device, a string ("cpu", "cuda:1"), an
// int ordinal (a CUDA index, as torch) or another library's device (torch.device);
// ValueError for a malformed string, TypeError for anything else.
std::optional<Device> to_optional_device(nb::handle h, const char* op);
// The device a factory's device= names (None -> cpu); NotImplementedError
// "[op] device cuda is not available in this build; only cpu is" for one this build lacks.
Device check_device(nb::handle device, const char* op);

// ---- text (text.cc) ----
// str(h) as UTF-8 (escaped when it holds lone surrogates), repr as ascii() writes it,
// and the name of h's type: for messages.
std::string py_str(nb::handle h);
std::string py_repr(nb::handle h);
std::string py_type_name(nb::handle h);
// A str argument as UTF-8, valid while h lives: TypeError for non-str, ValueError
// "[op] <what> is not valid Unicode (lone surrogate U+D800 at index N)".
std::string_view utf8(nb::handle h, const char* op, const char* what);
std::optional<std::string_view> optional_utf8(nb::handle h, const char* op, const char* what);
// A file-system path (str, bytes or os.PathLike) as bytes for open(): str is encoded
// as open() does (surrogateescape); TypeError / ValueError with the op otherwise.
std::string to_path(nb::handle h, const char* op);

// Adds Tensor.<method>(*args, **kwargs) that calls the module function
// m.<function>(self, *args, **kwargs) (function defaults to method).
void def_tensor_method(nb::module_& m, const char* method, const char* function = nullptr);

}  // namespace kiln::py

// ---- type casters ------------------------------------------------------------

namespace nanobind::detail {

// kiln::DType <-> kiln.dtype (accepting everything kiln::py::to_dtype accepts). Anything
// else but None raises to_dtype's error ("[dtype] unknown dtype 'floot32'") from the
// caster itself: nanobind calls casters inside the call's try block, so the message
// reaches the user instead of "incompatible function arguments". No kiln function is
// overloaded on a dtype parameter, so no other overload is skipped by this.
template <> struct type_caster<kiln::DType> {
  NB_TYPE_CASTER(kiln::DType, const_name("kiln.dtype"))
  bool from_python(handle src, uint8_t, cleanup_list*) {
    if (src.is_none()) return false;
    value = kiln::py::to_dtype(src);
    return true;
  }
  static handle from_cpp(kiln::DType d, rv_policy, cleanup_list*) noexcept {
    return kiln::py::dtype_object(d).release();
  }
};

// kiln::Scalar <-> Python number. A number out of range raises OverflowError from the
// caster (see the DType caster); a non-number is "incompatible function arguments".
template <> struct type_caster<kiln::Scalar> {
  NB_TYPE_CASTER(kiln::Scalar, const_name("bool | int | float | complex"))
  bool from_python(handle src, uint8_t, cleanup_list*) {
    if (!kiln::py::is_number(src)) return false;
    value = kiln::py::to_scalar(src);
    return true;
  }
  static handle from_cpp(const kiln::Scalar& s, rv_policy, cleanup_list*) noexcept {
    try {
      return kiln::py::scalar_to_python(s).release();
    } catch (...) {
      return handle();
    }
  }
};

// std::optional<DType> / std::optional<Scalar>: nanobind's optional caster is noexcept,
// so the throwing casters above need their own (None -> nullopt, else as above).
template <typename T>
struct kiln_optional_caster {
  NB_TYPE_CASTER(std::optional<T>, make_caster<T>::Name + const_name(" | None"))
  bool from_python(handle src, uint8_t flags, cleanup_list* cleanup) {
    if (src.is_none()) {
      value.reset();
      return true;
    }
    make_caster<T> c;
    if (!c.from_python(src, flags, cleanup)) return false;
    value = c.value;
    return true;
  }
  static handle from_cpp(const std::optional<T>& v, rv_policy policy, cleanup_list* cleanup) noexcept {
    if (!v) return none().release();
    return make_caster<T>::from_cpp(*v, policy, cleanup);
  }
};
template <>
struct type_caster<std::optional<kiln::DType>> : kiln_optional_caster<kiln::DType> {};
template <>
struct type_caster<std::optional<kiln::Scalar>> : kiln_optional_caster<kiln::Scalar> {};

}  // namespace nanobind::detail
