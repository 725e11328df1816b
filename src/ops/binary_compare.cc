// eq, ne, lt, le, gt, ge: bool results. Floats and complex follow
// torch.result_type; integers compare exactly whatever their signedness and
// width (uint64 max > int64 -1; a uint8 tensor > -1 is all true), as NumPy 2.
#include <utility>

#include "ops/binary_common.h"

namespace kiln {
namespace {

using bin::In;

enum class Cmp { Eq, Ne, Lt, Le, Gt, Ge };

const char* cmp_name(Cmp k) {
  static const char* kNames[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  return kNames[int(k)];
}
// a OP b == b FLIP(OP) a.
Cmp flip(Cmp k) {
  switch (k) {
    case Cmp::Lt: return Cmp::Gt;
    case Cmp::Le: return Cmp::Ge;
    case Cmp::Gt: return Cmp::Lt;
    case Cmp::Ge: return Cmp::Le;
    default: return k;
  }
}

// Runs comparison k's op on the prepared operands (the kernel compares exactly
// across integer dtypes).
void run_cmp(Cmp k, const char* op, const bin::Plan& p) {
  const Device d = bin::device(op, p);
  switch (k) {
    case Cmp::Eq:
      return ops::eq(d, p.a, p.b, p.dest);
    case Cmp::Ne:
      return ops::ne(d, p.a, p.b, p.dest);
    case Cmp::Lt:
      return ops::lt(d, p.a, p.b, p.dest);
    case Cmp::Le:
      return ops::le(d, p.a, p.b, p.dest);
    case Cmp::Gt:
      return ops::gt(d, p.a, p.b, p.dest);
    default:
      return ops::ge(d, p.a, p.b, p.dest);
  }
}

// a OP b for exact integer values a, b.
template <typename X, typename Y>
bool compare_ints(Cmp k, X x, Y y) {
  switch (k) {
    case Cmp::Eq:
      return std::cmp_equal(x, y);
    case Cmp::Ne:
      return std::cmp_not_equal(x, y);
    case Cmp::Lt:
      return std::cmp_less(x, y);
    case Cmp::Le:
      return std::cmp_less_equal(x, y);
    case Cmp::Gt:
      return std::cmp_greater(x, y);
    default:
      return std::cmp_greater_equal(x, y);
  }
}

// An integral value operand (Python int/bool or 0-dim integer tensor), exact.
struct IntValue {
  bool is_unsigned;  // held in u (a uint64 above INT64_MAX can only come from a uint64 tensor)
  int64_t i;
  uint64_t u;
};
IntValue int_value(In x) {
  const Scalar s = x.s ? *x.s : x.t->item();
  if (x.t && x.t->dtype() == DType::UInt64) return {true, 0, s.to<uint64_t>()};
  return {false, s.to<int64_t>(), 0};
}

bool compare_values(Cmp k, const IntValue& a, const IntValue& b) {
  if (a.is_unsigned) return b.is_unsigned ? compare_ints(k, a.u, b.u) : compare_ints(k, a.u, b.i);
  return b.is_unsigned ? compare_ints(k, a.i, b.u) : compare_ints(k, a.i, b.i);
}

// Exact comparison of integers (bool counts as 0/1) of any two dtypes.
Tensor compare_ints(Cmp k, In a, In b, const Tensor& out, const Tensor* self) {
  const char* op = cmp_name(k);
  const bool av = a.is_value(), bv = b.is_value();
  if (av && bv) {  // both values: one exact comparison
    const IntValue x = int_value(a), y = int_value(b);
    const bool r = compare_values(k, x, y);
    const Shape shape;
    Tensor final_out;
    Tensor dest = bin::make_dest(op, shape, DType::Bool, out, self, {a.t, b.t}, &final_out);
    dest.fill_(Scalar(r));
    return bin::finish(dest, final_out);
  }
  if (av || bv) {  // tensor OP value: compare in the tensor's dtype, or constant when out of range
    const In t = av ? b : a, v = av ? a : b;
    const Cmp kk = av ? flip(k) : k;  // now "tensor kk value"
    const IntValue val = int_value(v);
    const DType d = t.t->dtype();
    Tensor final_out;
    Device device;
    Tensor dest = bin::make_dest(op, t.t->sizes(), DType::Bool, out, self, {t.t}, &final_out, &device);
    int where = 0;  // -1: value below T's range, +1: above, 0: inside
    dispatch<kBoolSet | kIntSet>(d, op, [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) {
        if (val.is_unsigned) where = val.u > 1 ? 1 : 0;
        else where = val.i < 0 ? -1 : (val.i > 1 ? 1 : 0);
      } else {
        if (val.is_unsigned) where = std::in_range<T>(val.u) ? 0 : 1;
        else where = std::in_range<T>(val.i) ? 0 : (val.i < 0 ? -1 : 1);
      }
    });
    if (where != 0) {
      // x < v for every x when v is above the range; x > v when below.
      const bool r = kk == Cmp::Ne || (where > 0 ? (kk == Cmp::Lt || kk == Cmp::Le)
                                                 : (kk == Cmp::Gt || kk == Cmp::Ge));
      dest.fill_(Scalar(r));
      return bin::finish(dest, final_out);
    }
    bin::Plan p;
    p.device = device;
    p.shape = t.t->sizes();
    p.dest = dest;
    p.final_out = final_out;
    p.a = bin::make_arg(t, p.shape, d);
    p.b.is_value = true;
    p.b.dtype = d;
    p.b.v = val.is_unsigned ? Scalar(val.u) : Scalar(val.i);
    run_cmp(kk, op, p);
    return bin::finish(p);
  }
  // Two dimensioned tensors.
  DType da = a.t->dtype(), db = b.t->dtype();
  if (da != db) {
    const bool mixed64 = (da == DType::UInt64 && is_signed(db)) || (db == DType::UInt64 && is_signed(da));
    if (mixed64) {
      if (da != DType::UInt64) da = DType::Int64;
      if (db != DType::UInt64) db = DType::Int64;
    } else {
      da = db = promote_types(da, db);
    }
  }
  bin::Plan p;
  p.shape = bin::broadcast_all({a.t, b.t}, op);
  p.dest = bin::make_dest(op, p.shape, DType::Bool, out, self, {a.t, b.t}, &p.final_out, &p.device);
  p.a = bin::make_arg(a, p.shape, da);
  p.b = bin::make_arg(b, p.shape, db);
  run_cmp(k, op, p);
  return bin::finish(p);
}

Tensor compare_op(Cmp k, In a, In b, const Tensor& out, const Tensor* self) {
  const char* op = cmp_name(k);
  bin::check_no_fp8(op, a, b);
  if (is_integral(a.dtype(), true) && is_integral(b.dtype(), true) &&
      !(a.dtype() == DType::Bool && b.dtype() == DType::Bool))
    return compare_ints(k, a, b, out, self);
  const DType r = bin::result_type(a, b);
  if (is_complex(r) && k != Cmp::Eq && k != Cmp::Ne) bin::throw_unsupported(op, r, a, b);
  bin::Plan p = bin::make_plan(op, a, b, r, DType::Bool, out, self);
  run_cmp(k, op, p);
  return bin::finish(p);
}

Tensor eq_impl(In a, In b, const Tensor& o, const Tensor* s) { return compare_op(Cmp::Eq, a, b, o, s); }
Tensor ne_impl(In a, In b, const Tensor& o, const Tensor* s) { return compare_op(Cmp::Ne, a, b, o, s); }
Tensor lt_impl(In a, In b, const Tensor& o, const Tensor* s) { return compare_op(Cmp::Lt, a, b, o, s); }
Tensor le_impl(In a, In b, const Tensor& o, const Tensor* s) { return compare_op(Cmp::Le, a, b, o, s); }
Tensor gt_impl(In a, In b, const Tensor& o, const Tensor* s) { return compare_op(Cmp::Gt, a, b, o, s); }
Tensor ge_impl(In a, In b, const Tensor& o, const Tensor* s) { return compare_op(Cmp::Ge, a, b, o, s); }

}  // namespace

KILN_DEFINE_BINARY(eq, eq_impl)
KILN_DEFINE_BINARY(ne, ne_impl)
KILN_DEFINE_BINARY(lt, lt_impl)
KILN_DEFINE_BINARY(le, le_impl)
KILN_DEFINE_BINARY(gt, gt_impl)
KILN_DEFINE_BINARY(ge, ge_impl)

}  // namespace kiln
