// The fused sampler. Per row: penalties (touching only the seen tokens), the
// max, then by mode
//   plain / min-p:  sum of exp over kept tokens, then a draw scanned up to the
//                   chosen token;
//   top-k:          a k-entry heap over the row, then everything on the k;
//   top-p:          sum of exp, then the candidates with p >= (1 - top_p) / V
//                   (they contain the nucleus: the rest weighs < 1 - top_p),
//                   sorted and cut at top_p.
#include "nn/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include "cpu/softmax.h"
#include "kiln/error.h"
#include "kiln/thread_pool.h"

namespace kiln {
namespace {

struct Cand {
  float logit;
  int64_t id;
};

// The first index of the max (the first NaN if there is one), as torch.argmax:
// the SIMD max, then a scan for its first occurrence.
int64_t argmax_row(const float* x, int64_t V) {
  const float m = cpu::row_max_f32(x, V);
  if (std::isnan(m)) {
    for (int64_t i = 0; i < V; ++i)
      if (std::isnan(x[i])) return i;
  }
  for (int64_t i = 0; i < V; ++i)
    if (x[i] == m) return i;
  return 0;
}

// A uniform double in [0, 1) from one Philox draw.
double uniform(Generator& gen) {
  uint32_t w[4];
  philox(gen.advance(1), gen.initial_seed(), w);
  return double((uint64_t(w[0]) << 21) ^ (uint64_t(w[1]) >> 11)) * 0x1p-53;
}

// Samples among candidates (logits), given the row max m and 1 / temperature:
// top-p cut on their renormalized mass (after sorting), then min-p, then a draw.
int64_t sample_candidates(std::vector<Cand>& c, float m, float inv_t, double top_p, double min_p,
                          Generator& gen) {
  std::sort(c.begin(), c.end(), [](const Cand& a, const Cand& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  });
  std::vector<double> e(c.size());
  double total = 0;
  for (size_t i = 0; i < c.size(); ++i) total += e[i] = std::exp(double((c[i].logit - m) * inv_t));
  size_t keep = c.size();
  if (top_p < 1.0) {
    double cum = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      cum += e[i];
      if (cum >= top_p * total) {
        keep = i + 1;
        break;
      }
    }
  }
  if (min_p > 0.0) {
    const double thr = min_p * e[0];
    size_t k = 1;
    while (k < keep && e[k] >= thr) ++k;
    keep = k;
  }
  double s = 0;
  for (size_t i = 0; i < keep; ++i) s += e[i];
  const double u = uniform(gen) * s;
  double cum = 0;
  for (size_t i = 0; i < keep; ++i) {
    cum += e[i];
    if (u < cum) return c[i].id;
  }
  return c[keep - 1].id;
}

// The nucleus without sorting the candidates: their scaled logits z (>= zthr)
// are compacted with SIMD stores into reused buffers, exponentiated with the SIMD exp,
// their mass binned by z; bins are taken from the top until the one that
// crosses top_p * total, and only that bin is sorted. The draw then scans the
// kept tokens in id order. Allocates nothing once the buffers have grown.
int64_t sample_nucleus(const float* x, int64_t V, float m, float inv_t, float zthr, double top_p,
                       double min_p, Generator& gen) {
  constexpr int kBins = 2048;
  thread_local std::vector<float> cz, ce;
  thread_local std::vector<int32_t> cid;
  thread_local std::vector<int32_t> cb;
  thread_local std::vector<double> mass;
  thread_local std::vector<size_t> in_bin;
  KILN_CHECK(V < (int64_t(1) << 31), ValueError, "[sample] top-p over " << V << " logits: at most 2^31 - 1");
  if (int64_t(cz.size()) < V + cpu::kGatherSlack) {
    const size_t cap = size_t(V + cpu::kGatherSlack);
    cz.resize(cap);
    ce.resize(cap);
    cid.resize(cap);
    cb.resize(cap);
  }
  const int64_t n = cpu::gather_above_f32(x, V, m, inv_t, zthr, cz.data(), cid.data());
  cpu::exp_f32(cz.data(), ce.data(), n);
  mass.assign(kBins, 0.0);
  const float inv_w = zthr < 0 ? float(kBins) / -zthr : 0.0f;
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int b = std::clamp(int((cz[size_t(i)] - zthr) * inv_w), 0, kBins - 1);
    cb[size_t(i)] = b;
    mass[size_t(b)] += ce[size_t(i)];
    total += ce[size_t(i)];
  }
  const double target = top_p * total;
  double above = 0;
  int cross = kBins - 1;
  for (; cross > 0; --cross) {
    if (above + mass[size_t(cross)] >= target) break;
    above += mass[size_t(cross)];
  }
  // Within the crossing bin: largest first (ties: lower id) until the target.
  in_bin.clear();
  for (int64_t i = 0; i < n; ++i)
    if (cb[size_t(i)] == cross) in_bin.push_back(size_t(i));
  std::sort(in_bin.begin(), in_bin.end(),
            [&](size_t a, size_t b) { return cz[a] > cz[b] || (cz[a] == cz[b] && cid[a] < cid[b]); });
  float zcut = 0.0f;
  int64_t idcut = 0;
  for (size_t j : in_bin) {
    zcut = cz[j];
    idcut = cid[j];
    above += ce[j];
    if (above >= target) break;
  }
  auto kept = [&](int64_t i) {
    const int b = cb[size_t(i)];
    const bool in =
        b > cross ||
        (b == cross && (cz[size_t(i)] > zcut || (cz[size_t(i)] == zcut && cid[size_t(i)] <= idcut)));
    return in && ce[size_t(i)] >= min_p;  // min-p: e = p / p_max here
  };
  double s = 0;
  for (int64_t i = 0; i < n; ++i)
    if (kept(i)) s += ce[size_t(i)];
  const double u = uniform(gen) * s;
  double cum = 0;
  int64_t last = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!kept(i)) continue;
    cum += ce[size_t(i)];
    last = cid[size_t(i)];
    if (u < cum) return last;
  }
  return last;
}

void apply_penalties(float* x, int64_t V, const SamplingParams& p, const int64_t* prev, int64_t nprev) {
  if (nprev == 0 || (p.repetition_penalty == 1.0 && p.presence_penalty == 0.0 && p.frequency_penalty == 0.0))
    return;
  std::unordered_map<int64_t, int64_t> count;
  for (int64_t i = 0; i < nprev; ++i) {
    KILN_CHECK(prev[i] >= 0 && prev[i] < V, IndexError,
               "[sample] previous token " << prev[i] << " is out of range for " << V << " logits");
    ++count[prev[i]];
  }
  for (const auto& [t, n] : count) {
    float v = x[t];
    if (p.repetition_penalty != 1.0)
      v = v > 0 ? float(v / p.repetition_penalty) : float(v * p.repetition_penalty);
    v = float(v - p.presence_penalty - p.frequency_penalty * double(n));
    x[t] = v;
  }
}

void check_params(const SamplingParams& p) {
  KILN_CHECK(p.temperature >= 0 && std::isfinite(p.temperature), ValueError,
             "[sample] temperature must be >= 0, got " << p.temperature);
  KILN_CHECK(p.top_k >= 0, ValueError, "[sample] top_k must be >= 0, got " << p.top_k);
  KILN_CHECK(p.top_p > 0 && p.top_p <= 1, ValueError, "[sample] top_p must be in (0, 1], got " << p.top_p);
  KILN_CHECK(p.min_p >= 0 && p.min_p <= 1, ValueError, "[sample] min_p must be in [0, 1], got " << p.min_p);
  KILN_CHECK(p.repetition_penalty > 0, ValueError,
             "[sample] repetition_penalty must be > 0, got " << p.repetition_penalty);
}

}  // namespace

int64_t sample_row_(float* x, int64_t V, const SamplingParams& p, const int64_t* prev, int64_t nprev,
                    Generator& gen) {
  check_params(p);
  KILN_CHECK(V > 0, ValueError, "[sample] empty logits row");
  apply_penalties(x, V, p, prev, nprev);
  if (p.temperature == 0.0 || p.top_k == 1) return argmax_row(x, V);
  const float inv_t = float(1.0 / p.temperature);
  const float m = cpu::row_max_f32(x, V);
  KILN_CHECK(std::isfinite(m), ValueError, "[sample] logits max is " << m << " (NaN, +inf or all -inf)");
  // Work in "scaled" logits z = (x - m) * inv_t <= 0: keep z >= log(min_p).
  if (p.top_k > 0 && p.top_k < V) {
    // A min-heap of the k largest (ties: lower id wins, as a stable sort).
    const size_t k = size_t(p.top_k);
    auto worse = [](const Cand& a, const Cand& b) {
      return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    };
    std::vector<Cand> heap;
    heap.reserve(k);
    for (int64_t i = 0; i < V; ++i) {
      if (heap.size() < k) {
        heap.push_back({x[i], i});
        std::push_heap(heap.begin(), heap.end(), worse);
      } else if (x[i] > heap.front().logit) {
        std::pop_heap(heap.begin(), heap.end(), worse);
        heap.back() = {x[i], i};
        std::push_heap(heap.begin(), heap.end(), worse);
      }
    }
    return sample_candidates(heap, m, inv_t, p.top_p, p.min_p, gen);
  }
  const double S = cpu::row_expsum_f32(x, V, inv_t, m * inv_t);
  if (p.top_p < 1.0) {
    // Tokens below (1 - top_p) / V of the mass cannot be in the nucleus.
    const double thr = S * (1.0 - p.top_p) / double(V);
    const float zthr = float(std::log(std::max(thr, 1e-300)));
    return sample_nucleus(x, V, m, inv_t, zthr, p.top_p, p.min_p, gen);
  }
  if (p.min_p > 0.0) {
    const float zthr = float(std::log(p.min_p));
    double s = 0;
    for (int64_t i = 0; i < V; ++i) {
      const float z = (x[i] - m) * inv_t;
      if (z >= zthr) s += std::exp(double(z));
    }
    const double u = uniform(gen) * s;
    double cum = 0;
    int64_t last = 0;
    for (int64_t i = 0; i < V; ++i) {
      const float z = (x[i] - m) * inv_t;
      if (z >= zthr) {
        cum += std::exp(double(z));
        last = i;
        if (u < cum) return i;
      }
    }
    return last;
  }
  // Plain: scan the exponentials up to the drawn mass.
  const double u = uniform(gen) * S;
  double cum = 0;
  constexpr int64_t kBlock = 1024;
  for (int64_t b = 0; b < V; b += kBlock) {
    const int64_t n = std::min(kBlock, V - b);
    const double blk = cpu::row_expsum_f32(x + b, n, inv_t, m * inv_t);
    if (u < cum + blk) {
      for (int64_t i = b; i < b + n; ++i) {
        cum += std::exp(double(x[i] * inv_t - m * inv_t));
        if (u < cum) return i;
      }
      return b + n - 1;
    }
    cum += blk;
  }
  return argmax_row(x, V);  // rounding left u past the total: the mode is a safe pick
}

Tensor sample(const Tensor& logits, const SamplingParams& params, const Tensor* prev_tokens, Generator* gen) {
  check_params(params);
  KILN_CHECK(logits.dim() == 1 || logits.dim() == 2, ValueError,
             "[sample] logits must be [V] or [B, V], got " << logits.shape_str());
  KILN_CHECK(logits.dtype() == DType::Float32 || logits.dtype() == DType::BFloat16 ||
                 logits.dtype() == DType::Float16,
             TypeError, "[sample] logits must be float32, bfloat16 or float16, got " << name(logits.dtype()));
  const int64_t B = logits.dim() == 2 ? logits.size(0) : 1, V = logits.size(-1);
  KILN_CHECK(V > 0, ValueError, "[sample] logits " << logits.shape_str() << " have no vocabulary");
  // A private float32 copy: the penalties write into it.
  Tensor x = logits.to(DType::Float32).contiguous();
  if (x.data_ptr() == logits.data_ptr()) x = x.clone();
  Tensor prev;
  int64_t nprev = 0;
  bool per_row = false;
  if (prev_tokens) {
    KILN_CHECK(is_integral(prev_tokens->dtype(), false) &&
                   (prev_tokens->dim() == 1 || (prev_tokens->dim() == 2 && prev_tokens->size(0) == B)),
               ValueError,
               "[sample] prev_tokens must be an integer [n] or [" << B << ", n] tensor, got "
                                                                  << prev_tokens->shape_str());
    prev = prev_tokens->to(DType::Int64).contiguous();
    nprev = prev.size(-1);
    per_row = prev.dim() == 2;
  }
  Generator& g = gen ? *gen : default_generator();
  Tensor out = empty(logits.dim() == 2 ? Shape{B} : Shape{}, DType::Int64);
  int64_t* o = out.data<int64_t>();
  float* xp = x.data<float>();
  const int64_t* pp = prev.defined() ? prev.data<int64_t>() : nullptr;
  for (int64_t b = 0; b < B; ++b)
    o[b] = sample_row_(xp + b * V, V, params, pp ? pp + (per_row ? b * nprev : 0) : nullptr, nprev, g);
  return out;
}

}  // namespace kiln
