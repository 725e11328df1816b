// Autograd for the binary front-ends: one wrapper records a binary op given
// its formula, and handles out= (refused while recording, as torch) and the
// in-place forms (recorded out of place, then written back). Used by
// binary_*.cc; see core/autograd_record.h for the recording rules.
#pragma once

#include <functional>

#include "core/autograd_record.h"
#include "ops/binary_common.h"

namespace kiln::bin {

// What a binary formula sees: the incoming gradient, the operands it asked to
// save (a Python-number operand arrives as a 0-dim tensor), the result if
// saved, and which operands need a gradient.
struct GradArgs {
  autograd::FnNode& node;
  const Tensor& g;
  Tensor a, b, result;
  bool needs_a() const { return node.needs(0); }
  bool needs_b() const { return node.needs(1); }
};

struct GradSpec {
  const char* node;  // torch's node name, e.g. "MulBackward0"
  bool save_a = false, save_b = false, save_result = false;
  // Returns {grad a, grad b} (undefined where not needed) in the broadcast
  // shape; the engine sums them to each operand's shape.
  std::function<autograd::Grads(const GradArgs&)> formula;
  // The formula is right for complex operands too (conjugate Wirtinger, as
  // torch); otherwise a complex result raises rather than give a wrong gradient.
  bool complex_ok = false;
};

using Impl = std::function<Tensor(In a, In b, const Tensor& out, const Tensor* self)>;

// Runs impl(a, b, out, self) and records spec's node when an operand requires
// grad (spec null: the op has no derivative, so that raises).
Tensor run_recorded(const char* op, const GradSpec* spec, In a, In b, const Tensor& out, const Tensor* self,
                    const Impl& impl);

// conj(t) for a complex t, else t itself (no copy).
Tensor conj_if_complex(const Tensor& t);

// pow's gradients (torch's pow_backward_self / pow_backward_exponent) for base
// a and exponent b, reading x.g and x.result; shared by pow and float_power.
autograd::Grads pow_grads(const GradArgs& x, const Tensor& a, const Tensor& b);

}  // namespace kiln::bin
