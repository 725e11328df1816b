// The registry's error paths (kept out of line so Op::operator() stays small).
#include "core/op.h"

namespace kiln::detail {

void throw_no_kernel(const char* op, Device d) {
  throw NotImplementedError(std::string("[") + op + "] has no kernel for device " + d.str() +
                            " in this build");
}

}  // namespace kiln::detail
