// Machinery shared by the binary op front-ends (src/ops/binary_*.cc): operands
// that are tensors or Python numbers, torch.result_type over them, the out= /
// in-place destination, and the typed loop that keeps scalar and 0-dim operands
// as one value in compute precision (as torch's cpu-scalar path does).
#pragma once

#include <atomic>
#include <type_traits>

#include "cpu/binary.h"
#include "kiln/binary.h"
#include "ops/elementwise.h"

namespace kiln::bin {

// One operand of a binary op: a tensor or a Python number.
struct In {
  const Tensor* t = nullptr;
  const Scalar* s = nullptr;
  In(const Tensor& x) : t(&x) {}
  In(const Scalar& x) : s(&x) {}
  // Read once and broadcast as a value: a Python number or a 0-dim tensor.
  bool is_value() const { return s != nullptr || t->dim() == 0; }
  DType dtype() const { return t ? t->dtype() : s->promotion_dtype(); }
  Priority priority() const {
    return t ? (t->dim() > 0 ? Priority::Dimensioned : Priority::ZeroDim) : Priority::Scalar;
  }
  std::string desc() const;  // "Tensor[2, 3] float32" or "Scalar int64", for messages
};

inline void add_operand(ResultType& rt, In x) { rt.add(x.dtype(), x.priority()); }
DType result_type(In a, In b);

// Throws TypeError "[op] ... float8 ..." when a tensor operand has an FP8 dtype.
void check_no_fp8(const char* op, In a, In b);
// Throws TypeError "[op] not supported for <dtype>" naming both operands.
[[noreturn]] void throw_unsupported(const char* op, DType d, In a, In b);

// A prepared operand: a tensor of the compute dtype expanded to the output
// shape, or a value (Python number / 0-dim tensor) read once.
struct Arg {
  Tensor t;
  Scalar v;
  bool is_value = false;
};

struct Plan {
  Shape shape;       // broadcast shape
  Tensor dest;       // what the kernel writes; dtype = the op's result dtype
  Tensor final_out;  // defined when dest must be copied into out/self afterwards
  Arg a, b;
};

// Broadcasts, converts tensor operands to `compute`, and picks the destination:
// `self` (in-place; shape must equal the broadcast shape), `out`, or a new tensor
// of dtype `result`. With self/out the result must be castable (TypeError).
Plan make_plan(const char* op, In a, In b, DType compute, DType result, const Tensor* out,
               const Tensor* self);
// Prepares one operand for shape/compute dtype (used by the ternary ops too).
Arg make_arg(In x, const Shape& shape, DType compute);
// The destination for a result of `result` dtype and `shape`; sets final_out when
// the kernel must write a temporary (dtype differs or an input partly overlaps).
Tensor make_dest(const char* op, const Shape& shape, DType result, const Tensor* out,
                 const Tensor* self, std::initializer_list<const Tensor*> inputs, Tensor* final_out);
// Copies dest into final_out when needed and returns the op's result.
Tensor finish(Plan& p);
Tensor finish(const Tensor& dest, const Tensor& final_out);

Shape broadcast_all(std::initializer_list<const Tensor*> ts, const char* op);

// Wrapping integer arithmetic (no signed-overflow UB) and plain arithmetic
// otherwise.
template <typename C> inline C wadd(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>)
    return C(std::make_unsigned_t<C>(a) + std::make_unsigned_t<C>(b));
  else return a + b;
}
template <typename C> inline C wsub(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>)
    return C(std::make_unsigned_t<C>(a) - std::make_unsigned_t<C>(b));
  else return a - b;
}
template <typename C> inline C wmul(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    // Promote narrow unsigned types to unsigned int, not int, so the product wraps.
    using U = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;
    return C(U(std::make_unsigned_t<C>(a)) * U(std::make_unsigned_t<C>(b)));
  } else {
    return a * b;
  }
}

// A contiguous fast path hook: called with mode 0 (x, y tensors), 1 (x tensor, y
// value y0) or 2 (x value x0, y tensor); returns true when it did the work.
struct NoFast {
  template <typename... Args> bool operator()(Args&&...) const { return false; }
};

// dest[i] = f(a[i], b[i]) with a, b of storage types A, B loaded into their
// compute types, the result stored as O. f must not throw (kernels run on the
// thread pool); report bad input through a flag and throw afterwards.
template <typename O, typename A, typename B, typename F, typename Fast = NoFast>
void run(const Plan& p, F f, Fast fast = {}) {
  using CA = compute_t<A>;
  using CB = compute_t<B>;
  if (p.dest.numel() == 0) return;
  const bool av = p.a.is_value, bv = p.b.is_value;
  const CA a0 = av ? p.a.v.template to<CA>() : CA{};
  const CB b0 = bv ? p.b.v.template to<CB>() : CB{};
  const Tensor* ops[3] = {&p.dest, av ? &p.dest : &p.a.t, bv ? &p.dest : &p.b.t};
  StridedLoop loop = StridedLoop::make(p.dest.shape(), ops);
  for (int k = 1; k < 3; ++k) {
    if (k == 1 ? av : bv) {
      loop.data[k] = nullptr;
      loop.strides[k].fill(0);
    }
  }
  for_each(loop, kElementwiseGrain, [&](char** ptr, const int64_t* s, int64_t n) {
    // An inner stride of 0 (a broadcast column) is a value for this run too.
    const bool ab = av || s[1] == 0, bb = bv || s[2] == 0;
    const CA x0 = av ? a0 : (ab ? CA(detail::load<A>(ptr[1])) : CA{});
    const CB y0 = bv ? b0 : (bb ? CB(detail::load<B>(ptr[2])) : CB{});
    if (s[0] == int64_t(sizeof(O))) {
      O* o = reinterpret_cast<O*>(ptr[0]);
      const A* x = reinterpret_cast<const A*>(ptr[1]);
      const B* y = reinterpret_cast<const B*>(ptr[2]);
      if (!ab && !bb && s[1] == int64_t(sizeof(A)) && s[2] == int64_t(sizeof(B))) {
        if (fast(o, x, y, x0, y0, 0, n)) return;
        for (int64_t i = 0; i < n; ++i) o[i] = O(f(CA(x[i]), CB(y[i])));
        return;
      }
      if (!ab && bb && s[1] == int64_t(sizeof(A))) {
        if (fast(o, x, y, x0, y0, 1, n)) return;
        for (int64_t i = 0; i < n; ++i) o[i] = O(f(CA(x[i]), y0));
        return;
      }
      if (ab && !bb && s[2] == int64_t(sizeof(B))) {
        if (fast(o, x, y, x0, y0, 2, n)) return;
        for (int64_t i = 0; i < n; ++i) o[i] = O(f(x0, CB(y[i])));
        return;
      }
      if (ab && bb) {
        const O r = O(f(x0, y0));
        for (int64_t i = 0; i < n; ++i) o[i] = r;
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      const CA x = ab ? x0 : CA(detail::load<A>(ptr[1] + i * s[1]));
      const CB y = bb ? y0 : CB(detail::load<B>(ptr[2] + i * s[2]));
      detail::store<O>(ptr[0] + i * s[0], O(f(x, y)));
    }
  });
}

// A flag kernels raise (from any thread) to report bad input, e.g. an integer
// division by zero; the front-end throws once the loop is done.
struct Flag {
  std::atomic<bool> set{false};
  void raise() const { const_cast<std::atomic<bool>&>(set).store(true, std::memory_order_relaxed); }
  explicit operator bool() const { return set.load(std::memory_order_relaxed); }
};

// The Highway fast path for contiguous float32 / bfloat16 / float16 add, sub, mul, div;
// other storage types fall back to the plain loop.
template <typename T>
auto simd_arith(cpu::ArithOp op) {
  return [op](T* o, const T* x, const T* y, compute_t<T> x0, compute_t<T> y0, int mode, int64_t n) {
    if constexpr (std::is_same_v<T, float>) {
      if (mode == 0) cpu::arith_f32(op, o, x, y, n);
      else if (mode == 1) cpu::arith_f32_scalar(op, o, x, y0, false, n);
      else cpu::arith_f32_scalar(op, o, y, x0, true, n);
      return true;
    } else if constexpr (std::is_same_v<T, bfloat16>) {
      auto* ob = reinterpret_cast<uint16_t*>(o);
      const auto* xb = reinterpret_cast<const uint16_t*>(x);
      const auto* yb = reinterpret_cast<const uint16_t*>(y);
      if (mode == 0) cpu::arith_bf16(op, ob, xb, yb, n);
      else if (mode == 1) cpu::arith_bf16_scalar(op, ob, xb, y0, false, n);
      else cpu::arith_bf16_scalar(op, ob, yb, x0, true, n);
      return true;
    } else if constexpr (std::is_same_v<T, half>) {
      auto* oh = reinterpret_cast<uint16_t*>(o);
      const auto* xh = reinterpret_cast<const uint16_t*>(x);
      const auto* yh = reinterpret_cast<const uint16_t*>(y);
      if (mode == 0) cpu::arith_f16(op, oh, xh, yh, n);
      else if (mode == 1) cpu::arith_f16_scalar(op, oh, xh, y0, false, n);
      else cpu::arith_f16_scalar(op, oh, yh, x0, true, n);
      return true;
    } else {
      return false;
    }
  };
}

}  // namespace kiln::bin

// Defines the five public overloads of a plain binary op in terms of
// impl(In a, In b, const Tensor* out, const Tensor* self).
#define KILN_DEFINE_BINARY(op, impl)                                                          \
  Tensor op(const Tensor& a, const Tensor& b, const Tensor* out) { return impl(a, b, out, nullptr); } \
  Tensor op(const Tensor& a, const Scalar& b, const Tensor* out) { return impl(a, b, out, nullptr); } \
  Tensor op(const Scalar& a, const Tensor& b, const Tensor* out) { return impl(a, b, out, nullptr); } \
  const Tensor& op##_(const Tensor& self, const Tensor& other) {                              \
    impl(self, other, nullptr, &self);                                                        \
    return self;                                                                              \
  }                                                                                           \
  const Tensor& op##_(const Tensor& self, const Scalar& other) {                              \
    impl(self, other, nullptr, &self);                                                        \
    return self;                                                                              \
  }
