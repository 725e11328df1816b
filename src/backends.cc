// The one place that names the compiled backends: each fills the kernel slots
// of the registered ops (ops/registry/all.h) once, before the first op runs.
#include "cpu/ops/register.h"
#include "core/op.h"

namespace kiln::detail {

void ensure_backends_registered() {
  // A function-local static: thread-safe once, then a plain load per call.
  static const bool done = [] {
    cpu::register_kernels();
    return true;
  }();
  (void)done;
}

}  // namespace kiln::detail
