// Attention's two products on AMX tiles (attention.cc), for a block of up to
// kAttnMaxRows query rows against tiles of kAttnKeyBlock keys of a bf16 KV
// cache: scores = q . K^T and acc += p . V, the online softmax between them
// staying with attention.cc's vector code. q is rounded to bf16 once per
// block and p (each probability in [0, 1]) per tile, to nearest even: each
// product within 2^-8 of itself, sums in float32, as torch's bf16 attention.
// K and V rows are read from the cache and packed per tile into the tiles'
// pair layout.
//
// Why: a prefill's attention is matrix products of 32 x 32 blocks, which the
// FMA kernels ran at ~0.4 of their peak, a third of a 1024-token prefill of
// the default model (Sapphire Rapids-class core).
#pragma once

#include <cstdint>

#include "kiln/float_types.h"

namespace kiln::cpu {

class AttnAmx {
 public:
  // Whether the tiles take this attention: AMX active, the bf16 GEMM switch
  // on (KILN_BF16_GEMM=off keeps attention exact to float32 too), and rows
  // of E (q, K) and Ev (V) elements in whole 32-element steps up to 256.
  static bool usable(int64_t E, int64_t Ev);

  // q: rows (<= 32) of E float32, ldq apart. Loads the tile configuration;
  // the destructor releases the tiles.
  AttnAmx(const float* q, int64_t rows, int64_t ldq, int64_t E, int64_t Ev);
  ~AttnAmx();
  AttnAmx(const AttnAmx&) = delete;
  AttnAmx& operator=(const AttnAmx&) = delete;

  // sc[r][j] = bf16(q_r) . k_j for keys j < nb at k + j * ks; every other
  // entry of sc[32][32] is written too (zero).
  void scores(const bfloat16* k, int64_t ks, int64_t nb, float* sc);
  // acc[r][e] += sum over j < nb of bf16(p[r][j]) v_j[e], r < rows, e < Ev;
  // p is [32][32], keys at v + j * vs.
  void accumulate_pv(const float* p, const bfloat16* v, int64_t vs, int64_t nb, float* acc, int64_t lda);

 private:
  int64_t rows_, E_, Ev_;
  uint16_t* qb_;  // [32][E] bf16 q, rows past rows_ zero
  uint32_t* kp_;  // a tile of K as B tiles: [2 key groups][E / 32 steps][16 pairs][16 keys]
  uint32_t* vp_;  // a tile of V as B tiles: [Ev / 16 groups][16 key pairs][16 elements]
  uint16_t* pb_;  // [32][32] bf16 p
  float* out_;    // [32][32] p . V for 32 elements of Ev
};

}  // namespace kiln::cpu
