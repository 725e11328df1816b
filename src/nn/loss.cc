// mse_loss: mean / sum / none of (input - target)^2, composed from the
// broadcasting elementwise ops and reductions (promotion as torch).
#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/nn.h"
#include "kiln/reduce.h"
#include "kiln/unary.h"
#include "nn/nn_util.h"

namespace kiln {

Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  KILN_CHECK(reduction == "mean" || reduction == "sum" || reduction == "none", ValueError,
             "[mse_loss] reduction must be 'mean', 'sum' or 'none', got '" << reduction << "'");
  KILN_CHECK(is_floating(input.dtype()) && !is_fp8(input.dtype()), TypeError,
             "[mse_loss] input must be floating point, got " << name(input.dtype()));
  autograd::Record rec("mse_loss", {&input, &target});
  const Tensor d = sub(input, target);
  const Tensor sq = mul(d, d);
  Tensor out = reduction == "none" ? sq : reduction == "sum" ? sum(sq) : mean(sq);
  if (rec)  // d/d input = 2 (input - target) * grad (/ numel for "mean"); d/d target its negation
    rec.finish("MseLossBackward0", {&out}, {input, target},
               [reduction, n = sq.numel()](autograd::FnNode& nd, autograd::Grads& g) {
                 Tensor gd = mul(mul(sub(nd.saved(0), nd.saved(1)), g[0]), Scalar(2.0));
                 if (reduction == "mean") gd = div(gd, Scalar(double(n)));
                 return autograd::Grads{nd.needs(0) ? gd : Tensor(), nd.needs(1) ? neg(gd) : Tensor()};
               });
  return out;
}

}  // namespace kiln
