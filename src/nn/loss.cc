// mse_loss: mean / sum / none of (input - target)^2, composed from the
// broadcasting elementwise ops and reductions (promotion as torch).
#include "kiln/binary.h"
#include "kiln/nn.h"
#include "kiln/reduce.h"
#include "nn/nn_util.h"

namespace kiln {

Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  KILN_CHECK(reduction == "mean" || reduction == "sum" || reduction == "none", ValueError,
             "[mse_loss] reduction must be 'mean', 'sum' or 'none', got '" << reduction << "'");
  KILN_CHECK(is_floating(input.dtype()) && !is_fp8(input.dtype()), TypeError,
             "[mse_loss] input must be floating point, got " << name(input.dtype()));
  const Tensor d = sub(input, target);
  const Tensor sq = mul(d, d);
  if (reduction == "none") return sq;
  return reduction == "sum" ? sum(sq) : mean(sq);
}

}  // namespace kiln
