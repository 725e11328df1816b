// An on/off kernel switch (KILN_BF16_DOT, KILN_BF16_GEMM, KILN_AMX): its
// default comes from an environment variable (on|off|1|0) or, unset, from a
// function of the CPU, chosen on first use; set() overrides it. The first use
// may be on a pool thread: a bad value is reported on stderr and ignored
// rather than thrown there.
#pragma once

#include <atomic>

namespace kiln::cpu {

class EnvSwitch {
 public:
  constexpr EnvSwitch(const char* var, bool (*cpu_default)()) : var_(var), cpu_default_(cpu_default) {}
  bool get();
  void set(bool on) { v_.store(int(on), std::memory_order_relaxed); }

 private:
  const char* var_;
  bool (*cpu_default_)();
  std::atomic<int> v_{-1};  // -1: not chosen yet
};

}  // namespace kiln::cpu
