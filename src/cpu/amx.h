// Intel AMX tiles (Sapphire Rapids and later): whether kiln may use them.
// Linux hands the tile registers' 8 KiB of state to a process only after it
// asks (arch_prctl ARCH_REQ_XCOMP_PERM); amx_bf16_usable() asks once and
// answers whether the CPU has AMX-TILE and AMX-BF16, the kernel granted the
// state and the SIMD dispatch target is AVX3 (KILN_SIMD_TARGET caps it).
// amx_tiles() is the switch: on by default where usable, KILN_AMX=on|off
// sets the default and set_amx_tiles overrides it; off sends the bf16 GEMM
// to its AVX512-BF16 kernel (see gemm.h).
#pragma once

#include <cstdint>

namespace kiln::cpu {

bool amx_bf16_usable();
bool amx_tiles();
void set_amx_tiles(bool on);
// amx_bf16_usable() and amx_tiles().
bool amx_tiles_active();

// The tile configuration every AMX kernel of kiln loads (ldtilecfg): palette
// 1, all eight tiles 16 rows of 64 bytes. The layout is the one the
// instruction reads.
struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t col_bytes[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};
static_assert(sizeof(AmxTileConfig) == 64);

// One operand of amx_product: two 16-row tiles of bf16 pairs (64 bytes a
// row, rows `stride` bytes apart, the second tile `second` bytes after the
// first), and the bytes from one 32-k step's tiles to the next.
struct AmxOperand {
  const char* p;
  int64_t stride, second, step;
};

// c[32][16 nv] (+)= A[32][k] . B[k][16 nv] over `steps` steps of 32 k (nv 1
// or 2: B's first tile only, or both), sums float32, rows of c 64 nv bytes
// apart. A's tiles are 16 rows of 32 bf16; B's are 16 rows of 16 pairs, pair
// n of row kp holding column n's elements 2 kp and 2 kp + 1 (tdpbf16ps's
// layout). first: c's sums start at zero. pf: pf_lines lines prefetched into
// L2 each step. Only between amx_begin() and amx_end() on a thread, where
// amx_tiles_active().
void amx_product(int nv, AmxOperand A, AmxOperand B, int64_t steps, bool first, float* c,
                 const char* pf = nullptr, int64_t pf_lines = 0);
// Loads AmxTileConfig; amx_end() hands the tile state back (a thread that
// holds it saves 8 KiB more at every context switch).
void amx_begin();
void amx_end();

}  // namespace kiln::cpu
