// embedding front-end: checks the table, indices, row scales and out, then
// calls the op (ops/registry/nn.h), whose kernel gathers the rows (and checks
// each index against the table: IndexError).
#include "kiln/embedding.h"

#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/index.h"
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
  autograd::Record rec("embedding", {&indices, &weight, &row_scale});
  rec.no_out(out);
  autograd::wrote(out);
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

namespace {

Tensor embedding_impl(const Tensor& indices, const Tensor& weight, const Tensor& row_scale,
                      std::optional<DType> out_dtype, std::optional<int64_t> padding_idx) {
  KILN_CHECK(weight.dim() == 2, ValueError, "[embedding] weight must be [V, H], got " << weight.shape_str());
  const int64_t V = weight.size(0);
  if (padding_idx) {
    KILN_CHECK(
        *padding_idx >= -V && *padding_idx < V, ValueError,
        "[embedding] padding_idx " << *padding_idx << " is out of range for a table of " << V << " rows");
    if (*padding_idx < 0) *padding_idx += V;
  }
  autograd::Record rec("embedding", {&indices, &weight, &row_scale});
  KILN_CHECK(!rec || !row_scale.defined() || !row_scale.requires_grad(), NotImplementedError,
             "[embedding] gradients for row_scale are not implemented in kiln");
  const DType od = out_dtype.value_or(is_fp8(weight.dtype()) ? DType::Float32 : weight.dtype());
  Shape shape = indices.sizes();
  shape.push_back(weight.size(1));
  Tensor out = empty(shape, od, weight.device());
  if (out.numel() == 0) {
    // Nothing to gather: the kernel only checks the indices against the table.
    check_indices(indices);
    ops::embedding(common_device("embedding", {&indices, &weight, &out}), indices, weight, Tensor(), out);
  } else {
    embedding_out(indices, weight, row_scale, out);
  }
  // d weight: the output rows summed into the rows they were read from
  // (repeated ids accumulate); the padding row gets none.
  if (rec)
    rec.finish("EmbeddingBackward0", {&out}, {indices},
               [V, padding_idx](autograd::FnNode& n, autograd::Grads& g) {
                 autograd::Grads r(3);
                 if (!n.needs(1)) return r;
                 const Tensor idx = n.saved(0).reshape({-1});  // [R]
                 const int64_t H = g[0].size(-1);
                 const DType acc = g[0].dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
                 Tensor rows = g[0].to(acc).reshape({-1, H});  // [R, H]
                 if (padding_idx)
                   rows = where(ne(idx, Scalar(*padding_idx)).unsqueeze(-1), rows, Scalar(0.0));
                 r[1] = index_add(zeros({V, H}, acc, rows.device()), 0, idx, rows);
                 return r;
               });
  return out;
}

}  // namespace

Tensor embedding(const Tensor& indices, const Tensor& weight, const Tensor& row_scale,
                 std::optional<DType> out_dtype) {
  return embedding_impl(indices, weight, row_scale, out_dtype, std::nullopt);
}

Tensor embedding(const Tensor& indices, const Tensor& weight, int64_t padding_idx, const Tensor& row_scale,
                 std::optional<DType> out_dtype) {
  return embedding_impl(indices, weight, row_scale, out_dtype, padding_idx);
}

}  // namespace kiln
