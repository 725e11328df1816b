// Defines the Op objects declared in ops/registry/all.h and in the family
// headers joined here (their lists follow KILN_OPS in KILN_ALL_OPS).
#include "ops/registry/all.h"
#include "ops/registry/binary_extra.h"
#include "ops/registry/unary_extra.h"

#define KILN_ALL_OPS(X) \
  KILN_OPS(X)           \
  KILN_OPS_UNARY_EXTRA(X) \
  KILN_OPS_BINARY_EXTRA(X)

namespace kiln::ops {

#define KILN_DEFINE_OP(name, sig) Op<sig> name(#name);
KILN_ALL_OPS(KILN_DEFINE_OP)
#undef KILN_DEFINE_OP

std::span<const OpInfo> all_ops() {
#define KILN_OP_INFO(name, sig)                                 \
  {#name, [](DeviceKind k) { return name.has_kernel(k); },      \
   [](DeviceKind to, DeviceKind from) { name.set_kernel(to, name.kernel(from)); }, \
   [](DeviceKind k) { name.set_kernel(k, nullptr); }},
  static const OpInfo table[] = {KILN_ALL_OPS(KILN_OP_INFO)};
#undef KILN_OP_INFO
  return table;
}

}  // namespace kiln::ops
