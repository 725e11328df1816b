// scaled_dot_product_attention front-end: broadcasting and GQA head mapping,
// mask conversion, the split of the work into (batch, KV head, query block,
// KV range) items for cpu::attend_block, and the combination of the partial
// (max, sum, acc) states of a row split over KV ranges.
#include "kiln/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu/attention.h"
#include "kiln/error.h"
#include "kiln/thread_pool.h"

namespace kiln {
namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

cpu::KVType kv_type(DType d) {
  switch (d) {
    case DType::Float32:
      return cpu::KVType::F32;
    case DType::BFloat16:
      return cpu::KVType::BF16;
    case DType::Float16:
      return cpu::KVType::F16;
    default:
      throw TypeError(std::string("[") + kOp + "] unsupported dtype " + name(d) +
                      " (float16, bfloat16, float32)");
  }
}

Tensor pad_dims(Tensor t, int nd) {
  while (t.dim() < nd) t = t.unsqueeze(0);
  return t;
}

int64_t bcast(int64_t a, int64_t b, const char* what, const Tensor& q, const Tensor& k, const Tensor& v) {
  if (a == b || b == 1) return a;
  if (a == 1) return b;
  throw ValueError(std::string("[") + kOp + "] " + what + " do not broadcast: query " + q.shape_str() +
                   ", key " + k.shape_str() + ", value " + v.shape_str());
}

// Element offsets of each flat batch index into t (its first nb dims, which
// may have stride 0).
std::vector<int64_t> batch_offsets(const Tensor& t, const Shape& batch) {
  int64_t B = 1;
  for (int64_t s : batch) B *= s;
  std::vector<int64_t> off(static_cast<size_t>(B));
  for (int64_t f = 0; f < B; ++f) {
    int64_t rem = f, o = 0;
    for (int d = int(batch.size()) - 1; d >= 0; --d) {
      const int64_t i = rem % batch[size_t(d)];
      rem /= batch[size_t(d)];
      o += i * t.stride(d);
    }
    off[size_t(f)] = o;
  }
  return off;
}

// Partial (max, sum, acc) states of every work item, reused across calls.
struct Scratch {
  std::vector<float> m, l, acc;
};

void run(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, const Tensor* attn_mask, bool is_causal,
         int64_t causal_offset, std::optional<double> scale, bool enable_gqa, float dropout_p, Generator* gen,
         const Tensor* out_given, Tensor* out_made, DType out_dtype) {
  KILN_CHECK(q_in.dim() >= 2 && k_in.dim() >= 2 && v_in.dim() >= 2, ValueError,
             "[" << kOp << "] query, key and value need at least 2 dims, got " << q_in.shape_str() << ", "
                 << k_in.shape_str() << ", " << v_in.shape_str());
  KILN_CHECK(k_in.dtype() == v_in.dtype(), TypeError,
             "[" << kOp << "] key and value must have one dtype, got " << name(k_in.dtype()) << " and "
                 << name(v_in.dtype()));
  kv_type(q_in.dtype());
  const cpu::KVType kvt = kv_type(k_in.dtype());
  KILN_CHECK(!(is_causal && attn_mask != nullptr), ValueError,
             "[" << kOp << "] attn_mask and is_causal cannot both be set");
  KILN_CHECK(dropout_p >= 0.0f && dropout_p <= 1.0f, ValueError,
             "[" << kOp << "] dropout_p must be in [0, 1], got " << dropout_p);
  const int nd = std::max({q_in.dim(), k_in.dim(), v_in.dim(), 3});
  Tensor q = pad_dims(q_in, nd), k = pad_dims(k_in, nd), v = pad_dims(v_in, nd);
  const int64_t E = q.size(-1), L = q.size(-2), S = k.size(-2), Ev = v.size(-1);
  KILN_CHECK(k.size(-1) == E && v.size(-2) == S, ValueError,
             "[" << kOp << "] shapes do not match: query " << q_in.shape_str() << ", key " << k_in.shape_str()
                 << ", value " << v_in.shape_str()
                 << " (need query/key last dims equal and key/value lengths equal)");
  Shape batch;
  for (int d = 0; d < nd - 3; ++d)
    batch.push_back(bcast(bcast(q.size(d), k.size(d), "batch dims", q_in, k_in, v_in), v.size(d),
                          "batch dims", q_in, k_in, v_in));
  const int64_t Hq = q.size(-3);
  const int64_t Hkv = bcast(k.size(-3), v.size(-3), "key/value heads", q_in, k_in, v_in);
  int64_t Hout, ngroups;
  const bool gqa = enable_gqa && Hq != Hkv;
  if (gqa) {
    KILN_CHECK(Hkv > 0 && Hq % Hkv == 0, ValueError,
               "[" << kOp << "] enable_gqa needs query heads (" << Hq
                   << ") to be a multiple of key/value heads (" << Hkv << ")");
    Hout = Hq;
    ngroups = Hkv;
  } else {
    Hout = bcast(Hq, Hkv, "heads", q_in, k_in, v_in);
    ngroups = Hkv == 1 ? 1 : Hout;
  }
  const int64_t gsize = ngroups == 0 ? 0 : Hout / ngroups;
  // Full shapes: batch + [H, rows, E].
  auto full = [&](int64_t h, int64_t rows, int64_t e) {
    Shape s = batch;
    s.push_back(h);
    s.push_back(rows);
    s.push_back(e);
    return s;
  };
  if (q.stride(-1) != 1 && E > 1) q = q.contiguous();
  if (k.stride(-1) != 1 && E > 1) k = k.contiguous();
  if (v.stride(-1) != 1 && Ev > 1) v = v.contiguous();
  q = q.expand(full(Hq, L, E));
  k = k.expand(full(Hkv, S, E));
  v = v.expand(full(Hkv, S, Ev));
  const Shape out_shape = [&] {
    Shape s = full(Hout, L, Ev);
    // The result keeps the rank of the highest-rank input (2-D inputs: 2-D out).
    const int od = std::max({q_in.dim(), k_in.dim(), v_in.dim()});
    return Shape(s.end() - od, s.end());
  }();
  Tensor out;
  if (out_given) {
    KILN_CHECK(out_given->sizes() == out_shape, ValueError,
               "[" << kOp << "] out has shape " << out_given->shape_str() << ", expected "
                   << shape_to_string(out_shape));
    KILN_CHECK(out_given->stride(-1) == 1 || Ev <= 1, ValueError,
               "[" << kOp << "] out needs a unit-stride last dim");
    kv_type(out_given->dtype());
    out = *out_given;
  } else {
    out = empty(out_shape, out_dtype);
    *out_made = out;
  }
  if (out.numel() == 0) return;
  Tensor o = pad_dims(out, nd);  // [*batch, Hout, L, Ev]
  // Mask: float32 additive, expanded to [*batch, Hout, L, S] with a unit-stride last dim.
  Tensor mask;
  if (attn_mask != nullptr) {
    Tensor mk = *attn_mask;
    KILN_CHECK(mk.dtype() == DType::Bool || (is_floating(mk.dtype()) && !is_fp8(mk.dtype())), TypeError,
               "[" << kOp << "] attn_mask must be bool or floating, got " << name(mk.dtype()));
    KILN_CHECK(mk.dim() <= nd, ValueError,
               "[" << kOp << "] attn_mask " << mk.shape_str() << " does not broadcast to "
                   << shape_to_string(full(Hout, L, S)));
    if (mk.dtype() == DType::Bool) {
      const Tensor b = mk.contiguous();
      Tensor f = empty(b.sizes(), DType::Float32);
      const bool* bp = b.data<bool>();
      float* fp = f.data<float>();
      for (int64_t i = 0; i < b.numel(); ++i) fp[i] = bp[i] ? 0.0f : -std::numeric_limits<float>::infinity();
      mk = f;
    } else {
      mk = mk.to(DType::Float32).contiguous();
    }
    mk = pad_dims(mk, nd);
    if (mk.size(-1) == 1 && S > 1) {
      Shape s = mk.sizes();
      s.back() = S;
      mk = mk.expand(s).contiguous();
    }
    const Shape want = full(Hout, L, S);
    for (int d = 0; d < nd; ++d)
      KILN_CHECK(mk.size(d) == want[size_t(d)] || mk.size(d) == 1, ValueError,
                 "[" << kOp << "] attn_mask " << attn_mask->shape_str() << " does not broadcast to "
                     << shape_to_string(want));
    mask = mk.expand(want);
  }
  int64_t B = 1;
  for (int64_t s : batch) B *= s;
  const std::vector<int64_t> qoff = batch_offsets(q, batch), koff = batch_offsets(k, batch),
                             voff = batch_offsets(v, batch), ooff = batch_offsets(o, batch);
  const std::vector<int64_t> moff = mask.defined() ? batch_offsets(mask, batch) : std::vector<int64_t>();
  const double sc = scale.value_or(1.0 / std::sqrt(double(E)));
  const int64_t ldq = cpu::attn_padded(E), lda = cpu::attn_padded(Ev);
  const int64_t rows_per_group = gsize * L;
  const int64_t nqb = (rows_per_group + cpu::kAttnMaxRows - 1) / cpu::kAttnMaxRows;
  const int64_t base_items = B * ngroups * nqb;
  const int nt = num_threads();
  int64_t nsplit = 1;
  if (base_items < 2 * nt && S >= 1024)
    nsplit = std::min<int64_t>((2 * nt + base_items - 1) / base_items, S / 512);
  const int64_t items = base_items * nsplit;
  constexpr int64_t R = cpu::kAttnMaxRows;
  thread_local Scratch tl_scratch;
  Scratch& scr = tl_scratch;  // the caller's; workers reach it through this reference
  scr.m.resize(size_t(items * R));
  scr.l.resize(size_t(items * R));
  scr.acc.resize(size_t(items * R * lda));
  cpu::AttnDropout drop;
  if (dropout_p > 0.0f) {
    Generator& g = gen ? *gen : default_generator();
    drop.p = dropout_p;
    drop.seed = g.initial_seed();
    drop.S = S;
    drop.offset = g.advance((uint64_t(B * Hout * L) * uint64_t(S) + 3) / 4);
  }
  const size_t qsz = itemsize(q.dtype()), kvsz = itemsize(k.dtype());
  const char* qbase = static_cast<const char*>(q.data_ptr());
  const char* kbase = static_cast<const char*>(k.data_ptr());
  const char* vbase = static_cast<const char*>(v.data_ptr());
  const DType qdt = q.dtype();
  // Strides read once: Tensor::stride wraps its dim on every call, and the
  // per-element loops below called it ~2 * Hout * E times per decode step
  // (~25 us of a 32-head call).
  const int64_t qs_h = q.stride(-3), qs_i = q.stride(-2), qs_e = q.stride(-1);
  const int64_t os_h = o.stride(-3), os_i = o.stride(-2), os_c = o.stride(-1);
  const int64_t ks_h = k.stride(-3), vs_h = v.stride(-3), ks_j = k.stride(-2), vs_j = v.stride(-2);
  const int64_t ms_h = mask.defined() ? mask.stride(-3) : 0, ms_i = mask.defined() ? mask.stride(-2) : 0;
  auto kv_head_of = [&](int64_t g) { return Hkv == 1 ? int64_t(0) : g; };
  auto q_head_of = [&](int64_t h) { return Hq == 1 ? int64_t(0) : h; };
  parallel_for(0, items, 1, [&](int64_t i0, int64_t i1) {
    thread_local std::vector<float> qb;
    qb.resize(size_t(R * ldq));
    int64_t limit[R], row_id[R];
    const float* mrows[R];
    for (int64_t it = i0; it < i1; ++it) {
      const int64_t sp = it % nsplit, qbk = (it / nsplit) % nqb, g = (it / nsplit / nqb) % ngroups;
      const int64_t b = it / nsplit / nqb / ngroups;
      const int64_t r0 = qbk * R, rows = std::min(R, rows_per_group - r0);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = (r0 + r) / L, i = (r0 + r) % L, h = g * gsize + t;
        // q row, scaled, in float32, zero-padded.
        const char* qp =
            qbase + size_t(qoff[size_t(b)] + q_head_of(h) * qs_h + i * qs_i) * qsz;
        float* dst = qb.data() + r * ldq;
        dispatch<bit(DType::Float32) | bit(DType::BFloat16) | bit(DType::Float16)>(
            qdt, kOp, [&]<typename T>() {
              const T* src = reinterpret_cast<const T*>(qp);
              for (int64_t e = 0; e < E; ++e) dst[e] = float(double(float(src[e * qs_e])) * sc);
            });
        for (int64_t e = E; e < ldq; ++e) dst[e] = 0.0f;
        limit[r] = i + causal_offset;
        row_id[r] = (b * Hout + h) * L + i;
        if (mask.defined())
          mrows[r] = mask.data<float>() + moff[size_t(b)] + h * ms_h + i * ms_i;
      }
      cpu::AttnBlock blk;
      blk.q = qb.data();
      blk.rows = rows;
      blk.ldq = ldq;
      blk.E = E;
      blk.Ev = Ev;
      blk.limit = is_causal ? limit : nullptr;
      blk.mask = mask.defined() ? mrows : nullptr;
      const int64_t kvh = kv_head_of(g);
      blk.k = kbase + size_t(koff[size_t(b)] + kvh * ks_h) * kvsz;
      blk.v = vbase + size_t(voff[size_t(b)] + kvh * vs_h) * kvsz;
      blk.ks = ks_j;
      blk.vs = vs_j;
      blk.kv = kvt;
      blk.dropout = drop;
      blk.dropout.row_id = row_id;
      float* m = scr.m.data() + it * R;
      float* l = scr.l.data() + it * R;
      float* acc = scr.acc.data() + it * R * lda;
      std::fill(m, m + R, -std::numeric_limits<float>::infinity());
      std::fill(l, l + R, 0.0f);
      std::fill(acc, acc + R * lda, 0.0f);
      const int64_t s0 = S * sp / nsplit, s1 = S * (sp + 1) / nsplit;
      cpu::attend_block(blk, s0, s1, m, l, acc, lda);
    }
  });
  // Combine the splits of every row and write the output.
  const size_t osz = itemsize(o.dtype());
  char* obase = static_cast<char*>(o.data_ptr());
  const DType odt = o.dtype();
  parallel_for(0, base_items, 1, [&](int64_t i0, int64_t i1) {
    thread_local std::vector<float> row;
    row.resize(size_t(Ev));
    for (int64_t bi = i0; bi < i1; ++bi) {
      const int64_t qbk = bi % nqb, g = (bi / nqb) % ngroups, b = bi / nqb / ngroups;
      const int64_t r0 = qbk * R, rows = std::min(R, rows_per_group - r0);
      for (int64_t r = 0; r < rows; ++r) {
        float M = -std::numeric_limits<float>::infinity();
        bool nan = false;
        for (int64_t sp = 0; sp < nsplit; ++sp) {
          const float mm = scr.m[size_t((bi * nsplit + sp) * R + r)];
          nan |= std::isnan(mm);
          M = std::max(M, mm);
        }
        std::fill(row.begin(), row.end(), 0.0f);
        if (nan) {
          std::fill(row.begin(), row.end(), std::numeric_limits<float>::quiet_NaN());
        } else if (M != -std::numeric_limits<float>::infinity()) {
          double Lsum = 0;
          for (int64_t sp = 0; sp < nsplit; ++sp) {
            const int64_t it = bi * nsplit + sp;
            const float mm = scr.m[size_t(it * R + r)];
            if (mm == -std::numeric_limits<float>::infinity()) continue;
            const float f = std::exp(mm - M);
            Lsum += double(scr.l[size_t(it * R + r)]) * f;
            const float* a = scr.acc.data() + (it * R + r) * lda;
            for (int64_t c = 0; c < Ev; ++c) row[size_t(c)] += a[c] * f;
          }
          const float inv = float(1.0 / Lsum);
          for (auto& x : row) x *= inv;
        }
        const int64_t t = (r0 + r) / L, i = (r0 + r) % L, h = g * gsize + t;
        char* op = obase + size_t(ooff[size_t(b)] + h * os_h + i * os_i) * osz;
        dispatch<bit(DType::Float32) | bit(DType::BFloat16) | bit(DType::Float16)>(
            odt, kOp, [&]<typename T>() {
              T* dst = reinterpret_cast<T*>(op);
              for (int64_t c = 0; c < Ev; ++c) dst[c * os_c] = T(row[size_t(c)]);
            });
      }
    }
  });
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor* attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, bool enable_gqa, Generator* gen) {
  KILN_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), TypeError,
             "[" << kOp << "] query, key and value must have one dtype, got " << name(q.dtype()) << ", "
                 << name(k.dtype()) << ", " << name(v.dtype()));
  Tensor out;
  run(q, k, v, attn_mask, is_causal, 0, scale, enable_gqa, float(dropout_p), gen, nullptr, &out, q.dtype());
  return out;
}

void scaled_dot_product_attention_out(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionOptions& opt, const Tensor& out) {
  run(q, k, v, opt.attn_mask, opt.is_causal, opt.causal_offset, opt.scale, opt.enable_gqa, 0.0f, nullptr,
      &out, nullptr, out.dtype());
}

}  // namespace kiln
