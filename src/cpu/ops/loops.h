// The CPU backend's typed elementwise loops: run a scalar functor over tensors
// through a StridedLoop, with contiguous and scalar-broadcast fast paths (plain
// loops the compiler vectorizes; hot float32 paths call the Highway kernels of
// src/cpu instead). In/Out/A/B/C are storage types.
#pragma once

#include <cstring>

#include "core/cast.h"
#include "core/strided_loop.h"
#include "kiln/tensor.h"

namespace kiln {

namespace detail {
template <typename T>
inline T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
inline void store(char* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}
}  // namespace detail

// out[i] = f(in[i]). `out` and `in` have the same shape; In/Out are storage types.
template <typename Out, typename In, typename F>
void unary_loop(const Tensor& out, const Tensor& in, F f) {
  const Tensor* ops[2] = {&out, &in};
  const StridedLoop loop = StridedLoop::make(out.shape(), ops, StridedLoop::Order::OutputMemory);
  for_each(loop, kElementwiseGrain, [&f](char** p, const int64_t* s, int64_t n) {
    if (s[0] == int64_t(sizeof(Out)) && s[1] == int64_t(sizeof(In))) {
      Out* o = reinterpret_cast<Out*>(p[0]);
      const In* x = reinterpret_cast<const In*>(p[1]);
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        detail::store<Out>(p[0] + i * s[0], f(detail::load<In>(p[1] + i * s[1])));
    }
  });
}

// out[i] = f(a[i], b[i]). a and b are already expanded to out's shape.
template <typename Out, typename A, typename B, typename F>
void binary_loop(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  const Tensor* ops[3] = {&out, &a, &b};
  const StridedLoop loop = StridedLoop::make(out.shape(), ops, StridedLoop::Order::OutputMemory);
  for_each(loop, kElementwiseGrain, [&f](char** p, const int64_t* s, int64_t n) {
    constexpr int64_t so = sizeof(Out), sa = sizeof(A), sb = sizeof(B);
    if (s[0] == so && s[1] == sa && s[2] == sb) {
      Out* o = reinterpret_cast<Out*>(p[0]);
      const A* x = reinterpret_cast<const A*>(p[1]);
      const B* y = reinterpret_cast<const B*>(p[2]);
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
    } else if (s[0] == so && s[1] == sa && s[2] == 0) {
      Out* o = reinterpret_cast<Out*>(p[0]);
      const A* x = reinterpret_cast<const A*>(p[1]);
      const B y = detail::load<B>(p[2]);
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y);
    } else if (s[0] == so && s[1] == 0 && s[2] == sb) {
      Out* o = reinterpret_cast<Out*>(p[0]);
      const A x = detail::load<A>(p[1]);
      const B* y = reinterpret_cast<const B*>(p[2]);
      for (int64_t i = 0; i < n; ++i) o[i] = f(x, y[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        detail::store<Out>(p[0] + i * s[0],
                           f(detail::load<A>(p[1] + i * s[1]), detail::load<B>(p[2] + i * s[2])));
    }
  });
}

// out[i] = f(a[i], b[i], c[i]). a, b, c already expanded to out's shape.
template <typename Out, typename A, typename B, typename C, typename F>
void ternary_loop(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c, F f) {
  const Tensor* ops[4] = {&out, &a, &b, &c};
  const StridedLoop loop = StridedLoop::make(out.shape(), ops, StridedLoop::Order::OutputMemory);
  for_each(loop, kElementwiseGrain, [&f](char** p, const int64_t* s, int64_t n) {
    if (s[0] == int64_t(sizeof(Out)) && s[1] == int64_t(sizeof(A)) && s[2] == int64_t(sizeof(B)) &&
        s[3] == int64_t(sizeof(C))) {  // all unit-stride: typed pointers, so the loop vectorizes
      Out* o = reinterpret_cast<Out*>(p[0]);
      const A* x = reinterpret_cast<const A*>(p[1]);
      const B* y = reinterpret_cast<const B*>(p[2]);
      const C* z = reinterpret_cast<const C*>(p[3]);
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i], z[i]);
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      detail::store<Out>(p[0] + i * s[0],
                         f(detail::load<A>(p[1] + i * s[1]), detail::load<B>(p[2] + i * s[2]),
                           detail::load<C>(p[3] + i * s[3])));
  });
}

}  // namespace kiln
