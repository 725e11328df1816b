// CPU kernels of dropout and dropout_backward (ops/registry/dropout.h): one
// pass that draws each mask word from Philox and writes the result. Element i
// depends on (seed, offset, i) alone, so any split across threads gives the
// same bits. Constants and roundings follow torch's composite (noise tensor in
// x's dtype, then x * noise [+ b]), so float32/float64 results match torch's
// for the same mask; bfloat16/float16 compute in float32.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "cpu/ops/register.h"
#include "kiln/dtype.h"
#include "kiln/random.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

constexpr double kSeluAlpha = 1.7580993408473766;  // SELU's scale * alpha: -its negative saturation

// Draw j is kept when its 32-bit word is at least this: ceil(p * 2^32)
// (exact in double; 2^32 for p == 1 keeps nothing).
uint64_t keep_threshold(double p) { return uint64_t(std::ceil(p * 4294967296.0)); }

// The multiplier of kept elements and the additive terms, in compute type C,
// each rounded through the storage type T where torch's noise tensor holds it.
template <typename T, typename C>
struct Consts {
  C keep_mul = 0, keep_add = 0, drop_add = 0;
  bool affine = false;  // alpha dropout with p < 1: add keep_add / drop_add
};
template <typename T, typename C>
C round_t(C v) {
  return C(T(v));
}
template <typename T, typename C>
Consts<T, C> consts(const DropoutMask& m) {
  Consts<T, C> k;
  if (m.p >= 1.0) return k;  // x * 0, as torch's p == 1 shortcut
  if (!m.alpha) {
    k.keep_mul = round_t<T>(C(1) / C(1.0 - m.p));
    return k;
  }
  const double a = 1.0 / std::sqrt((kSeluAlpha * kSeluAlpha * m.p + 1.0) * (1.0 - m.p));
  const C c1 = C(kSeluAlpha * a), c2 = C(kSeluAlpha * a * m.p);
  k.keep_mul = round_t<T>(C(a));
  // b = (noise - 1) * alpha * a + alpha * a * p, each step in T.
  k.keep_add = round_t<T>(c2);
  k.drop_add = round_t<T>(round_t<T>(-c1) + c2);
  k.affine = true;
  return k;
}

// body(begin, end, keep) over runs of elements [begin, end) that share a draw,
// split across threads by element.
template <typename Body>
void for_each_run(int64_t n, const DropoutMask& m, Body body) {
  const uint64_t thr = keep_threshold(m.p);
  const int64_t group = m.group;
  parallel_for(0, n, 1 << 14, [&](int64_t b, int64_t e) {
    uint64_t have = 0;
    bool valid = false;
    uint32_t w[4];
    for (int64_t i = b; i < e;) {
      const int64_t j = group == 1 ? i : i / group;
      const int64_t end = std::min(e, (j + 1) * group);
      bool keep = false;
      if (m.p < 1.0) {
        const uint64_t c = m.offset + uint64_t(j) / 4;
        if (!valid || c != have) {
          philox(c, m.seed, w);
          have = c;
          valid = true;
        }
        keep = uint64_t(w[j % 4]) >= thr;
      }
      body(i, end, keep);
      i = end;
    }
  });
}

template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Runs fn<T, C>(src, dst, n) with src = `in` contiguous and dst written into
// `out` (directly when out is contiguous).
template <typename Fn>
void with_buffers(const Tensor& in, const Tensor& out, const char* op, Fn fn) {
  const int64_t n = in.numel();
  if (n == 0) return;
  const Tensor src = in.contiguous();
  const bool direct = out.is_contiguous();
  const Tensor dst = direct ? out : empty(in.sizes(), in.dtype());
  dispatch<kFloatSet>(in.dtype(), op, [&]<typename T>() {
    fn.template operator()<T, compute_t<T>>(src.data<T>(), dst.data<T>(), n);
  });
  if (!direct) Tensor(out).copy_(dst);
}

// x: [*] float; out: x's shape and dtype (may alias x elementwise).
void dropout(const Tensor& x, const DropoutMask& m, const Tensor& out) {
  with_buffers(x, out, "dropout", [&]<typename T, typename C>(const T* xp, T* yp, int64_t n) {
    const Consts<T, C> k = consts<T, C>(m);
    for_each_run(n, m, [&](int64_t b, int64_t e, bool keep) {
      const C mul = keep ? k.keep_mul : C(0);
      if (!k.affine) {
        for (int64_t i = b; i < e; ++i) yp[i] = T(C(xp[i]) * mul);
      } else {
        const C add = keep ? k.keep_add : k.drop_add;
        for (int64_t i = b; i < e; ++i) yp[i] = T(round_t<T>(C(xp[i]) * mul) + add);
      }
    });
  });
}

// grad: [*] float; out: grad's shape and dtype.
void dropout_backward(const Tensor& grad, const DropoutMask& m, const Tensor& out) {
  with_buffers(grad, out, "dropout_backward", [&]<typename T, typename C>(const T* gp, T* yp, int64_t n) {
    const Consts<T, C> k = consts<T, C>(m);
    for_each_run(n, m, [&](int64_t b, int64_t e, bool keep) {
      const C mul = keep ? k.keep_mul : C(0);
      for (int64_t i = b; i < e; ++i) yp[i] = T(C(gp[i]) * mul);
    });
  });
}

}  // namespace

void register_dropout_kernels() {
  ops::dropout.set_kernel(DeviceKind::CPU, dropout);
  ops::dropout_backward.set_kernel(DeviceKind::CPU, dropout_backward);
}

}  // namespace kiln::cpu
