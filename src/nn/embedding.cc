// embedding front-end: checks the table, indices, row scales and out, then
// calls the op (ops/registry/nn.h), whose kernel gathers the rows (and checks
// each index against the table: IndexError).
#include "kiln/nn.h"
#include "nn/nn_util.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

void check_indices(const Tensor& idx) {
  KILN_CHECK(is_integral(idx.dtype(), false), TypeError,
             "[embedding] indices must be an integer tensor, got " << name(idx.dtype()));
}

}  // namespace

void embedding_out(const Tensor& indices, const Tensor& weight, const Tensor& row_scale, const Tensor& out) {
  KILN_CHECK(weight.dim() == 2, ValueError, "[embedding] weight must be [V, H], got " << weight.shape_str());
  const DType wt = weight.dtype();
  KILN_CHECK(nn_detail::is_compute_float(wt) || is_fp8(wt), TypeError,
             "[embedding] unsupported weight dtype " << name(wt));
  const int64_t V = weight.size(0), H = weight.size(1);
  KILN_CHECK(out.numel() == indices.numel() * H && out.is_contiguous() && out.dim() >= 1 && out.size(-1) == H,
             ValueError,
             "[embedding] out " << out.shape_str() << " must be contiguous [..., " << H << "] with "
                                << indices.numel() << " rows");
  KILN_CHECK(nn_detail::is_compute_float(out.dtype()), TypeError,
             "[embedding] unsupported out dtype " << name(out.dtype()));
  Tensor scale;
  if (row_scale.defined()) {
    KILN_CHECK(
        row_scale.numel() == V, ValueError,
        "[embedding] row_scale has shape " << row_scale.shape_str() << ", expected " << V << " elements");
    scale = row_scale.to(DType::Float32).contiguous();
  }
  check_indices(indices);
  ops::embedding(common_device("embedding", {&indices, &weight, &row_scale, &out}), indices, weight, scale,
                 out);
}

Tensor embedding(const Tensor& indices, const Tensor& weight, const Tensor& row_scale,
                 std::optional<DType> out_dtype) {
  KILN_CHECK(weight.dim() == 2, ValueError, "[embedding] weight must be [V, H], got " << weight.shape_str());
  const DType od = out_dtype.value_or(is_fp8(weight.dtype()) ? DType::Float32 : weight.dtype());
  Shape shape = indices.sizes();
  shape.push_back(weight.size(1));
  Tensor out = empty(shape, od, weight.device());
  if (out.numel() == 0) {
    // Nothing to gather: the kernel only checks the indices against the table.
    check_indices(indices);
    ops::embedding(common_device("embedding", {&indices, &weight, &out}), indices, weight, Tensor(), out);
    return out;
  }
  embedding_out(indices, weight, row_scale, out);
  return out;
}

}  // namespace kiln
