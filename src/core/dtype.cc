#include "kiln/dtype.h"

#include <algorithm>

namespace kiln {

DType dtype_from_name(const std::string& name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (name == kDTypeTable[i].name) return DType(i);
  // Common aliases, as torch spells them.
  static const std::pair<const char*, DType> kAliases[] = {
      {"float", DType::Float32},  {"double", DType::Float64}, {"half", DType::Float16},
      {"long", DType::Int64},     {"int", DType::Int32},      {"short", DType::Int16},
      {"cfloat", DType::Complex64}, {"cdouble", DType::Complex128},
  };
  for (const auto& [alias, d] : kAliases)
    if (name == alias) return d;
  throw TypeError("[dtype] unknown dtype name '" + name + "'");
}

DType to_real(DType d) {
  if (d == DType::Complex64) return DType::Float32;
  if (d == DType::Complex128) return DType::Float64;
  return d;
}

DType to_complex(DType d) {
  switch (d) {
    case DType::Float64:
    case DType::Complex128: return DType::Complex128;
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32:
    case DType::Complex64: return DType::Complex64;
    default: throw TypeError(std::string("[dtype] no complex dtype for ") + name(d));
  }
}

namespace {
DType signed_of_size(size_t bytes) {
  switch (bytes) {
    case 1: return DType::Int8;
    case 2: return DType::Int16;
    case 4: return DType::Int32;
    default: return DType::Int64;
  }
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_fp8(a) || is_fp8(b))
    throw TypeError(std::string("[promote_types] promotion for float8 types is not supported, "
                                "attempted to promote ") + name(a) + " and " + name(b) +
                    "; convert explicitly with .to()");
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if (is_complex(a) || is_complex(b)) {
    const bool wide = a == DType::Float64 || b == DType::Float64 || a == DType::Complex128 ||
                      b == DType::Complex128;
    return wide ? DType::Complex128 : DType::Complex64;
  }
  const bool fa = is_floating(a), fb = is_floating(b);
  if (fa && fb) {
    const bool narrow_a = itemsize(a) == 2, narrow_b = itemsize(b) == 2;
    if (narrow_a && narrow_b) return DType::Float32;  // float16 with bfloat16
    return itemsize(a) >= itemsize(b) ? a : b;
  }
  if (fa) return a;
  if (fb) return b;
  // Both integers.
  const bool sa = is_signed(a), sb = is_signed(b);
  if (sa == sb) return itemsize(a) >= itemsize(b) ? a : b;
  const DType u = sa ? b : a, s = sa ? a : b;
  if (itemsize(u) < itemsize(s)) return s;
  if (u == DType::UInt64)
    throw TypeError(std::string("[promote_types] no integer dtype holds both ") + name(a) +
                    " and " + name(b) + "; convert one explicitly");
  return signed_of_size(itemsize(u) * 2);
}

void ResultType::add(DType d, Priority p) {
  const int i = int(p);
  state_[i] = has_[i] ? promote_types(state_[i], d) : d;
  has_[i] = true;
}

namespace {
// torch's combine_categories: the lower-priority category raises the result's
// kind (bool < integer < float < complex) but not its width within a kind.
bool combine(bool has_hi, DType hi, bool has_lo, DType lo, DType* out) {
  if (!has_hi) {
    *out = lo;
    return has_lo;
  }
  if (!has_lo || is_complex(hi)) {
    *out = hi;
    return true;
  }
  if (is_complex(lo)) {
    *out = is_floating(hi) ? to_complex(hi) : lo;
    return true;
  }
  if (is_floating(hi)) {
    *out = hi;
    return true;
  }
  if (hi == DType::Bool || is_floating(lo)) {
    *out = promote_types(hi, lo);
    return true;
  }
  *out = hi;
  return true;
}
}  // namespace

DType ResultType::get() const {
  DType lower;
  const bool has_lower = combine(has_[1], state_[1], has_[2], state_[2], &lower);
  DType result;
  if (!combine(has_[0], state_[0], has_lower, lower, &result))
    throw ValueError("[result_type] no operands");
  return result;
}

}  // namespace kiln
