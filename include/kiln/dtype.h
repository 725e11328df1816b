// The one dtype table: names, sizes, kinds, C++ storage types, PyTorch's type
// promotion, and the dispatch helper that turns a runtime DType into a template
// argument.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "kiln/error.h"
#include "kiln/float_types.h"

namespace kiln {

enum class DType : uint8_t {
  Bool,
  UInt8,
  Int8,
  UInt16,
  Int16,
  UInt32,
  Int32,
  UInt64,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Float8_e4m3fn,
  Float8_e5m2,
  Complex64,
  Complex128,
};
inline constexpr int kNumDTypes = 17;

enum class DKind : uint8_t { Bool, Unsigned, Signed, Float, Float8, Complex };

struct DTypeInfo {
  const char* name;  // PyTorch's name, e.g. "float8_e4m3fn"
  uint8_t itemsize;
  DKind kind;
};

inline constexpr DTypeInfo kDTypeTable[kNumDTypes] = {
    {"bool", 1, DKind::Bool},
    {"uint8", 1, DKind::Unsigned},
    {"int8", 1, DKind::Signed},
    {"uint16", 2, DKind::Unsigned},
    {"int16", 2, DKind::Signed},
    {"uint32", 4, DKind::Unsigned},
    {"int32", 4, DKind::Signed},
    {"uint64", 8, DKind::Unsigned},
    {"int64", 8, DKind::Signed},
    {"float16", 2, DKind::Float},
    {"bfloat16", 2, DKind::Float},
    {"float32", 4, DKind::Float},
    {"float64", 8, DKind::Float},
    {"float8_e4m3fn", 1, DKind::Float8},
    {"float8_e5m2", 1, DKind::Float8},
    {"complex64", 8, DKind::Complex},
    {"complex128", 16, DKind::Complex},
};

constexpr const DTypeInfo& info(DType d) {
  // The mask keeps the index provably in range (and silences -Warray-bounds);
  // every DType value is below kNumDTypes.
  return kDTypeTable[unsigned(d) < unsigned(kNumDTypes) ? unsigned(d) : 0u];
}
constexpr size_t itemsize(DType d) { return info(d).itemsize; }
constexpr const char* name(DType d) { return info(d).name; }
constexpr bool is_complex(DType d) { return info(d).kind == DKind::Complex; }
constexpr bool is_fp8(DType d) { return info(d).kind == DKind::Float8; }
// Floating point, real: f16, bf16, f32, f64 and the FP8 types.
constexpr bool is_floating(DType d) {
  return info(d).kind == DKind::Float || info(d).kind == DKind::Float8;
}
constexpr bool is_integral(DType d, bool include_bool) {
  const DKind k = info(d).kind;
  return k == DKind::Signed || k == DKind::Unsigned || (include_bool && k == DKind::Bool);
}
constexpr bool is_signed(DType d) {
  const DKind k = info(d).kind;
  return k != DKind::Bool && k != DKind::Unsigned;
}

// Parses a PyTorch dtype name ("float32", "bfloat16", ...); throws TypeError.
DType dtype_from_name(const std::string& name);

// ---- C++ storage types --------------------------------------------------

template <DType D> struct cpp_type;
#define KILN_CPP_TYPE(D, T) \
  template <> struct cpp_type<DType::D> { using type = T; }
KILN_CPP_TYPE(Bool, bool);
KILN_CPP_TYPE(UInt8, uint8_t);
KILN_CPP_TYPE(Int8, int8_t);
KILN_CPP_TYPE(UInt16, uint16_t);
KILN_CPP_TYPE(Int16, int16_t);
KILN_CPP_TYPE(UInt32, uint32_t);
KILN_CPP_TYPE(Int32, int32_t);
KILN_CPP_TYPE(UInt64, uint64_t);
KILN_CPP_TYPE(Int64, int64_t);
KILN_CPP_TYPE(Float16, half);
KILN_CPP_TYPE(BFloat16, bfloat16);
KILN_CPP_TYPE(Float32, float);
KILN_CPP_TYPE(Float64, double);
KILN_CPP_TYPE(Float8_e4m3fn, float8_e4m3fn);
KILN_CPP_TYPE(Float8_e5m2, float8_e5m2);
KILN_CPP_TYPE(Complex64, complex64);
KILN_CPP_TYPE(Complex128, complex128);
#undef KILN_CPP_TYPE
template <DType D> using cpp_type_t = typename cpp_type<D>::type;

template <typename T> constexpr DType dtype_of();
#define KILN_DTYPE_OF(T, D) \
  template <> constexpr DType dtype_of<T>() { return DType::D; }
KILN_DTYPE_OF(bool, Bool)
KILN_DTYPE_OF(uint8_t, UInt8)
KILN_DTYPE_OF(int8_t, Int8)
KILN_DTYPE_OF(uint16_t, UInt16)
KILN_DTYPE_OF(int16_t, Int16)
KILN_DTYPE_OF(uint32_t, UInt32)
KILN_DTYPE_OF(int32_t, Int32)
KILN_DTYPE_OF(uint64_t, UInt64)
KILN_DTYPE_OF(int64_t, Int64)
KILN_DTYPE_OF(half, Float16)
KILN_DTYPE_OF(bfloat16, BFloat16)
KILN_DTYPE_OF(float, Float32)
KILN_DTYPE_OF(double, Float64)
KILN_DTYPE_OF(float8_e4m3fn, Float8_e4m3fn)
KILN_DTYPE_OF(float8_e5m2, Float8_e5m2)
KILN_DTYPE_OF(complex64, Complex64)
KILN_DTYPE_OF(complex128, Complex128)
#undef KILN_DTYPE_OF

// The type arithmetic on T is carried out in: float for the narrow floats
// (widen in registers, compute in f32, narrow on store), T otherwise.
template <typename T> struct compute_type { using type = T; };
template <> struct compute_type<half> { using type = float; };
template <> struct compute_type<bfloat16> { using type = float; };
template <> struct compute_type<float8_e4m3fn> { using type = float; };
template <> struct compute_type<float8_e5m2> { using type = float; };
template <typename T> using compute_t = typename compute_type<T>::type;

template <typename T> inline constexpr bool is_complex_v = false;
template <> inline constexpr bool is_complex_v<complex64> = true;
template <> inline constexpr bool is_complex_v<complex128> = true;
template <typename T>
inline constexpr bool is_narrow_float_v =
    std::is_same_v<T, half> || std::is_same_v<T, bfloat16> ||
    std::is_same_v<T, float8_e4m3fn> || std::is_same_v<T, float8_e5m2>;
template <typename T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_narrow_float_v<T>;

// ---- dtype sets and dispatch --------------------------------------------

using DTypeSet = uint32_t;
constexpr DTypeSet bit(DType d) { return DTypeSet(1) << int(d); }
inline constexpr DTypeSet kBoolSet = bit(DType::Bool);
inline constexpr DTypeSet kIntSet = bit(DType::UInt8) | bit(DType::Int8) | bit(DType::UInt16) |
                                    bit(DType::Int16) | bit(DType::UInt32) | bit(DType::Int32) |
                                    bit(DType::UInt64) | bit(DType::Int64);
inline constexpr DTypeSet kFloatSet = bit(DType::Float16) | bit(DType::BFloat16) |
                                      bit(DType::Float32) | bit(DType::Float64);
inline constexpr DTypeSet kFp8Set = bit(DType::Float8_e4m3fn) | bit(DType::Float8_e5m2);
inline constexpr DTypeSet kComplexSet = bit(DType::Complex64) | bit(DType::Complex128);
inline constexpr DTypeSet kAllSet = kBoolSet | kIntSet | kFloatSet | kFp8Set | kComplexSet;

// Calls f.template operator()<T>() with T the storage type of `d`, instantiating
// only the types in `Set`; any other dtype throws TypeError "[op] unsupported
// dtype X". Usage: dispatch<kFloatSet>(t.dtype(), "exp", [&]<typename T>() {...});
template <DTypeSet Set, typename F>
decltype(auto) dispatch(DType d, const char* op, F&& f) {
  switch (d) {
#define KILN_DISPATCH_CASE(D)                                        \
  case DType::D:                                                     \
    if constexpr ((Set & bit(DType::D)) != 0) {                      \
      return f.template operator()<cpp_type_t<DType::D>>();          \
    }                                                                \
    break;
    KILN_DISPATCH_CASE(Bool)
    KILN_DISPATCH_CASE(UInt8)
    KILN_DISPATCH_CASE(Int8)
    KILN_DISPATCH_CASE(UInt16)
    KILN_DISPATCH_CASE(Int16)
    KILN_DISPATCH_CASE(UInt32)
    KILN_DISPATCH_CASE(Int32)
    KILN_DISPATCH_CASE(UInt64)
    KILN_DISPATCH_CASE(Int64)
    KILN_DISPATCH_CASE(Float16)
    KILN_DISPATCH_CASE(BFloat16)
    KILN_DISPATCH_CASE(Float32)
    KILN_DISPATCH_CASE(Float64)
    KILN_DISPATCH_CASE(Float8_e4m3fn)
    KILN_DISPATCH_CASE(Float8_e5m2)
    KILN_DISPATCH_CASE(Complex64)
    KILN_DISPATCH_CASE(Complex128)
#undef KILN_DISPATCH_CASE
  }
  throw TypeError(std::string("[") + op + "] unsupported dtype " + name(d));
}

// ---- type promotion (PyTorch rules) ------------------------------------

// promote_types(a, b): the smallest dtype both convert to safely, as
// torch.promote_types. Mixing an FP8 dtype with any other dtype throws TypeError
// (FP8 converts only explicitly, through .to()).
DType promote_types(DType a, DType b);

// The default float dtype (float32) and its complex partner (complex64).
inline constexpr DType kDefaultFloat = DType::Float32;
inline constexpr DType kDefaultComplex = DType::Complex64;

// The category a value belongs to for PyTorch's result_type: a Python scalar or
// 0-dim tensor only raises the result's category, never its width within it.
enum class Priority : uint8_t { Dimensioned, ZeroDim, Scalar };

// Accumulates operands the way torch.result_type does.
class ResultType {
 public:
  void add(DType d, Priority p);
  DType get() const;  // throws ValueError when nothing was added

 private:
  bool has_[3] = {false, false, false};
  DType state_[3] = {DType::Bool, DType::Bool, DType::Bool};
};

// For ops that compute in floating point (true division, exp, sqrt, ...): an
// integral or bool dtype becomes float32, others are kept.
inline DType to_float_result(DType d) {
  return is_integral(d, true) ? kDefaultFloat : d;
}
// The real dtype matching a complex one (complex64 -> float32); others unchanged.
DType to_real(DType d);
// The complex dtype matching a real floating one (float32 -> complex64).
DType to_complex(DType d);

}  // namespace kiln
