// Shared pieces of the CPU kernels of the binary ops (ops/registry/binary.h):
// wrapping integer arithmetic, the typed loop that keeps value operands (Python
// numbers, 0-dim tensors) as one value in compute precision, the flag kernels
// raise on bad integer input, and the Highway fast path for f32/bf16/f16
// add/sub/mul/div.
#pragma once

#include <atomic>
#include <type_traits>

#include "cpu/binary.h"
#include "cpu/ops/loops.h"
#include "ops/registry/binary.h"

namespace kiln::cpu {

using ops::Operand;

// Each kernel file's registration, called by register_binary_kernels().
void register_binary_arith_kernels();
void register_binary_div_kernels();
void register_binary_compare_kernels();
void register_binary_logical_kernels();
void register_binary_math_kernels();
void register_binary_ternary_kernels();

// Wrapping integer arithmetic (no signed-overflow UB) and plain arithmetic
// otherwise.
template <typename C>
inline C wadd(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>)
    return C(std::make_unsigned_t<C>(a) + std::make_unsigned_t<C>(b));
  else
    return a + b;
}
template <typename C>
inline C wsub(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>)
    return C(std::make_unsigned_t<C>(a) - std::make_unsigned_t<C>(b));
  else
    return a - b;
}
template <typename C>
inline C wmul(C a, C b) {
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
  template <typename... Args>
  bool operator()(Args&&...) const {
    return false;
  }
};

// dest[i] = f(a[i], b[i]) with a, b of storage types A, B loaded into their
// compute types, the result stored as O. f must not throw (kernels run on the
// thread pool); report bad input through a Flag.
template <typename O, typename A, typename B, typename F, typename Fast = NoFast>
void run(const Tensor& dest, const Operand& a, const Operand& b, F f, Fast fast = {}) {
  using CA = compute_t<A>;
  using CB = compute_t<B>;
  if (dest.numel() == 0) return;
  const bool av = a.is_value, bv = b.is_value;
  const CA a0 = av ? a.v.template to<CA>() : CA{};
  const CB b0 = bv ? b.v.template to<CB>() : CB{};
  const Tensor* ops[3] = {&dest, av ? &dest : &a.t, bv ? &dest : &b.t};
  StridedLoop loop = StridedLoop::make(dest.shape(), ops, StridedLoop::Order::OutputMemory);
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
// division by zero; the kernel returns it and the front-end throws.
struct Flag {
  std::atomic<bool> set{false};
  void raise() const { const_cast<std::atomic<bool>&>(set).store(true, std::memory_order_relaxed); }
  explicit operator bool() const { return set.load(std::memory_order_relaxed); }
};

// The Highway fast path for contiguous float32 / bfloat16 / float16 add, sub, mul, div;
// other storage types fall back to the plain loop.
template <typename T>
auto simd_arith(ArithOp op) {
  return [op](T* o, const T* x, const T* y, compute_t<T> x0, compute_t<T> y0, int mode, int64_t n) {
    if constexpr (std::is_same_v<T, float>) {
      if (mode == 0)
        arith_f32(op, o, x, y, n);
      else if (mode == 1)
        arith_f32_scalar(op, o, x, y0, false, n);
      else
        arith_f32_scalar(op, o, y, x0, true, n);
      return true;
    } else if constexpr (std::is_same_v<T, bfloat16>) {
      auto* ob = reinterpret_cast<uint16_t*>(o);
      const auto* xb = reinterpret_cast<const uint16_t*>(x);
      const auto* yb = reinterpret_cast<const uint16_t*>(y);
      if (mode == 0)
        arith_bf16(op, ob, xb, yb, n);
      else if (mode == 1)
        arith_bf16_scalar(op, ob, xb, y0, false, n);
      else
        arith_bf16_scalar(op, ob, yb, x0, true, n);
      return true;
    } else if constexpr (std::is_same_v<T, half>) {
      auto* oh = reinterpret_cast<uint16_t*>(o);
      const auto* xh = reinterpret_cast<const uint16_t*>(x);
      const auto* yh = reinterpret_cast<const uint16_t*>(y);
      if (mode == 0)
        arith_f16(op, oh, xh, yh, n);
      else if (mode == 1)
        arith_f16_scalar(op, oh, xh, y0, false, n);
      else
        arith_f16_scalar(op, oh, yh, x0, true, n);
      return true;
    } else {
      return false;
    }
  };
}

}  // namespace kiln::cpu
