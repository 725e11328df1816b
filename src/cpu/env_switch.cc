#include "cpu/env_switch.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace kiln::cpu {

bool EnvSwitch::get() {
  int v = v_.load(std::memory_order_relaxed);
  if (v >= 0) return v != 0;
  v = -1;
  if (const char* e = std::getenv(var_)) {
    const std::string s = e;
    if (s == "1" || s == "on") v = 1;
    if (s == "0" || s == "off") v = 0;
    if (v < 0)
      std::fprintf(stderr, "kiln: warning: %s must be on or off, not '%s'; ignored\n", var_, s.c_str());
  }
  if (v < 0) v = int(cpu_default_());
  v_.store(v, std::memory_order_relaxed);
  return v != 0;
}

}  // namespace kiln::cpu
