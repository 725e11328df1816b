// The attention inner kernel: a block of query rows (already scaled, float32)
// against a range of key/value positions of one KV head, with an online
// softmax, so scores never exist beyond one [rows, kKeyBlock] tile.
#pragma once

#include <cstdint>

namespace kiln::cpu {

enum class KVType : int { F32 = 0, BF16 = 1, F16 = 2 };

inline constexpr int64_t kAttnKeyBlock = 32;  // keys per tile
inline constexpr int64_t kAttnMaxRows = 32;   // query rows per call

struct AttnDropout {
  float p = 0.0f;                   // drop probability; 0: none
  uint64_t seed = 0;                // Philox key
  uint64_t offset = 0;              // first counter of this call's draws
  const int64_t* row_id = nullptr;  // [rows] global row index (counter = (row_id * S + key) + offset)
  int64_t S = 0;
};

struct AttnBlock {
  // q: [rows, ldq] float32, scale folded in, zero-padded past E to ldq.
  const float* q = nullptr;
  int64_t rows = 0, ldq = 0;
  int64_t E = 0, Ev = 0;
  // Row r may see keys j <= limit[r] (causal); nullptr: no limit.
  const int64_t* limit = nullptr;
  // Row r adds mask[r][j] (float32 additive, -inf = masked) when non-null.
  const float* const* mask = nullptr;
  // Keys/values of one head: position j at k + j * ks (elements of kv type).
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t ks = 0, vs = 0;
  KVType kv = KVType::F32;
  AttnDropout dropout;
};

// Running state per row: m (max), l (sum of exp), acc [rows, ldacc] (sum of
// exp * v; ldacc >= Ev, multiple of the vector width). Initialize m = -inf,
// l = 0, acc = 0; call for consecutive or disjoint key ranges; then combine.
void attend_block(const AttnBlock& b, int64_t s0, int64_t s1, float* m, float* l, float* acc, int64_t ldacc);

// Row stride (floats) that padded q/acc rows need for length n.
int64_t attn_padded(int64_t n);

}  // namespace kiln::cpu
