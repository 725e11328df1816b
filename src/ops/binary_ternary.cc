// Ternary elementwise ops: where, clamp (and clamp_min/clamp_max), lerp, addcmul.
#include <cmath>

#include "ops/binary_common.h"

namespace kiln {
namespace {

using bin::In;

// x converted to `dtype` and broadcast to `shape` (a value becomes a 0-dim tensor).
Tensor as_operand(In x, const Shape& shape, DType dtype) {
  Tensor t = x.t ? (x.t->dtype() == dtype ? *x.t : x.t->to(dtype)) : scalar_tensor(*x.s, dtype);
  return t.expand(shape);
}

// Shape of a tensor operand, or [] for a Python number.
const Tensor* shape_of(In x) { return x.t; }

[[noreturn]] void throw_fp8(const char* op, DType d) {
  throw TypeError(std::string("[") + op + "] arithmetic on float8 dtypes is not supported (got " + name(d) +
                  "); convert with .to() first");
}

// ---- where ------------------------------------------------------------------------

Tensor where_impl(const Tensor& cond, In a, In b, const Tensor* out) {
  if (cond.dtype() != DType::Bool && cond.dtype() != DType::UInt8)
    throw TypeError(std::string("[where] condition must be a bool (or uint8) tensor, got ") + name(cond.dtype()));
  const DType r = bin::result_type(a, b);
  const Shape shape = bin::broadcast_all({&cond, shape_of(a), shape_of(b)}, "where");
  Tensor final_out;
  const Tensor dest = bin::make_dest("where", shape, r, out, nullptr, {&cond, a.t, b.t}, &final_out);
  const Tensor c = cond.expand(shape);
  const Tensor x = as_operand(a, shape, r), y = as_operand(b, shape, r);
  dispatch<kAllSet>(r, "where", [&]<typename T>() {
    // bool storage is 0/1, so both condition dtypes load as a byte.
    ternary_loop<T, uint8_t, T, T>(dest, c, x, y, [](uint8_t k, T u, T v) { return k ? u : v; });
  });
  return bin::finish(dest, final_out);
}

// ---- clamp ---------------------------------------------------------------------------

// Lower then upper bound; NaN in x or in a bound propagates; min > max gives max.
template <typename C> inline C clamp_lo(C x, C lo) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(x)) return x;
    if (std::isnan(lo)) return lo;
  }
  return x < lo ? lo : x;
}
template <typename C> inline C clamp_hi(C x, C hi) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(x)) return x;
    if (std::isnan(hi)) return hi;
  }
  return x > hi ? hi : x;
}

void check_clamp_dtype(DType r, DType x) {
  if (is_fp8(x)) throw_fp8("clamp", x);
  if (r == DType::Bool || is_complex(r))
    throw TypeError(std::string("[clamp] not supported for dtype ") + name(r));
}

Tensor clamp_scalar(const Tensor& x, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi,
                    const Tensor* out, const Tensor* self) {
  if (!lo && !hi) throw ValueError("[clamp] at least one of 'min' or 'max' must not be None");
  ResultType rt;
  rt.add(x.dtype(), x.dim() > 0 ? Priority::Dimensioned : Priority::ZeroDim);
  if (lo) rt.add(lo->promotion_dtype(), Priority::Scalar);
  if (hi) rt.add(hi->promotion_dtype(), Priority::Scalar);
  const DType r = rt.get();
  check_clamp_dtype(r, x.dtype());
  bin::Plan p;
  p.shape = x.sizes();
  p.dest = bin::make_dest("clamp", p.shape, r, out, self, {&x}, &p.final_out);
  p.a = bin::make_arg(x, p.shape, r);
  p.b.is_value = true;
  dispatch<kIntSet | kFloatSet>(r, "clamp", [&]<typename T>() {
    using C = compute_t<T>;
    const bool has_lo = bool(lo), has_hi = bool(hi);
    const C l = lo ? lo->to<C>() : C{}, h = hi ? hi->to<C>() : C{};
    bin::run<T, T, T>(p, [=](C v, C) {
      if (has_lo) v = clamp_lo(v, l);
      if (has_hi) v = clamp_hi(v, h);
      return v;
    });
  });
  return bin::finish(p);
}

Tensor clamp_tensor(const Tensor& x, const std::optional<Tensor>& lo, const std::optional<Tensor>& hi,
                    const Tensor* out, const Tensor* self) {
  const Tensor* tl = lo && lo->defined() ? &*lo : nullptr;
  const Tensor* th = hi && hi->defined() ? &*hi : nullptr;
  if (!tl && !th) throw ValueError("[clamp] at least one of 'min' or 'max' must not be None");
  ResultType rt;
  for (const Tensor* t : {&x, tl, th})
    if (t) rt.add(t->dtype(), t->dim() > 0 ? Priority::Dimensioned : Priority::ZeroDim);
  const DType r = rt.get();
  check_clamp_dtype(r, x.dtype());
  const Shape shape = bin::broadcast_all({&x, tl, th}, "clamp");
  Tensor final_out;
  const Tensor dest = bin::make_dest("clamp", shape, r, out, self, {&x, tl, th}, &final_out);
  const Tensor xe = as_operand(x, shape, r);
  dispatch<kIntSet | kFloatSet>(r, "clamp", [&]<typename T>() {
    using C = compute_t<T>;
    auto load = [](T v) { return C(v); };
    if (tl && th) {
      ternary_loop<T, T, T, T>(dest, xe, as_operand(*tl, shape, r), as_operand(*th, shape, r),
                               [&](T v, T l, T h) { return T(clamp_hi(clamp_lo(load(v), load(l)), load(h))); });
    } else if (tl) {
      binary_loop<T, T, T>(dest, xe, as_operand(*tl, shape, r), [&](T v, T l) { return T(clamp_lo(load(v), load(l))); });
    } else {
      binary_loop<T, T, T>(dest, xe, as_operand(*th, shape, r), [&](T v, T h) { return T(clamp_hi(load(v), load(h))); });
    }
  });
  return bin::finish(dest, final_out);
}

// ---- lerp ------------------------------------------------------------------------------

template <typename C, typename W> inline C lerp_value(C s, C e, W w) {
  using std::abs;
  // torch's formula: exact at both ends, symmetric in rounding.
  if (abs(w) < 0.5) return s + w * (e - s);
  return e - (e - s) * (W(1) - w);
}

void check_lerp(const Tensor& start, const Tensor& end, const Tensor* weight) {
  if (end.dtype() != start.dtype() || (weight && weight->dtype() != start.dtype()))
    throw TypeError(std::string("[lerp] expected start, end") + (weight ? " and weight" : "") +
                    " to share one dtype, got " + name(start.dtype()) + ", " + name(end.dtype()) +
                    (weight ? std::string(", ") + name(weight->dtype()) : std::string()));
  if (is_fp8(start.dtype())) throw_fp8("lerp", start.dtype());
  if (!is_floating(start.dtype()) && !is_complex(start.dtype()))
    throw TypeError(std::string("[lerp] expected a floating point or complex dtype, got ") + name(start.dtype()));
}

Tensor lerp_impl(const Tensor& start, const Tensor& end, const Scalar* ws, const Tensor* wt,
                 const Tensor* out, const Tensor* self) {
  check_lerp(start, end, wt);
  const DType r = start.dtype();
  const Shape shape = bin::broadcast_all({&start, &end, wt}, "lerp");
  Tensor final_out;
  const Tensor dest = bin::make_dest("lerp", shape, r, out, self, {&start, &end, wt}, &final_out);
  const Tensor s = start.expand(shape), e = end.expand(shape);
  dispatch<kFloatSet | kComplexSet>(r, "lerp", [&]<typename T>() {
    using C = compute_t<T>;
    if (ws) {
      const C w = ws->to<C>();
      binary_loop<T, T, T>(dest, s, e, [w](T a, T b) { return T(lerp_value(C(a), C(b), w)); });
    } else {
      ternary_loop<T, T, T, T>(dest, s, e, wt->expand(shape),
                               [](T a, T b, T w) { return T(lerp_value(C(a), C(b), C(w))); });
    }
  });
  return bin::finish(dest, final_out);
}

// ---- addcmul --------------------------------------------------------------------------

Tensor addcmul_impl(const Tensor& input, const Tensor& t1, const Tensor& t2, const Scalar& value,
                    const Tensor* out, const Tensor* self) {
  ResultType rt;
  for (const Tensor* t : {&input, &t1, &t2}) {
    if (is_fp8(t->dtype())) throw_fp8("addcmul", t->dtype());
    rt.add(t->dtype(), t->dim() > 0 ? Priority::Dimensioned : Priority::ZeroDim);
  }
  const DType r = rt.get();
  if (r == DType::Bool) throw TypeError("[addcmul] not supported for dtype bool");
  if (is_integral(r, false) && !(value.is_integral() || value.is_bool()))
    throw TypeError(std::string("[addcmul] for integral input tensors (") + name(r) +
                    "), argument value must not be a floating point number");
  if (value.is_complex() && !is_complex(r))
    throw TypeError("[addcmul] value must not be complex for non-complex tensors");
  const Shape shape = bin::broadcast_all({&input, &t1, &t2}, "addcmul");
  Tensor final_out;
  const Tensor dest = bin::make_dest("addcmul", shape, r, out, self, {&input, &t1, &t2}, &final_out);
  const Tensor a = as_operand(input, shape, r), b = as_operand(t1, shape, r), c = as_operand(t2, shape, r);
  dispatch<kIntSet | kFloatSet | kComplexSet>(r, "addcmul", [&]<typename T>() {
    using C = compute_t<T>;
    const C v = value.to<C>();
    ternary_loop<T, T, T, T>(dest, a, b, c, [v](T x, T y, T z) {
      return T(bin::wadd(C(x), bin::wmul(bin::wmul(v, C(y)), C(z))));
    });
  });
  return bin::finish(dest, final_out);
}

}  // namespace

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor* out) {
  return where_impl(cond, a, b, out);
}
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b, const Tensor* out) {
  return where_impl(cond, a, b, out);
}
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b, const Tensor* out) {
  return where_impl(cond, a, b, out);
}
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b, const Tensor* out) {
  return where_impl(cond, a, b, out);
}

Tensor clamp(const Tensor& x, const std::optional<Scalar>& min, const std::optional<Scalar>& max,
             const Tensor* out) {
  return clamp_scalar(x, min, max, out, nullptr);
}
Tensor clamp(const Tensor& x, const std::optional<Tensor>& min, const std::optional<Tensor>& max,
             const Tensor* out) {
  return clamp_tensor(x, min, max, out, nullptr);
}
const Tensor& clamp_(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  clamp_scalar(self, min, max, nullptr, &self);
  return self;
}
const Tensor& clamp_(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  clamp_tensor(self, min, max, nullptr, &self);
  return self;
}
Tensor clamp_min(const Tensor& x, const Scalar& min, const Tensor* out) {
  return clamp_scalar(x, min, std::nullopt, out, nullptr);
}
Tensor clamp_min(const Tensor& x, const Tensor& min, const Tensor* out) {
  return clamp_tensor(x, min, std::nullopt, out, nullptr);
}
Tensor clamp_max(const Tensor& x, const Scalar& max, const Tensor* out) {
  return clamp_scalar(x, std::nullopt, max, out, nullptr);
}
Tensor clamp_max(const Tensor& x, const Tensor& max, const Tensor* out) {
  return clamp_tensor(x, std::nullopt, max, out, nullptr);
}

Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight, const Tensor* out) {
  return lerp_impl(start, end, &weight, nullptr, out, nullptr);
}
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight, const Tensor* out) {
  return lerp_impl(start, end, nullptr, &weight, out, nullptr);
}
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Scalar& weight) {
  lerp_impl(self, end, &weight, nullptr, nullptr, &self);
  return self;
}
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Tensor& weight) {
  lerp_impl(self, end, nullptr, &weight, nullptr, &self);
  return self;
}

Tensor addcmul(const Tensor& input, const Tensor& t1, const Tensor& t2, const Scalar& value,
               const Tensor* out) {
  return addcmul_impl(input, t1, t2, value, out, nullptr);
}
const Tensor& addcmul_(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  addcmul_impl(self, t1, t2, value, nullptr, &self);
  return self;
}

}  // namespace kiln
