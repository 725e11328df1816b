// Defines the Op objects declared in ops/registry/all.h.
#include "ops/registry/all.h"

namespace kiln::ops {

#define KILN_DEFINE_OP(name, sig) Op<sig> name(#name);
KILN_OPS(KILN_DEFINE_OP)
#undef KILN_DEFINE_OP

std::span<const OpInfo> all_ops() {
#define KILN_OP_INFO(name, sig)                                 \
  {#name, [](DeviceKind k) { return name.has_kernel(k); },      \
   [](DeviceKind to, DeviceKind from) { name.set_kernel(to, name.kernel(from)); }, \
   [](DeviceKind k) { name.set_kernel(k, nullptr); },              \
   [] { detail::ensure_backends_registered(); return name.nondifferentiable; }},
  static const OpInfo table[] = {KILN_OPS(KILN_OP_INFO)};
#undef KILN_OP_INFO
  return table;
}

}  // namespace kiln::ops
