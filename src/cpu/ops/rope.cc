// CPU kernels of the rotary-embedding ops (ops/registry/nn.h): inv_freq with
// Hugging Face's scaling rules, the cos/sin tables, and the rotation itself
// (half-split or interleaved pairs, partial rotary dims) in place on
// [..., T, H, D] activations of any float dtype.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "cpu/ops/nn.h"
#include "kiln/dtype.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

void rope_inv_freq(int64_t rotary_dim, double theta, const RopeScaling& sc, const Tensor& out) {
  const int64_t half = rotary_dim / 2;
  float* p = out.data<float>();
  for (int64_t i = 0; i < half; ++i) {
    // As HF, in float32: 1 / theta^(arange(0, dim, 2) / dim), so tables match
    // the checkpoints' reference implementation bit for bit.
    const float e = float(2 * i) / float(rotary_dim);
    const float f = 1.0f / std::pow(float(theta), e);
    double v = f;
    if (sc.kind == RopeScaling::Kind::Linear) {
      v = f / sc.factor;
    } else if (sc.kind == RopeScaling::Kind::Llama3) {
      const double old_len = double(sc.original_max_position_embeddings);
      const double low_wl = old_len / sc.low_freq_factor, high_wl = old_len / sc.high_freq_factor;
      const double wl = 2 * std::numbers::pi / f;
      if (wl > low_wl) {
        v = f / sc.factor;         // low frequency: scaled
      } else if (wl >= high_wl) {  // medium: blend
        const double smooth =
            (old_len / wl - sc.low_freq_factor) / (sc.high_freq_factor - sc.low_freq_factor);
        v = (1 - smooth) * f / sc.factor + smooth * f;
      }
    }
    p[i] = float(v);
  }
}

// cos/sin [T, h] of pos(t) * inv_freq[i], in float64 stored as float32: one
// body for the tables and the runtime's per-chunk rows, so they agree bit for bit.
template <typename Pos>
void fill_cos_sin(Pos pos, int64_t T, const float* fp, int64_t h, float* c, float* s) {
  parallel_for(0, T, std::max<int64_t>(1, 4096 / std::max<int64_t>(h, 1)), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t)
      for (int64_t i = 0; i < h; ++i) {
        const double a = double(pos(t)) * double(fp[i]);
        c[t * h + i] = float(std::cos(a));
        s[t * h + i] = float(std::sin(a));
      }
  });
}

void rope_cos_sin(const Tensor& positions, int64_t start, const Tensor& inv_freq, const Tensor& cos,
                  const Tensor& sin) {
  const int64_t T = cos.size(0), h = inv_freq.numel();
  const float* fp = inv_freq.data<float>();
  if (positions.defined()) {
    const int64_t* pp = positions.data<int64_t>();
    fill_cos_sin([pp](int64_t t) { return pp[t]; }, T, fp, h, cos.data<float>(), sin.data<float>());
  } else {
    fill_cos_sin([start](int64_t t) { return start + t; }, T, fp, h, cos.data<float>(), sin.data<float>());
  }
}

// Rotates one head vector x[0..D) (unit stride) with c/s [half].
template <typename T>
void rotate(T* x, const float* c, const float* s, int64_t half, bool interleaved) {
  using C = compute_t<T>;
  if (interleaved) {
    for (int64_t i = 0; i < half; ++i) {
      const C a = C(x[2 * i]), b = C(x[2 * i + 1]);
      x[2 * i] = T(a * C(c[i]) - b * C(s[i]));
      x[2 * i + 1] = T(b * C(c[i]) + a * C(s[i]));
    }
  } else {
    for (int64_t i = 0; i < half; ++i) {
      const C a = C(x[i]), b = C(x[i + half]);
      x[i] = T(a * C(c[i]) - b * C(s[i]));
      x[i + half] = T(b * C(c[i]) + a * C(s[i]));
    }
  }
}

void apply_rotary_emb(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved) {
  const char* op = "apply_rotary_emb";
  const int nd = x.dim();
  const int tdim = nd >= 3 ? nd - 3 : nd - 2;
  const int64_t D = x.size(-1), half = cos.size(1);
  const float* cp = cos.data<float>();
  const float* sp = sin.data<float>();
  // Every head vector: the multi-index over dims [0, nd - 1), its t at tdim.
  const int64_t nvec = x.numel() / D;
  dispatch<kFloatSet>(x.dtype(), op, [&]<typename T_>() {
    T_* base = static_cast<T_*>(x.data_ptr());
    parallel_for(0, nvec, std::max<int64_t>(1, 2048 / D), [&](int64_t b, int64_t e) {
      for (int64_t v = b; v < e; ++v) {
        int64_t rem = v, off = 0, t = 0;
        for (int k = nd - 2; k >= 0; --k) {
          const int64_t i = rem % x.size(k);
          rem /= x.size(k);
          off += i * x.stride(k);
          if (k == tdim) t = i;
        }
        rotate(base + off, cp + t * half, sp + t * half, half, interleaved);
      }
    });
  });
}

}  // namespace

void register_rope_kernels() {
  ops::rope_inv_freq.set_kernel(DeviceKind::CPU, rope_inv_freq);
  ops::rope_cos_sin.set_kernel(DeviceKind::CPU, rope_cos_sin);
  ops::apply_rotary_emb.set_kernel(DeviceKind::CPU, apply_rotary_emb);
}

}  // namespace kiln::cpu
