// out= for functions that compute a new tensor (the composites and kiln.fft):
// `result`, what the functional form returned, written into `out`, which must
// have its shape (ValueError) and dtype (TypeError), as kiln's out= forms
// require everywhere (torch would resize a wrongly shaped out). Raises torch's
// error when `result` carries a gradient history.
#pragma once

#include "kiln/tensor.h"

namespace kiln {

void write_out(const char* op, const Tensor& result, const Tensor& out);

}  // namespace kiln
