// What the bf16 GEMM's two files share (gemm_bf16.cc: the K-blocked loop
// and the entry points; gemm_bf16_long.cc: many tokens on AMX with x as the
// tiles' A operand). Private to them.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <new>

#include "cpu/gemv.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KILN_BF16_GEMM_X86 1
#define KILN_BF16_GEMM_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vbmi,f16c")))
#endif

namespace kiln::cpu::bf16_gemm_parts {

constexpr int64_t kNG = 192;  // weight rows per panel: a multiple of the micro tiles' rows

// A per-thread buffer, 64-byte aligned: the micro-kernel's loads of the
// panel stay within cache lines.
template <typename T>
struct Scratch {
  T* p = nullptr;
  size_t n = 0;
  ~Scratch() { std::free(p); }
  T* get(size_t need) {
    if (need > n) {
      std::free(p);
      p = static_cast<T*>(std::aligned_alloc(64, (need * sizeof(T) + 63) / 64 * 64));
      if (p == nullptr) throw std::bad_alloc();
      n = need;
    }
    return p;
  }
};

// Whether a product of M tokens over K takes rows_amx_long (x packed by
// pack_rows) rather than the K-blocked loop (x packed by pack_block). Chosen
// by (M, K) alone, so that packing x and the rows agree.
bool x_by_rows(int64_t M, int64_t K);
// 32-k steps along K.
inline int64_t k_steps(int64_t K) { return (K + 31) / 32; }
// Token block tb of x, packed for rows_amx_long at xq (k_steps(K) * 512 words).
void pack_rows(const GemvArgs& a, int64_t tb, uint32_t* xq);
// Rows [n0, n1) of y for W of type T (bfloat16, float8_e4m3fn, float8_e5m2),
// between amx_begin() and amx_end().
template <class T>
void rows_amx_long(const GemvArgs& a, const uint32_t* xq, int64_t n0, int64_t n1);

}  // namespace kiln::cpu::bf16_gemm_parts
