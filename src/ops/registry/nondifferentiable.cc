// The registered ops whose outputs carry no gradient: comparisons and
// predicates (bool), integer and index results, samplers and factories. Their
// kernels may see inputs that require grad; every other op's front-end records
// its derivative (core/autograd_record.h), or its kernel raises when it meets
// an input that requires grad with grad mode on (core/op.h).
#include "ops/registry/all.h"

namespace kiln::ops {

void mark_nondifferentiable() {
  for (bool* flag :
       {// comparisons and predicates
        &eq.nondifferentiable, &ne.nondifferentiable, &lt.nondifferentiable, &le.nondifferentiable,
        &gt.nondifferentiable, &ge.nondifferentiable, &isclose.nondifferentiable, &isnan.nondifferentiable,
        &isinf.nondifferentiable, &isfinite.nondifferentiable, &isposinf.nondifferentiable,
        &isneginf.nondifferentiable, &isreal.nondifferentiable, &signbit.nondifferentiable,
        &fp8_has_nan_code.nondifferentiable, &fp8_find_subnormals.nondifferentiable, &all.nondifferentiable,
        &any.nondifferentiable, &count_nonzero.nondifferentiable,
        // logical and bitwise (bool and integer results)
        &logical_and.nondifferentiable, &logical_or.nondifferentiable, &logical_xor.nondifferentiable,
        &logical_not.nondifferentiable, &bitwise_and.nondifferentiable, &bitwise_or.nondifferentiable,
        &bitwise_xor.nondifferentiable, &bitwise_not.nondifferentiable, &bitwise_left_shift.nondifferentiable,
        &bitwise_right_shift.nondifferentiable, &gcd.nondifferentiable, &lcm.nondifferentiable,
        // indices and integer results
        &argmax.nondifferentiable, &argmin.nondifferentiable, &argsort.nondifferentiable,
        &nonzero.nondifferentiable, &bincount.nondifferentiable, &searchsorted.nondifferentiable,
        &unique_runs.nondifferentiable, &unique_rows.nondifferentiable, &moe_route.nondifferentiable,
        &linalg_matrix_rank.nondifferentiable,
        // torch marks both inputs of the Laguerre polynomial non_differentiable
        &special_laguerre_polynomial_l.nondifferentiable,
        // samplers, quantization to FP8 (an FP8 result carries no gradient)
        &sample.nondifferentiable, &sample_row.nondifferentiable, &logits_max.nondifferentiable,
        &quantize_fp8.nondifferentiable,
        // factories (no tensor inputs that could require grad, listed for completeness)
        &arange.nondifferentiable, &linspace.nondifferentiable, &logspace.nondifferentiable,
        &rand.nondifferentiable, &randn.nondifferentiable, &randint.nondifferentiable,
        &rope_inv_freq.nondifferentiable, &rope_cos_sin.nondifferentiable})
    *flag = true;
}

}  // namespace kiln::ops
