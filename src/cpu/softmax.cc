// softmax / log_softmax over contiguous float32 rows.
//
// One read pass, online: the row goes by in blocks of kBlock floats (8 KiB,
// L1-resident between the two sweeps a block gets). Each block's max updates
// the running max M (the running sum S is rescaled by exp(M_old - M_new) when
// M grows, a scalar step per block, rare after the first blocks), then
// exp(x - M) is summed into S (f32 lanes per block, f64 across blocks). The
// read pass also stores each block (M_b: the running max that block saw):
// softmax exp(x - M_b), log_softmax x - M_b. Then one pass over y alone fixes
// each block up with one constant: softmax scales by exp(M_b - M) / S,
// log_softmax subtracts (M - M_b) + log S. That costs one exp per element
// instead of two (recomputing exp(x - M) in the write pass costs ~14 vector
// ops per 16 floats, the scale 3; measured 1.1-1.7x slower), and the stored
// block is still in L1/L2 when the fix-up pass comes back to it (log_softmax
// re-reading x there instead ran at ~0.55 of the read roof, softmax at ~0.8).
//
// The exp is our own (ExpNonPos, cpu/exp-inl.h): <= 1 ulp against float64
// over [-104, 0] (tests/cpp/softmax_test.cc sweeps it); exp(NaN) = NaN, which
// is how a NaN anywhere in a row poisons its sum.
//
// A long row is cut into one chunk per thread; each chunk yields (M_c, S_c),
// the chunks combine as S = sum_c S_c exp(M_c - M), and the write pass runs in
// parallel again.
#include "cpu/softmax.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/softmax.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cmath>
#include <limits>

#include "cpu/exp-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

constexpr float kInf = std::numeric_limits<float>::infinity();

// Lanes [0, r) of x, the rest `fill` (0 < r < Lanes), and its store
// counterpart. AVX2 and AVX-512 mask the memory access itself; elsewhere
// Highway's MaskedLoad / BlendedStore may touch every lane, so a buffer.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !HWY_HAVE_SCALABLE
HWY_INLINE VF LoadTail(DF d, const float* HWY_RESTRICT x, int64_t r, float fill) {
  const auto m = hn::FirstN(d, size_t(r));
  return hn::IfThenElse(m, hn::MaskedLoad(m, d, x), hn::Set(d, fill));
}
HWY_INLINE void StoreTail(DF d, VF v, float* HWY_RESTRICT y, int64_t r) {
  hn::BlendedStore(v, hn::FirstN(d, size_t(r)), d, y);
}
#else
HWY_INLINE VF LoadTail(DF d, const float* HWY_RESTRICT x, int64_t r, float fill) {
  HWY_ALIGN float buf[hn::MaxLanes(d)];
  for (size_t j = 0; j < hn::Lanes(d); ++j) buf[j] = int64_t(j) < r ? x[j] : fill;
  return hn::Load(d, buf);
}
HWY_INLINE void StoreTail(DF d, VF v, float* HWY_RESTRICT y, int64_t r) {
  HWY_ALIGN float buf[hn::MaxLanes(d)];
  hn::Store(v, d, buf);
  for (int64_t j = 0; j < r; ++j) y[j] = buf[j];
}
#endif

// Max of x[0..n) for 0 < n; with NaN present the result may or may not be NaN
// (SIMD max drops NaN operands): callers detect NaN through the exp sum.
HWY_INLINE float BlockMax(const float* HWY_RESTRICT x, int64_t n) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  VF m0 = hn::Set(d, -kInf), m1 = m0, m2 = m0, m3 = m0;
  int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    m0 = hn::Max(m0, hn::LoadU(d, x + i));
    m1 = hn::Max(m1, hn::LoadU(d, x + i + N));
    m2 = hn::Max(m2, hn::LoadU(d, x + i + 2 * N));
    m3 = hn::Max(m3, hn::LoadU(d, x + i + 3 * N));
  }
  for (; i + N <= n; i += N) m0 = hn::Max(m0, hn::LoadU(d, x + i));
  if (i < n) m1 = hn::Max(m1, LoadTail(d, x + i, n - i, -kInf));
  return hn::GetLane(hn::MaxOfLanes(d, hn::Max(hn::Max(m0, m1), hn::Max(m2, m3))));
}

// What the read pass stores into y: nothing, exp(x - m) (softmax) or x - m
// (log_softmax).
enum class Store { None, Exp, Shifted };

// sum exp(x[i] * s - m) over x[0..n) (x * s - m may pass 88 by rounding when
// s is huge: the scaled form takes exp's checked upper bound): f32 lane sums of at most 16 terms per
// lane, then f64; kStore also writes the exponentials or the shifted inputs
// to y (y may be x).
template <Store kStore, bool kScale>
HWY_INLINE double ExpBlock(const float* x, float* y, int64_t n, float s, float m) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  const VF vm = hn::Set(d, m), vs = hn::Set(d, s);
  auto arg = [&](VF v) { return kScale ? hn::MulSub(v, vs, vm) : hn::Sub(v, vm); };
  // One vector: its exp, and its store (the exp or the argument).
  auto step = [&](VF v, float* out) {
    const VF a = arg(v), e = ExpNonPos<kScale>(d, a);
    if constexpr (kStore == Store::Exp) hn::StoreU(e, d, out);
    if constexpr (kStore == Store::Shifted) hn::StoreU(a, d, out);
    return e;
  };
  double total = 0.0;
  int64_t i = 0;
  while (i + 4 * N <= n) {
    VF s0 = hn::Zero(d), s1 = s0, s2 = s0, s3 = s0;
    const int64_t end = i + 64 * N < n ? i + 64 * N : n;
    for (; i + 4 * N <= end; i += 4 * N) {
      // All four loads before the first store: y may be x.
      const VF v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + N);
      const VF v2 = hn::LoadU(d, x + i + 2 * N), v3 = hn::LoadU(d, x + i + 3 * N);
      s0 = hn::Add(s0, step(v0, y + i));
      s1 = hn::Add(s1, step(v1, y + i + N));
      s2 = hn::Add(s2, step(v2, y + i + 2 * N));
      s3 = hn::Add(s3, step(v3, y + i + 3 * N));
    }
    total += double(hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)))));
  }
  VF s0 = hn::Zero(d);
  for (; i + N <= n; i += N) s0 = hn::Add(s0, step(hn::LoadU(d, x + i), y + i));
  if (i < n) {  // tail lanes padded with -inf: exp -> 0
    const VF a = arg(LoadTail(d, x + i, n - i, -kInf)), e0 = ExpNonPos<kScale>(d, a);
    if constexpr (kStore == Store::Exp) StoreTail(d, e0, y + i, n - i);
    if constexpr (kStore == Store::Shifted) StoreTail(d, a, y + i, n - i);
    s0 = hn::Add(s0, e0);
  }
  return total + double(hn::GetLane(hn::SumOfLanes(d, s0)));
}

constexpr int64_t kBlock = kSoftmaxBlock;

// The online read pass over x[0..n): running max *m_out and sum
// *s_out = sum exp(x - *m_out) (NaN when x holds a NaN, or +inf; 0 with max
// -inf when every entry is -inf). Block b of y gets exp(x - bm[b]) (kStore
// Exp) or x - bm[b] (Shifted), bm[b] being the running max when block b went
// by.
template <Store kStore>
void OnlinePass(const float* x, float* y, int64_t n, float* bm, float* m_out, double* s_out) {
  float M = -kInf;
  double S = 0.0;
  for (int64_t lo = 0, b = 0; lo < n; lo += kBlock, ++b) {
    const int64_t len = n - lo < kBlock ? n - lo : kBlock;
    const float bmax = BlockMax(x + lo, len);
    if (bmax > M) {
      if (M != -kInf) S *= std::exp(double(M) - double(bmax));  // M = -inf: S is 0 (or NaN) as it is
      M = bmax;
    }
    bm[b] = M;
    if (M == -kInf) {  // every entry so far -inf (or NaN, which SIMD max may drop)
      for (int64_t i = lo; i < lo + len; ++i) {
        const float xi = x[i];
        if (std::isnan(xi)) S = std::numeric_limits<double>::quiet_NaN();
        y[i] = kStore == Store::Exp ? 0.0f : xi;  // exp(-inf) = 0; log_softmax: -inf as it is
      }
      continue;
    }
    S += (ExpBlock<kStore, false>(x + lo, y + lo, len, 1.0f, M));
  }
  *m_out = M;
  *s_out = S;
}

void OnlineStats(const float* x, float* y, int64_t n, bool log, float* bm, float* m_out, double* s_out) {
  if (log) {
    OnlinePass<Store::Shifted>(x, y, n, bm, m_out, s_out);
  } else {
    OnlinePass<Store::Exp>(x, y, n, bm, m_out, s_out);
  }
}

// y[i] -= c (kSubtract) or y[i] *= c.
template <bool kSubtract>
HWY_INLINE VF Apply(VF v, VF c) {
  return kSubtract ? hn::Sub(v, c) : hn::Mul(v, c);
}
template <bool kSubtract>
HWY_INLINE void ApplyRange(float* HWY_RESTRICT y, int64_t n, float c) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  const VF vc = hn::Set(d, c);
  int64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    hn::StoreU(Apply<kSubtract>(hn::LoadU(d, y + i), vc), d, y + i);
    hn::StoreU(Apply<kSubtract>(hn::LoadU(d, y + i + N), vc), d, y + i + N);
  }
  for (; i + N <= n; i += N) hn::StoreU(Apply<kSubtract>(hn::LoadU(d, y + i), vc), d, y + i);
  if (i < n) StoreTail(d, Apply<kSubtract>(LoadTail(d, y + i, n - i, 0.0f), vc), y + i, n - i);
}

// The write pass over a chunk whose read pass stored into y (OnlinePass):
// softmax scales block b by exp(bm[b] - M) / S, log_softmax subtracts
// (M - bm[b]) + log S from it (blocks with bm[b] = -inf hold only -inf, their
// result).
void FixBlocks(float* y, int64_t n, const float* bm, float M, double S, bool log) {
  const double logS = log ? std::log(S) : 0.0;
  float last = std::numeric_limits<float>::quiet_NaN(), c = 0.0f;
  for (int64_t lo = 0, b = 0; lo < n; lo += kBlock, ++b) {
    const int64_t len = n - lo < kBlock ? n - lo : kBlock;
    if (log && bm[b] == -kInf) continue;
    if (!(bm[b] == last)) {  // consecutive blocks mostly share the running max
      last = bm[b];
      if (log) {
        c = bm[b] == M ? float(logS) : float((double(M) - double(bm[b])) + logS);
      } else {
        c = bm[b] == M ? float(1.0 / S) : float(std::exp(double(bm[b]) - double(M)) / S);
      }
    }
    if (log) {
      ApplyRange<true>(y + lo, len, c);
    } else {
      ApplyRange<false>(y + lo, len, c);
    }
  }
}

void Fill(float* y, int64_t n, float v) {
  for (int64_t i = 0; i < n; ++i) y[i] = v;
}

// A row's result is NaN unless its max is finite and its sum a positive number
// (a NaN entry makes the sum NaN; +inf makes the max +inf; all -inf: sum 0).
HWY_INLINE bool Poisoned(float M, double S) { return !std::isfinite(M) || !(S > 0.0); }

// Rows of at most kShortVecs vectors, held in registers: one read, one write,
// no second pass over memory and no float64 (a sum of at most kShortVecs * N
// terms). Such a row is a chain of latencies (max, exp, sum, reciprocal), so
// K rows go through together for independent work; V vectors per row.
constexpr int kShortVecs = 8;
template <int V, int K>
HWY_INLINE void ShortRows(const float* HWY_RESTRICT x, int64_t sx, float* HWY_RESTRICT y, int64_t sy,
                          int64_t n, bool log) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  VF v[K][V], e[K][V], vm[K], vc[K];
  float M[K], S[K];
  for (int k = 0; k < K; ++k) {
    for (int i = 0; i < V; ++i) {
      const int64_t lo = i * N;
      v[k][i] = lo + N <= n ? hn::LoadU(d, x + k * sx + lo) : LoadTail(d, x + k * sx + lo, n - lo, -kInf);
    }
    VF m = v[k][0];
    for (int i = 1; i < V; ++i) m = hn::Max(m, v[k][i]);
    vm[k] = hn::MaxOfLanes(d, m);
  }
  for (int k = 0; k < K; ++k) {
    VF sum = hn::Zero(d);
    for (int i = 0; i < V; ++i) {
      e[k][i] = ExpNonPos(d, hn::Sub(v[k][i], vm[k]));
      sum = hn::Add(sum, e[k][i]);
    }
    S[k] = hn::GetLane(hn::SumOfLanes(d, sum));
    M[k] = hn::GetLane(vm[k]);
  }
  for (int k = 0; k < K; ++k) vc[k] = log ? hn::Set(d, std::log(S[k])) : hn::Set(d, 1.0f / S[k]);
  for (int k = 0; k < K; ++k) {
    float* yk = y + k * sy;
    if (Poisoned(M[k], S[k])) {
      Fill(yk, n, std::numeric_limits<float>::quiet_NaN());
      continue;
    }
    for (int i = 0; i < V; ++i) {
      const VF out = log ? hn::Sub(hn::Sub(v[k][i], vm[k]), vc[k]) : hn::Mul(e[k][i], vc[k]);
      const int64_t lo = i * N;
      if (lo + N <= n) {
        hn::StoreU(out, d, yk + lo);
      } else {
        StoreTail(d, out, yk + lo, n - lo);
      }
    }
  }
}

// Rows of n <= V * N floats: the template for the row's vector count, found
// by counting V up to kShortVecs.
template <int V>
void ShortRowsV(const float* x, int64_t sx, float* y, int64_t sy, int64_t rows, int64_t n, bool log) {
  if constexpr (V < kShortVecs) {
    if (n > V * int64_t(hn::Lanes(DF()))) return ShortRowsV<V + 1>(x, sx, y, sy, rows, n, log);
  }
  int64_t r = 0;
  for (; r + 2 <= rows; r += 2) ShortRows<V, 2>(x + r * sx, sx, y + r * sy, sy, n, log);
  if (r < rows) ShortRows<V, 1>(x + r * sx, sx, y + r * sy, sy, n, log);
}

// One whole row, serially, with the block maxima on the stack when they fit.
void SoftmaxRow(const float* x, float* y, int64_t n, bool log) {
  constexpr int64_t kStackBlocks = 64;
  float M;
  double S;
  const int64_t nb = (n + kBlock - 1) / kBlock;
  float stack_bm[kStackBlocks];
  float* bm = stack_bm;
  float* heap_bm = nb > kStackBlocks ? new float[size_t(nb)] : nullptr;
  if (heap_bm != nullptr) bm = heap_bm;
  OnlineStats(x, y, n, log, bm, &M, &S);
  if (Poisoned(M, S)) {
    Fill(y, n, std::numeric_limits<float>::quiet_NaN());
  } else {
    FixBlocks(y, n, bm, M, S, log);
  }
  delete[] heap_bm;
}

// Rows [0, rows) of x (row stride sx) into y (stride sy), serially.
void SoftmaxRows(const float* x, int64_t sx, float* y, int64_t sy, int64_t rows, int64_t n, bool log) {
  const int64_t N = int64_t(hn::Lanes(DF()));
  if (n <= kShortVecs * N) {
    return ShortRowsV<1>(x, sx, y, sy, rows, n, log);
  }
  for (int64_t r = 0; r < rows; ++r) SoftmaxRow(x + r * sx, y + r * sy, n, log);
}

void ExpF32(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, int64_t n) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(ExpNonPos<true>(d, hn::LoadU(d, x + i)), d, y + i);
  if (i < n) StoreTail(d, ExpNonPos<true>(d, LoadTail(d, x + i, n - i, 0.0f)), y + i, n - i);
}

float RowMax(const float* x, int64_t n) {
  // BlockMax may drop NaN; sampling wants it reported.
  if (n <= 0) return -kInf;
  const float m = BlockMax(x, n);
  if (std::isnan(m)) return m;
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  auto bad = hn::Zero(d);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const VF v = hn::LoadU(d, x + i);
    bad = hn::Or(bad, hn::VecFromMask(d, hn::IsNaN(v)));
  }
  for (; i < n; ++i)
    if (std::isnan(x[i])) return x[i];
  return hn::AllTrue(d, hn::Eq(bad, hn::Zero(d))) ? m : std::numeric_limits<float>::quiet_NaN();
}

double ExpSumScaled(const float* x, int64_t n, float s, float m) {
  double total = 0.0;
  for (int64_t lo = 0; lo < n; lo += kBlock)
    total += (ExpBlock<Store::None, true>(x + lo, nullptr, n - lo < kBlock ? n - lo : kBlock, s, m));
  return total;
}

// Lane indices that move the set lanes of a kN-lane mask to the front, in
// order: row `bits` of the table. Static storage: Highway 1.0's own AVX2
// Compress builds its table on the stack at every call (~50 cycles a vector,
// slower than the scalar loop it replaced); a table lookup and a permute cost
// ~3 ns a vector.
template <int kN>
struct CompressIndices {
  int32_t idx[1 << kN][kN] = {};
  constexpr CompressIndices() {
    for (int bits = 0; bits < (1 << kN); ++bits)
      for (int i = 0, k = 0; i < kN; ++i)
        if ((bits >> i) & 1) idx[bits][k++] = i;
  }
};
constexpr int kTableLanes = hn::MaxLanes(DF()) <= 8 ? int(hn::MaxLanes(DF())) : 1;
alignas(64) constexpr CompressIndices<kTableLanes> kCompress{};

// z_i = (x_i - m) * inv_t for i in [0, V); those with z >= zthr go to
// cz[0..n), their indices to cid[0..n), in index order; returns n. Both
// buffers hold V + lanes entries (whole vectors are stored). Sub then Mul, as
// the scalar form: the same z to the bit.
int64_t GatherAbove(const float* HWY_RESTRICT x, int64_t V, float m, float inv_t, float zthr,
                    float* HWY_RESTRICT cz, int32_t* HWY_RESTRICT cid) {
  const DF d;
  const hn::RebindToSigned<DF> di;
  const int64_t N = int64_t(hn::Lanes(d));
  const VF vm = hn::Set(d, m), vs = hn::Set(d, inv_t), vthr = hn::Set(d, zthr);
  const auto iota = hn::Iota(di, 0);
  int64_t n = 0, i = 0;
  for (; i + N <= V; i += N) {
    const VF z = hn::Mul(hn::Sub(hn::LoadU(d, x + i), vm), vs);
    const auto keep = hn::Ge(z, vthr);
    const auto ids = hn::Add(iota, hn::Set(di, int32_t(i)));
    if constexpr (hn::MaxLanes(d) <= 8) {
      uint8_t bits[8] = {};
      hn::StoreMaskBits(d, keep, bits);
      const auto row = hn::Load(di, kCompress.idx[bits[0]]);
      hn::StoreU(hn::TableLookupLanes(z, hn::IndicesFromVec(d, row)), d, cz + n);
      hn::StoreU(hn::TableLookupLanes(ids, hn::IndicesFromVec(di, row)), di, cid + n);
    } else {  // AVX-512: a native compress
      hn::StoreU(hn::Compress(z, keep), d, cz + n);
      hn::StoreU(hn::Compress(ids, hn::RebindMask(di, keep)), di, cid + n);
    }
    n += int64_t(hn::CountTrue(d, keep));
  }
  for (; i < V; ++i) {
    const float z = (x[i] - m) * inv_t;
    cz[n] = z;
    cid[n] = int32_t(i);
    n += z >= zthr;
  }
  return n;
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "kiln/thread_pool.h"

namespace kiln::cpu {
HWY_EXPORT(RowMax);
HWY_EXPORT(SoftmaxRows);
HWY_EXPORT(OnlineStats);
HWY_EXPORT(FixBlocks);
HWY_EXPORT(ExpF32);
HWY_EXPORT(ExpSumScaled);
HWY_EXPORT(GatherAbove);

namespace {

inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// One long row over nt threads in a single parallel region: each thread's
// chunk gets the online read pass, the threads meet at a barrier, and each
// writes the chunk it read (still in its own L2). nt chunks for nt pool
// threads: a thread waiting at the barrier holds one chunk, so the others are
// left to the threads still to arrive.
void split_row(const float* x, float* y, int64_t n, bool log, int nt) {
  // Chunks of whole blocks (a chunk's block maxima line up with FixBlocks').
  constexpr int64_t kB = kSoftmaxBlock;
  const int64_t blocks = (n + kB - 1) / kB;
  const int64_t per = (blocks + nt - 1) / nt * kB;
  const int nc = int((n + per - 1) / per);
  float m[kSoftmaxMaxThreads];
  double s[kSoftmaxMaxThreads];
  float stack_bm[512];
  std::vector<float> heap_bm(blocks <= 512 ? 0 : size_t(blocks));
  float* bm = blocks <= 512 ? stack_bm : heap_bm.data();
  std::atomic<int> arrived{0};
  parallel_for(0, nc, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {  // one chunk per call (nc <= pool size)
      const int64_t lo = c * per, len = std::min(per, n - lo);
      float* bmc = bm + lo / kB;
      HWY_DYNAMIC_DISPATCH(OnlineStats)(x + lo, y + lo, len, log, bmc, &m[c], &s[c]);
      arrived.fetch_add(1, std::memory_order_acq_rel);
      for (int spins = 0; arrived.load(std::memory_order_acquire) < nc; ++spins) {
        if (spins < 4096) {
          spin_pause();
        } else {
          std::this_thread::yield();  // more threads than cores: let the late one run
        }
      }
      float M = -std::numeric_limits<float>::infinity();
      for (int k = 0; k < nc; ++k) M = std::max(M, m[k]);
      double S = 0.0;
      for (int k = 0; k < nc; ++k) S += s[k] * std::exp(double(m[k]) - double(M));  // chunk of -inf: 0 * 0
      if (!std::isfinite(M) || !(S > 0.0)) {  // NaN / +inf / all -inf, as SoftmaxRow
        std::fill(y + lo, y + lo + len, std::numeric_limits<float>::quiet_NaN());
      } else {
        HWY_DYNAMIC_DISPATCH(FixBlocks)(y + lo, len, bmc, M, S, log);
      }
    }
  });
}

void rows_serial(const float* x, int64_t sx, float* y, int64_t sy, int64_t r0, int64_t r1, int64_t n,
                 bool log) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRows)(x + r0 * sx, sx, y + r0 * sy, sy, r1 - r0, n, log);
}

}  // namespace

void softmax_rows_f32(const float* x, int64_t sx, float* y, int64_t sy, int64_t rows, int64_t n, bool log) {
  if (rows <= 0 || n <= 0) return;
  const int nt = std::min(num_threads(), kSoftmaxMaxThreads);
  // Small problems stay on the calling thread: a hand-off costs more than
  // they take.
  if (nt == 1 || rows * n < kSoftmaxParallelMin || in_parallel_region()) {
    rows_serial(x, sx, y, sy, 0, rows, n, log);
    return;
  }
  // Whole rows batch across threads; with long rows, the rows left over when
  // they don't divide evenly (all of them when rows < threads) are each split
  // across every thread instead of leaving threads idle.
  const bool split = n >= kSoftmaxSplitMin;
  const int64_t batched = split ? rows - rows % nt : rows;
  if (batched > 0) {
    const int64_t grain = std::max<int64_t>(1, kSoftmaxParallelMin / 2 / n);
    parallel_for(0, batched, grain, [&](int64_t b, int64_t e) { rows_serial(x, sx, y, sy, b, e, n, log); });
  }
  for (int64_t r = batched; r < rows; ++r) split_row(x + r * sx, y + r * sy, n, log, nt);
}

float row_max_f32(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(RowMax)(x, n); }

double row_expsum_f32(const float* x, int64_t n, float inv_t, float m) {
  return HWY_DYNAMIC_DISPATCH(ExpSumScaled)(x, n, inv_t, m);
}

void exp_f32(const float* x, float* y, int64_t n) { HWY_DYNAMIC_DISPATCH(ExpF32)(x, y, n); }

int64_t gather_above_f32(const float* x, int64_t V, float m, float inv_t, float zthr, float* cz,
                         int32_t* cid) {
  return HWY_DYNAMIC_DISPATCH(GatherAbove)(x, V, m, inv_t, zthr, cz, cid);
}

}  // namespace kiln::cpu
#endif
