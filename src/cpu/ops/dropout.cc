// CPU kernels of dropout and dropout_backward (ops/registry/dropout.h): one
// pass that draws the mask words from Philox a block at a time into a stack
// buffer and then selects and scales the block branch-free. Element i
// depends on (seed, offset, i) alone, so any split across threads gives the
// same bits. Constants and roundings follow torch's composite (noise tensor in
// x's dtype, then x * noise [+ b]), so float32/float64 results match torch's
// for the same mask; bfloat16/float16 compute in float32.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "cpu/ops/register.h"
#include "cpu/philox_block.h"
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

// The keep test on a draw's word: kept when word >= thr (thr > 2^32 - 1
// keeps nothing, as does p >= 1).
struct Threshold {
  uint32_t t = 0;
  bool none = false;
  explicit Threshold(double p) {
    const uint64_t thr = keep_threshold(p);
    none = p >= 1.0 || thr > 0xFFFFFFFFull;
    t = none ? 0 : uint32_t(thr);
  }
};

// Elements per block of the one-element-per-draw path: four per counter.
constexpr int64_t kBlock = 4 * kPhiloxBlock;

// One draw per element: block(b, len, keep) over blocks of kBlock elements
// starting at b (keep[k]: 1 keeps element b + k, else 0), split across
// threads by block.
template <typename Body>
void for_each_block(int64_t n, const DropoutMask& m, Body body) {
  const Threshold thr(m.p);
  parallel_for(0, (n + kBlock - 1) / kBlock, 64, [&](int64_t b0, int64_t b1) {
    alignas(64) uint32_t words[kBlock];
    alignas(64) uint8_t keep[kBlock];
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t b = blk * kBlock, len = std::min(kBlock, n - b);
      if (thr.none) {
        std::fill(keep, keep + len, uint8_t(0));
      } else {
        philox_block(m.offset + uint64_t(b) / 4, m.seed, words);
        for (int64_t k = 0; k < len; ++k) keep[k] = uint8_t(words[k] >= thr.t);
      }
      body(b, len, keep);
    }
  });
}

// body(begin, end, keep) over runs of elements [begin, end) that share a draw
// (group > 1), split across threads by element.
template <typename Body>
void for_each_run(int64_t n, const DropoutMask& m, Body body) {
  const Threshold thr(m.p);
  const int64_t group = m.group;
  parallel_for(0, n, 1 << 14, [&](int64_t b, int64_t e) {
    uint64_t have = 0;
    bool valid = false;
    uint32_t w[4];
    for (int64_t i = b; i < e;) {
      const int64_t j = i / group;
      const int64_t end = std::min(e, (j + 1) * group);
      bool keep = false;
      if (!thr.none) {
        const uint64_t c = m.offset + uint64_t(j) / 4;
        if (!valid || c != have) {
          philox(c, m.seed, w);
          have = c;
          valid = true;
        }
        keep = w[j % 4] >= thr.t;
      }
      body(i, end, keep);
      i = end;
    }
  });
}

// y = x * (kept ? mul : 0) with one draw per element in float32/float64
// (some element kept possible): Philox blocks, then the per-target select.
template <typename T>
void scale_blocks(const T* xp, T* yp, int64_t n, const DropoutMask& m, T mul) {
  const Threshold thr(m.p);
  parallel_for(0, (n + kBlock - 1) / kBlock, 64, [&](int64_t b0, int64_t b1) {
    alignas(64) uint32_t words[kBlock];
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t b = blk * kBlock;
      philox_block(m.offset + uint64_t(b) / 4, m.seed, words);
      keep_scale(xp + b, yp + b, words, thr.t, mul, std::min(kBlock, n - b));
    }
  });
}

// Whether scale_blocks applies to T and m.
template <typename T, typename C>
bool scale_blocks_apply(const DropoutMask& m) {
  return std::is_same_v<T, C> && m.group == 1 && !Threshold(m.p).none;
}

// y[i] = f(x[i], keep of i) over all n elements, by block or by run.
template <typename T, typename C, typename F>
void apply(const T* xp, T* yp, int64_t n, const DropoutMask& m, F f) {
  if (m.group == 1) {
    for_each_block(n, m, [&](int64_t b, int64_t len, const uint8_t* keep) {
      T* y = yp + b;
      if (xp == yp) {  // in place: one pointer, so the loop needs no overlap check
        for (int64_t k = 0; k < len; ++k) y[k] = f(y[k], keep[k]);
      } else {
        const T* __restrict x = xp + b;
        T* __restrict yr = y;
        for (int64_t k = 0; k < len; ++k) yr[k] = f(x[k], keep[k]);
      }
    });
  } else {
    for_each_run(n, m, [&](int64_t b, int64_t e, bool keep) {
      for (int64_t i = b; i < e; ++i) yp[i] = f(xp[i], uint8_t(keep));
    });
  }
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
    if (!k.affine) {
      if constexpr (std::is_same_v<T, C>)
        if (scale_blocks_apply<T, C>(m)) return scale_blocks<T>(xp, yp, n, m, k.keep_mul);
      apply<T, C>(xp, yp, n, m, [mul = k.keep_mul](T x, uint8_t keep) { return T(C(x) * (C(keep) * mul)); });
    } else {
      apply<T, C>(xp, yp, n, m, [k](T x, uint8_t keep) {
        return T(round_t<T>(C(x) * (keep ? k.keep_mul : C(0))) + (keep ? k.keep_add : k.drop_add));
      });
    }
  });
}

// grad: [*] float; out: grad's shape and dtype.
void dropout_backward(const Tensor& grad, const DropoutMask& m, const Tensor& out) {
  with_buffers(grad, out, "dropout_backward", [&]<typename T, typename C>(const T* gp, T* yp, int64_t n) {
    const Consts<T, C> k = consts<T, C>(m);
    if constexpr (std::is_same_v<T, C>)
      if (scale_blocks_apply<T, C>(m)) return scale_blocks<T>(gp, yp, n, m, k.keep_mul);
    apply<T, C>(gp, yp, n, m, [mul = k.keep_mul](T g, uint8_t keep) { return T(C(g) * (C(keep) * mul)); });
  });
}

}  // namespace

void register_dropout_kernels() {
  ops::dropout.set_kernel(DeviceKind::CPU, dropout);
  ops::dropout_backward.set_kernel(DeviceKind::CPU, dropout_backward);
}

}  // namespace kiln::cpu
