// CPU kernel of scaled_dot_product_attention (ops/registry/nn.h): the mask as
// float32 additive rows, the split of the work into (batch, KV head, query
// block, KV range) items for cpu::attend_block, and the combination of the
// partial (max, sum, acc) states of a row split over KV ranges.
#include "cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/ops/nn.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

KVType kv_type(DType d) {
  switch (d) {
    case DType::BFloat16:
      return KVType::BF16;
    case DType::Float16:
      return KVType::F16;
    default:
      return KVType::F32;
  }
}

Tensor pad_dims(Tensor t, int nd) {
  while (t.dim() < nd) t = t.unsqueeze(0);
  return t;
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

// The problem as the kernel sees it: every operand a [*batch, heads, rows,
// cols] view (see ops/registry/nn.h).
struct Problem {
  int nd = 0;
  Shape batch;
  int64_t B = 1;                        // batch elements (product of batch)
  int64_t L = 0, S = 0, E = 0, Ev = 0;  // query rows, key rows, q/k width, v width
  int64_t Hq = 0, Hkv = 0, Hout = 0;
  int64_t ngroups = 0, gsize = 0;  // KV head groups; output heads per group
  KVType kvt = KVType::F32;
  Tensor q, k, v;  // [*batch, Hq, L, E], [*batch, Hkv, S, E], [*batch, Hkv, S, Ev]
  Tensor o;        // [*batch, Hout, L, Ev]
  Tensor mask;     // float32 additive [*batch, Hout, L, S] with unit-stride last dim, or undefined
  double scale = 1.0;
  bool causal = false;
  int64_t causal_offset = 0;

  // batch + [h, rows, e]
  Shape full(int64_t h, int64_t rows, int64_t e) const {
    Shape s = batch;
    s.push_back(h);
    s.push_back(rows);
    s.push_back(e);
    return s;
  }
};

// attn_mask as float32 additive (bool: 0 / -inf), expanded to
// [*batch, Hout, L, S] with a unit-stride last dim (the front-end checked
// that it broadcasts).
Tensor additive_mask(const Tensor& attn_mask, const Problem& p) {
  Tensor mk = attn_mask;
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
  mk = pad_dims(mk, p.nd);
  if (mk.size(-1) == 1 && p.S > 1) {
    Shape s = mk.sizes();
    s.back() = p.S;
    mk = mk.expand(s).contiguous();
  }
  return mk.expand(p.full(p.Hout, p.L, p.S));
}

// The work split: items of (batch, KV head group, block of R query rows, KV
// range); a row's KV range is split in nsplit parts only when there are too
// few blocks to keep every thread busy on a long sequence.
struct Split {
  static constexpr int64_t R = kAttnMaxRows;
  int64_t ldq = 0, lda = 0;    // padded q / acc row lengths
  int64_t rows_per_group = 0;  // gsize * L query rows share one KV head
  int64_t nqb = 0;             // blocks of R rows per group
  int64_t base_items = 0, nsplit = 1, items = 0;

  explicit Split(const Problem& p) {
    ldq = attn_padded(p.E);
    lda = attn_padded(p.Ev);
    rows_per_group = p.gsize * p.L;
    nqb = (rows_per_group + R - 1) / R;
    base_items = p.B * p.ngroups * nqb;
    const int nt = num_threads();
    if (base_items < 2 * nt && p.S >= 1024)
      nsplit = std::min<int64_t>((2 * nt + base_items - 1) / base_items, p.S / 512);
    items = base_items * nsplit;
  }
};

// Where each batch element, head and row lives. Strides are read once:
// Tensor::stride wraps its dim on every call, and the per-element loops
// called it ~2 * Hout * E times per decode step (~25 us of a 32-head call).
struct Layout {
  std::vector<int64_t> qoff, koff, voff, ooff, moff;  // [B] element offsets of each batch element
  int64_t qs_h, qs_i, qs_e;                           // q: head, row, column
  int64_t os_h, os_i, os_c;                           // o: head, row, column
  int64_t ks_h, vs_h, ks_j, vs_j;                     // k/v: head, key position
  int64_t ms_h, ms_i;                                 // mask: head, row (0 without a mask)

  explicit Layout(const Problem& p)
      : qoff(batch_offsets(p.q, p.batch)),
        koff(batch_offsets(p.k, p.batch)),
        voff(batch_offsets(p.v, p.batch)),
        ooff(batch_offsets(p.o, p.batch)),
        moff(p.mask.defined() ? batch_offsets(p.mask, p.batch) : std::vector<int64_t>()),
        qs_h(p.q.stride(-3)),
        qs_i(p.q.stride(-2)),
        qs_e(p.q.stride(-1)),
        os_h(p.o.stride(-3)),
        os_i(p.o.stride(-2)),
        os_c(p.o.stride(-1)),
        ks_h(p.k.stride(-3)),
        vs_h(p.v.stride(-3)),
        ks_j(p.k.stride(-2)),
        vs_j(p.v.stride(-2)),
        ms_h(p.mask.defined() ? p.mask.stride(-3) : 0),
        ms_i(p.mask.defined() ? p.mask.stride(-2) : 0) {}
};

// Every item: its query rows scaled into float32, then attend_block over
// its KV range into the item's (m, l, acc) state in scr.
void attend_items(const Problem& p, const Split& split, const Layout& lay, const AttnDropout& drop,
                  Scratch& scr) {
  constexpr int64_t R = Split::R;
  const int64_t L = p.L, S = p.S, E = p.E, Ev = p.Ev, gsize = p.gsize, Hout = p.Hout;
  const int64_t nsplit = split.nsplit, nqb = split.nqb, ngroups = p.ngroups;
  const int64_t ldq = split.ldq, lda = split.lda, rows_per_group = split.rows_per_group;
  const double sc = p.scale;
  const size_t qsz = itemsize(p.q.dtype()), kvsz = itemsize(p.k.dtype());
  const char* qbase = static_cast<const char*>(p.q.data_ptr());
  const char* kbase = static_cast<const char*>(p.k.data_ptr());
  const char* vbase = static_cast<const char*>(p.v.data_ptr());
  const DType qdt = p.q.dtype();
  const int64_t qs_e = lay.qs_e;
  const Tensor& mask = p.mask;
  auto kv_head_of = [&](int64_t g) { return p.Hkv == 1 ? int64_t(0) : g; };
  auto q_head_of = [&](int64_t h) { return p.Hq == 1 ? int64_t(0) : h; };
  parallel_for(0, split.items, 1, [&](int64_t i0, int64_t i1) {
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
        const char* qp = qbase + size_t(lay.qoff[size_t(b)] + q_head_of(h) * lay.qs_h + i * lay.qs_i) * qsz;
        float* dst = qb.data() + r * ldq;
        dispatch<bit(DType::Float32) | bit(DType::BFloat16) | bit(DType::Float16)>(
            qdt, kOp, [&]<typename T>() {
              const T* src = reinterpret_cast<const T*>(qp);
              for (int64_t e = 0; e < E; ++e) dst[e] = float(double(float(src[e * qs_e])) * sc);
            });
        for (int64_t e = E; e < ldq; ++e) dst[e] = 0.0f;
        limit[r] = i + p.causal_offset;
        row_id[r] = (b * Hout + h) * L + i;
        if (mask.defined()) mrows[r] = mask.data<float>() + lay.moff[size_t(b)] + h * lay.ms_h + i * lay.ms_i;
      }
      AttnBlock blk;
      blk.q = qb.data();
      blk.rows = rows;
      blk.ldq = ldq;
      blk.E = E;
      blk.Ev = Ev;
      blk.limit = p.causal ? limit : nullptr;
      blk.mask = mask.defined() ? mrows : nullptr;
      const int64_t kvh = kv_head_of(g);
      blk.k = kbase + size_t(lay.koff[size_t(b)] + kvh * lay.ks_h) * kvsz;
      blk.v = vbase + size_t(lay.voff[size_t(b)] + kvh * lay.vs_h) * kvsz;
      blk.ks = lay.ks_j;
      blk.vs = lay.vs_j;
      blk.kv = p.kvt;
      blk.dropout = drop;
      blk.dropout.row_id = row_id;
      float* m = scr.m.data() + it * R;
      float* l = scr.l.data() + it * R;
      float* acc = scr.acc.data() + it * R * lda;
      std::fill(m, m + R, -std::numeric_limits<float>::infinity());
      std::fill(l, l + R, 0.0f);
      std::fill(acc, acc + R * lda, 0.0f);
      const int64_t s0 = S * sp / nsplit, s1 = S * (sp + 1) / nsplit;
      attend_block(blk, s0, s1, m, l, acc, lda);
    }
  });
}

// Combines the nsplit partial states of every row (rescaled to their common
// max) and writes the normalized row to the output in its dtype.
void combine_splits(const Problem& p, const Split& split, const Layout& lay, const Scratch& scr) {
  constexpr int64_t R = Split::R;
  const int64_t L = p.L, Ev = p.Ev, gsize = p.gsize;
  const int64_t nsplit = split.nsplit, nqb = split.nqb, ngroups = p.ngroups;
  const int64_t lda = split.lda, rows_per_group = split.rows_per_group;
  const size_t osz = itemsize(p.o.dtype());
  char* obase = static_cast<char*>(p.o.data_ptr());
  const DType odt = p.o.dtype();
  const int64_t os_c = lay.os_c;
  parallel_for(0, split.base_items, 1, [&](int64_t i0, int64_t i1) {
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
        char* op = obase + size_t(lay.ooff[size_t(b)] + h * lay.os_h + i * lay.os_i) * osz;
        dispatch<bit(DType::Float32) | bit(DType::BFloat16) | bit(DType::Float16)>(
            odt, kOp, [&]<typename T>() {
              T* dst = reinterpret_cast<T*>(op);
              for (int64_t c = 0; c < Ev; ++c) dst[c * os_c] = T(row[size_t(c)]);
            });
      }
    }
  });
}

// Binds the problem, converts the mask, splits the work, attends, combines.
void attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask, double scale,
               bool causal, int64_t causal_offset, const ops::AttentionDropout& dropout, const Tensor& out) {
  Problem p;
  p.nd = out.dim();
  p.q = q;
  p.k = k;
  p.v = v;
  p.o = out;
  for (int d = 0; d < p.nd - 3; ++d) p.batch.push_back(out.size(d));
  for (int64_t s : p.batch) p.B *= s;
  p.E = q.size(-1);
  p.L = q.size(-2);
  p.S = k.size(-2);
  p.Ev = v.size(-1);
  p.Hq = q.size(-3);
  p.Hkv = k.size(-3);
  p.Hout = out.size(-3);
  // Output head h reads KV head h / gsize; with one KV head, all read head 0.
  p.ngroups = p.Hkv;
  p.gsize = p.ngroups == 0 ? 0 : p.Hout / p.ngroups;
  p.kvt = kv_type(k.dtype());
  p.scale = scale;
  p.causal = causal;
  p.causal_offset = causal_offset;
  if (out.numel() == 0) return;
  if (attn_mask.defined()) p.mask = additive_mask(attn_mask, p);
  const Layout lay(p);
  const Split split(p);
  thread_local Scratch tl_scratch;
  Scratch& scr = tl_scratch;  // the caller's; workers reach it through this reference
  scr.m.resize(size_t(split.items * Split::R));
  scr.l.resize(size_t(split.items * Split::R));
  scr.acc.resize(size_t(split.items * Split::R * split.lda));
  AttnDropout drop;
  if (dropout.p > 0.0f) {
    drop.p = dropout.p;
    drop.seed = dropout.seed;
    drop.offset = dropout.offset;
    drop.S = p.S;
  }
  attend_items(p, split, lay, drop, scr);
  combine_splits(p, split, lay, scr);
}

}  // namespace

void register_attention_kernels() {
  ops::scaled_dot_product_attention.set_kernel(DeviceKind::CPU, attention);
}

}  // namespace kiln::cpu
