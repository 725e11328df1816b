#include "cpu/amx.h"

#include "cpu/env_switch.h"
#include "cpu/gemv.h"  // dispatch_runs_avx3

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define KILN_AMX_LINUX_X86 1
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

}  // namespace kiln::cpu
