// The float32 SwiGLU kernel under its former name, for the MoE FFN, which
// calls it on raw rows: it lives in cpu/swiglu.h.
#pragma once

#include "cpu/swiglu.h"

namespace kiln::nn_detail {

using cpu::swiglu_f32;

}  // namespace kiln::nn_detail
