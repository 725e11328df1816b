// The registry's error paths (kept out of line so Op::operator() stays small).
#include "ops/registry/op.h"

namespace kiln::detail {

void throw_no_kernel(const char* op, Device d) {
  throw NotImplementedError(std::string("[") + op + "] has no kernel for device " + d.str() +
                            " in this build");
}

void throw_device_mismatch(const char* op, Device a, Device b) {
  throw Error(std::string("[") + op + "] expected all tensors on the same device, got " + a.str() + " and " +
              b.str());
}

}  // namespace kiln::detail
