// Shared pieces of the unary op front-ends: the in-place checks and the dtype
// error messages.
#pragma once

#include <string>

#include "kiln/tensor.h"

namespace kiln::unary_detail {

[[noreturn]] inline void unsupported(const char* op, DType d) {
  throw TypeError(std::string("[") + op + "] unsupported dtype " + name(d));
}

// For op_(x): the result dtype must be x's (torch: "result type Float can't be
// cast to the desired output type Long"), and x must not write one memory
// location through two indices (an expanded view).
inline void check_inplace(const char* op, DType result, const Tensor& x) {
  if (result != x.dtype())
    throw TypeError(std::string("[") + op + "] result type " + name(result) +
                    " can't be cast to the desired output type " + name(x.dtype()));
  assert_no_internal_overlap(x, op);
}

// TypeError "[op] unsupported dtype X" unless d is in `set` (the message of
// dispatch, which the kernels no longer reach with a dtype they do not take).
inline void check_dtype(const char* op, DType d, DTypeSet set) {
  if (!(set & bit(d))) unsupported(op, d);
}

}  // namespace kiln::unary_detail
