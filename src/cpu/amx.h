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

}  // namespace kiln::cpu
