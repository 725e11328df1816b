#include "cpu/amx.h"

#include "cpu/env_switch.h"
#include "cpu/gemv.h"  // dispatch_runs_avx3
#include "kiln/error.h"

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define KILN_AMX_LINUX_X86 1
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define KILN_AMX_X86 1
#define KILN_AMX_TARGET __attribute__((target("avx512f,amx-tile,amx-bf16")))
#endif

namespace kiln::cpu {

namespace {

#ifdef KILN_AMX_LINUX_X86
bool cpu_has_amx_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool bf16 = (d >> 22) & 1u, tile = (d >> 24) & 1u;
  return bf16 && tile;
}

// Linux 5.16+: the tile data state (XFEATURE_XTILEDATA, 18) is granted per
// process on request; without it the first tile instruction faults.
bool kernel_grants_tile_state() {
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}
#endif

bool cpu_default_amx_tiles() { return true; }  // (used only where usable)
EnvSwitch g_amx_tiles("KILN_AMX", cpu_default_amx_tiles);

}  // namespace

bool amx_bf16_usable() {
#ifdef KILN_AMX_LINUX_X86
  static const bool usable = cpu_has_amx_bf16() && dispatch_runs_avx3() && kernel_grants_tile_state();
  return usable;
#else
  return false;
#endif
}

bool amx_tiles() { return g_amx_tiles.get(); }

void set_amx_tiles(bool on) { g_amx_tiles.set(on); }

bool amx_tiles_active() { return amx_bf16_usable() && amx_tiles(); }

#ifdef KILN_AMX_X86
namespace {

// c[32][NR] (+)= A[32][k] . B[k][NR] over `steps` steps of 32 k on AMX
// (AmxTileConfig: tiles 0-3 hold float32 sums of 16 x 16, 4-5 A's two
// tiles, 6-7 B's; NR = 16 reads B's first tile only). tdpbf16ps multiplies
// a 16 x 32 bf16 tile of A by a 16-pair x 16-column tile of B pairs and adds
// each pair of products into the float32 sums, as vdpbf16ps does: 16 x 16 x
// 32 multiply-adds an instruction.
template <int NV>
KILN_AMX_TARGET inline void micro_amx(AmxOperand A, AmxOperand B, int64_t steps, bool first,
                                      float* __restrict tile, const char* pf = nullptr,
                                      int64_t pf_lines = 0) {
  constexpr int64_t NR = NV * 16;
  constexpr int64_t ldc = NR * 4;
  float* c10 = tile + 16 * NR;  // A's rows 16..31
  if (first) {
    _tile_zero(0);
    _tile_zero(2);
    if constexpr (NV == 2) {
      _tile_zero(1);
      _tile_zero(3);
    }
  } else {
    _tile_loadd(0, tile, ldc);
    _tile_loadd(2, c10, ldc);
    if constexpr (NV == 2) {
      _tile_loadd(1, tile + 16, ldc);
      _tile_loadd(3, c10 + 16, ldc);
    }
  }
  const char *a = A.p, *b = B.p;
  for (int64_t s = 0; s < steps; ++s, a += A.step, b += B.step) {
    for (int64_t l = 0; l < pf_lines; ++l) _mm_prefetch(pf + l * 64, _MM_HINT_T1);
    pf += pf_lines * 64;
    _tile_loadd(4, a, A.stride);
    _tile_loadd(6, b, B.stride);
    _tile_dpbf16ps(0, 4, 6);
    _tile_loadd(5, a + A.second, A.stride);
    _tile_dpbf16ps(2, 5, 6);
    if constexpr (NV == 2) {
      _tile_loadd(7, b + B.second, B.stride);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, tile, ldc);
  _tile_stored(2, c10, ldc);
  if constexpr (NV == 2) {
    _tile_stored(1, tile + 16, ldc);
    _tile_stored(3, c10 + 16, ldc);
  }
}

}  // namespace

KILN_AMX_TARGET void amx_product(int nv, AmxOperand A, AmxOperand B, int64_t steps, bool first, float* c,
                                 const char* pf, int64_t pf_lines) {
  if (nv == 2)
    micro_amx<2>(A, B, steps, first, c, pf, pf_lines);
  else
    micro_amx<1>(A, B, steps, first, c, pf, pf_lines);
}

KILN_AMX_TARGET void amx_begin() {
  static const AmxTileConfig config;
  _tile_loadconfig(&config);
}
KILN_AMX_TARGET void amx_end() { _tile_release(); }

#else
void amx_product(int, AmxOperand, AmxOperand, int64_t, bool, float*, const char*, int64_t) {
  KILN_CHECK(false, NotImplementedError, "[amx] AMX tiles are not built for this CPU");
}
void amx_begin() { KILN_CHECK(false, NotImplementedError, "[amx] AMX tiles are not built for this CPU"); }
void amx_end() {}
#endif

}  // namespace kiln::cpu
