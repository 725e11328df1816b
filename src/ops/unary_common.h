// Shared pieces of the unary op front-ends: output allocation, the in-place
// checks, and the dtype error messages.
#pragma once

#include <string>

#include "kiln/tensor.h"
#include "ops/elementwise.h"

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

// A new tensor of `dtype` and x's shape holding f(x[i]) (In/Out storage types).
template <typename Out, typename In, typename F>
Tensor apply(const Tensor& x, DType dtype, F f) {
  Tensor out = empty(x.sizes(), dtype);
  unary_loop<Out, In>(out, x, f);
  return out;
}

}  // namespace kiln::unary_detail
