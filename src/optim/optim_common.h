// Argument checks and the element access shared by the fused optimizer steps.
#pragma once

#include <string>

#include "core/autograd_record.h"
#include "kiln/error.h"
#include "kiln/float_types.h"
#include "kiln/optim.h"

namespace kiln::optim::detail {

inline void check_param(const char* op, const Tensor& p) {
  if (!p.defined()) throw ValueError(std::string("[") + op + "] param is undefined");
  if (p.dtype() != DType::Float32 && p.dtype() != DType::BFloat16)
    throw TypeError(std::string("[") + op + "] param must be float32 or bfloat16, got " + name(p.dtype()));
  if (!p.is_contiguous())
    throw ValueError(std::string("[") + op + "] param of shape " + shape_to_string(p.sizes()) +
                     " must be contiguous");
}

// A float32 state tensor of param's shape, contiguous.
inline void check_state(const char* op, const char* what, const Tensor& p, const Tensor& s) {
  if (!s.defined()) throw ValueError(std::string("[") + op + "] " + what + " is undefined");
  if (s.dtype() != DType::Float32)
    throw TypeError(std::string("[") + op + "] " + what + " must be float32, got " + name(s.dtype()));
  if (s.sizes() != p.sizes() || !s.is_contiguous())
    throw ValueError(std::string("[") + op + "] " + what + " of shape " + shape_to_string(s.sizes()) +
                     " must be contiguous with param's shape " + shape_to_string(p.sizes()));
}

// grad as a contiguous float32 tensor of param's shape (grad itself when it already is).
inline Tensor grad_f32(const char* op, const Tensor& p, const Tensor& g) {
  if (!g.defined()) throw ValueError(std::string("[") + op + "] grad is undefined");
  if (g.sizes() != p.sizes())
    throw ValueError(std::string("[") + op + "] grad of shape " + shape_to_string(g.sizes()) +
                     " does not match param's shape " + shape_to_string(p.sizes()));
  if (!is_floating(g.dtype()))
    throw TypeError(std::string("[") + op + "] grad must be a float tensor, got " + name(g.dtype()));
  return g.to(DType::Float32).contiguous();
}

// Runs body(load, store) over param's elements, where load(i) reads element i as
// float and store(i, v) writes it back in param's dtype.
template <typename F>
void for_param(Tensor& p, F&& body) {
  if (p.dtype() == DType::Float32) {
    float* d = p.data<float>();
    body([d](int64_t i) { return d[i]; }, [d](int64_t i, float v) { d[i] = v; });
  } else {
    bfloat16* d = p.data<bfloat16>();
    body([d](int64_t i) { return float(d[i]); }, [d](int64_t i, float v) { d[i] = bfloat16(v); });
  }
  autograd::wrote(p);
}

}  // namespace kiln::optim::detail
