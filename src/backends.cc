// The one place that names the compiled backends: each fills the kernel slots
// of the registered ops (ops/registry/all.h) once, before the first op runs.
#include <mutex>

#include "core/op.h"
#include "cpu/ops/register.h"
#include "ops/registry/all.h"

namespace kiln::detail {

std::atomic<bool> backends_registered{false};

void register_backends_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    cpu::register_kernels();
    ops::mark_nondifferentiable();
    backends_registered.store(true, std::memory_order_release);
  });
}

}  // namespace kiln::detail
