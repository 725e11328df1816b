#include "cpu/attention_amx.h"

#include <vector>

#include "cpu/amx.h"
#include "cpu/attention.h"
#include "cpu/gemm.h"
#include "kiln/error.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "cpu/transpose_x86.h"
#define KILN_ATTN_AMX_X86 1
#define KILN_ATTN_AMX_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#endif

namespace kiln::cpu {

static_assert(kAttnKeyBlock == 32 && kAttnMaxRows == 32, "the tiles hold 32 rows x 32 keys");

#ifdef KILN_ATTN_AMX_X86

namespace {
constexpr int64_t kMaxE = 256;

// The calling thread's scratch, 64-byte aligned (the tiles load whole lines).
uint32_t* scratch_words(size_t words) {
  thread_local std::vector<uint32_t> buf;
  if (buf.size() < words + 16) buf.resize(words + 16);
  const uintptr_t p = reinterpret_cast<uintptr_t>(buf.data());
  return reinterpret_cast<uint32_t*>((p + 63) / 64 * 64);
}

// 32 bf16 from 32 float32 (nearest even), or zero.
KILN_ATTN_AMX_TARGET inline __m512i bf16_32(const float* src, bool live) {
  if (!live) return _mm512_setzero_si512();
  return (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + 16), _mm512_loadu_ps(src));
}
// qb[32][E] = bf16 of q's rows, rows past `rows` zero.
KILN_ATTN_AMX_TARGET void round_rows(const float* q, int64_t rows, int64_t ldq, int64_t E, uint16_t* qb) {
  for (int64_t r = 0; r < 32; ++r)
    for (int64_t e = 0; e < E; e += 32)
      _mm512_store_si512(qb + r * E + e, bf16_32(q + r * ldq + e, r < rows));
}
}  // namespace

bool AttnAmx::usable(int64_t E, int64_t Ev) {
  return amx_tiles_active() && bf16_gemm_active() && E > 0 && Ev > 0 && E % 32 == 0 && Ev % 32 == 0 &&
         E <= kMaxE && Ev <= kMaxE;
}

AttnAmx::AttnAmx(const float* q, int64_t rows, int64_t ldq, int64_t E, int64_t Ev)
    : rows_(rows), E_(E), Ev_(Ev) {
  KILN_CHECK(rows >= 0 && rows <= 32 && usable(E, Ev), ValueError,
             "[attention] the AMX tiles do not take " << rows << " rows of E = " << E << ", Ev = " << Ev);
  // Word counts, each a whole number of 64-byte lines.
  const int64_t nq = 16 * E, nk = 2 * (E / 32) * 256, nv = (Ev / 16) * 256, np = 512, nout = 1024;
  uint32_t* w = scratch_words(size_t(nq + nk + nv + np + nout));
  qb_ = reinterpret_cast<uint16_t*>(w);
  kp_ = w + nq;
  vp_ = kp_ + nk;
  pb_ = reinterpret_cast<uint16_t*>(vp_ + nv);
  out_ = reinterpret_cast<float*>(vp_ + nv + np);
  round_rows(q, rows, ldq, E, qb_);
  amx_begin();
}

AttnAmx::~AttnAmx() { amx_end(); }

// kp_[g][s][i][c] = the pair (k[16 g + c][32 s + 2 i], ..[+ 1]): key rows of
// 32 elements, 16 at a time, transposed 16 x 16 as pairs.
KILN_ATTN_AMX_TARGET void AttnAmx::scores(const bfloat16* k, int64_t ks, int64_t nb, float* sc) {
  const int64_t steps = E_ / 32;
  const uint16_t* kr = reinterpret_cast<const uint16_t*>(k);
  for (int64_t g = 0; g < 2; ++g)
    for (int64_t s = 0; s < steps; ++s) {
      __m512i r[16];
      for (int64_t c = 0; c < 16; ++c) {
        const int64_t j = 16 * g + c;
        r[c] = j < nb ? _mm512_loadu_si512(kr + j * ks + 32 * s) : _mm512_setzero_si512();
      }
      transpose16(r);
      uint32_t* d = kp_ + (g * steps + s) * 256;
      for (int64_t i = 0; i < 16; ++i) _mm512_store_si512(d + 16 * i, r[i]);
    }
  // sc[32][32] = qb (A: 32 rows of E) . kp (B: E x 32 keys)
  amx_product(2, {reinterpret_cast<const char*>(qb_), E_ * 2, 16 * E_ * 2, 64},
              {reinterpret_cast<const char*>(kp_), 64, steps * 1024, 1024}, steps, true, sc);
}

// vp_[g][i][c] = the pair (v[2 i][16 g + c], v[2 i + 1][16 g + c]): two key
// rows interleaved element by element (unpack, then the 128-bit lanes put in
// order).
KILN_ATTN_AMX_TARGET void AttnAmx::accumulate_pv(const float* p, const bfloat16* v, int64_t vs, int64_t nb,
                                                 float* acc, int64_t lda) {
  for (int64_t r = 0; r < 32; ++r) _mm512_store_si512(pb_ + r * 32, bf16_32(p + r * 32, r < rows_));
  const uint16_t* vr = reinterpret_cast<const uint16_t*>(v);
  const __m512i lanes_lo = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m512i lanes_hi = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t e = 0; e < Ev_; e += 32) {
      const __m512i a = 2 * i < nb ? _mm512_loadu_si512(vr + 2 * i * vs + e) : _mm512_setzero_si512();
      const __m512i b =
          2 * i + 1 < nb ? _mm512_loadu_si512(vr + (2 * i + 1) * vs + e) : _mm512_setzero_si512();
      const __m512i lo = _mm512_unpacklo_epi16(a, b), hi = _mm512_unpackhi_epi16(a, b);
      uint32_t* d = vp_ + (e / 16) * 256 + 16 * i;
      _mm512_store_si512(d, _mm512_permutex2var_epi64(lo, lanes_lo, hi));
      _mm512_store_si512(d + 256, _mm512_permutex2var_epi64(lo, lanes_hi, hi));
    }
  // out[32][32] = pb (A: 32 rows of 32 keys) . vp (B: 32 keys x 32 elements), 32 elements at a time.
  for (int64_t e = 0; e < Ev_; e += 32) {
    amx_product(2, {reinterpret_cast<const char*>(pb_), 64, 1024, 64},
                {reinterpret_cast<const char*>(vp_ + (e / 16) * 256), 64, 1024, 1024}, 1, true, out_);
    for (int64_t r = 0; r < rows_; ++r)
      for (int64_t h = 0; h < 32; h += 16) {
        float* a = acc + r * lda + e + h;
        _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a), _mm512_load_ps(out_ + r * 32 + h)));
      }
  }
}

#else  // no AMX to build for

bool AttnAmx::usable(int64_t, int64_t) { return false; }
AttnAmx::AttnAmx(const float*, int64_t, int64_t, int64_t, int64_t) {
  KILN_CHECK(false, NotImplementedError, "[attention] AMX tiles are not built for this CPU");
}
AttnAmx::~AttnAmx() = default;
void AttnAmx::scores(const bfloat16*, int64_t, int64_t, float*) {}
void AttnAmx::accumulate_pv(const float*, const bfloat16*, int64_t, int64_t, float*, int64_t) {}

#endif

}  // namespace kiln::cpu
