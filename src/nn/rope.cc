// Rotary position embeddings: inv_freq with Hugging Face's scaling rules, the
// cos/sin tables, and the rotation itself (half-split or interleaved pairs,
// partial rotary dims) on [..., T, H, D] activations of any float dtype.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "kiln/nn.h"
#include "kiln/thread_pool.h"
#include "nn/nn_util.h"

namespace kiln {

Tensor rope_inv_freq(int64_t rotary_dim, double theta, const RopeScaling& sc) {
  KILN_CHECK(rotary_dim > 0 && rotary_dim % 2 == 0, ValueError,
             "[rope_inv_freq] rotary_dim must be even and positive, got " << rotary_dim);
  KILN_CHECK(theta > 0, ValueError, "[rope_inv_freq] theta must be positive, got " << theta);
  const int64_t half = rotary_dim / 2;
  Tensor out = empty({half}, DType::Float32);
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
  return out;
}

namespace {
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

template <typename Pos>
RopeTables tables(Pos pos, int64_t T, const Tensor& inv_freq) {
  KILN_CHECK(inv_freq.dim() == 1, ValueError,
             "[rope_cos_sin] inv_freq must be 1-D, got " << inv_freq.shape_str());
  const Tensor f = inv_freq.to(DType::Float32).contiguous();
  const int64_t h = f.numel();
  RopeTables r{empty({T, h}), empty({T, h})};
  fill_cos_sin(pos, T, f.data<float>(), h, r.cos.data<float>(), r.sin.data<float>());
  return r;
}
}  // namespace

RopeTables rope_cos_sin(const Tensor& positions, const Tensor& inv_freq) {
  KILN_CHECK(positions.dim() == 1 && is_integral(positions.dtype(), false), ValueError,
             "[rope_cos_sin] positions must be a 1-D integer tensor, got " << positions.shape_str() << " "
                                                                           << name(positions.dtype()));
  const Tensor p = positions.to(DType::Int64).contiguous();
  const int64_t* pp = p.data<int64_t>();
  return tables([pp](int64_t t) { return pp[t]; }, p.numel(), inv_freq);
}

RopeTables rope_cos_sin(int64_t start, int64_t count, const Tensor& inv_freq) {
  KILN_CHECK(count >= 0, ValueError, "[rope_cos_sin] count must be >= 0, got " << count);
  return tables([start](int64_t t) { return start + t; }, count, inv_freq);
}

void rope_cos_sin_out(int64_t start, const Tensor& inv_freq, const Tensor& cos, const Tensor& sin) {
  const char* op = "rope_cos_sin_out";
  KILN_CHECK(inv_freq.dim() == 1 && inv_freq.dtype() == DType::Float32 && inv_freq.is_contiguous(),
             ValueError,
             "[" << op << "] inv_freq must be a contiguous 1-D float32 tensor, got " << inv_freq.shape_str()
                 << " " << name(inv_freq.dtype()));
  const int64_t h = inv_freq.numel();
  for (const Tensor* t : {&cos, &sin})
    KILN_CHECK(t->dim() == 2 && t->size(1) == h && t->dtype() == DType::Float32 && t->is_contiguous(),
               ValueError,
               "[" << op << "] cos and sin must be contiguous float32 [T, " << h << "], got "
                   << t->shape_str() << " " << name(t->dtype()));
  KILN_CHECK(sin.size(0) == cos.size(0), ValueError,
             "[" << op << "] cos " << cos.shape_str() << " and sin " << sin.shape_str() << " differ");
  fill_cos_sin([start](int64_t t) { return start + t; }, cos.size(0), inv_freq.data<float>(), h,
               cos.data<float>(), sin.data<float>());
}

namespace {

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

}  // namespace

void apply_rotary_emb_(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved) {
  const char* op = "apply_rotary_emb";
  nn_detail::check_float(x, op, "x");
  KILN_CHECK(x.dim() >= 2, ValueError,
             "[" << op << "] x must be [..., T, H, D] or [T, D], got " << x.shape_str());
  KILN_CHECK(cos.dim() == 2 && sin.sizes() == cos.sizes(), ValueError,
             "[" << op << "] cos " << cos.shape_str() << " and sin " << sin.shape_str()
                 << " must both be [T, rotary_dim / 2]");
  const int nd = x.dim();
  const int tdim = nd >= 3 ? nd - 3 : nd - 2;
  const int64_t T = x.size(tdim), D = x.size(-1), half = cos.size(1);
  KILN_CHECK(cos.size(0) == T && 2 * half <= D, ValueError,
             "[" << op << "] cos/sin " << cos.shape_str() << " do not fit x " << x.shape_str()
                 << " (need [T=" << T << ", <= D/2=" << D / 2 << "])");
  KILN_CHECK(x.stride(-1) == 1 || D == 1, ValueError, "[" << op << "] x needs a unit-stride last dim");
  assert_no_internal_overlap(x, op);
  if (x.numel() == 0 || half == 0) return;
  const Tensor c = cos.to(DType::Float32).contiguous(), s = sin.to(DType::Float32).contiguous();
  const float* cp = c.data<float>();
  const float* sp = s.data<float>();
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

Tensor apply_rotary_emb(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved) {
  nn_detail::check_float(x, "apply_rotary_emb", "x");
  Tensor y = x.clone();
  apply_rotary_emb_(y, cos, sin, interleaved);
  return y;
}

}  // namespace kiln
