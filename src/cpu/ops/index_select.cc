// CPU kernels of index_select and index_add (ops/registry/index.h): a 1-D
// index along one dim, already validated by the front-end.
#include "cpu/ops/index_common.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
using namespace index_detail;
namespace {

// out: x's shape with size(dim) = K; out.select(dim, k) = x.select(dim, idx[k]).
void index_select(const Tensor& x, int dim, const Tensor& idx, const Tensor& out) {
  const Shape out_shape = out.sizes();
  Shape base_strides = x.stride_vec(), idx_strides(out_shape.size(), 0);
  base_strides[size_t(dim)] = 0;
  idx_strides[size_t(dim)] = idx.stride(0);
  gather_kernel(out, restride(x, out_shape, base_strides), restride(idx, out_shape, idx_strides),
                x.stride(dim));
}

// x.select(dim, idx[k]) += alpha * source.select(dim, k).
void index_add(const Tensor& x, int dim, const Tensor& idx, const Tensor& source, const Scalar& alpha) {
  // Columns: source's shape without dim; k walks index.
  Shape cols, xs, ss;
  drop_dim(x, dim, &cols, &xs);
  cols.clear();
  drop_dim(source, dim, &cols, &ss);
  const int64_t sz = int64_t(x.itemsize());
  scatter_accumulate(restride(x, cols, xs), restride(source, cols, ss),
                     restride(idx, cols, Shape(cols.size(), 0)), idx.numel(), x.stride(dim) * sz,
                     source.stride(dim) * sz, idx.stride(0) * 8, alpha, "index_add");
}

}  // namespace

void register_index_select_kernels() {
  ops::index_select.set_kernel(DeviceKind::CPU, index_select);
  ops::index_add.set_kernel(DeviceKind::CPU, index_add);
}

}  // namespace kiln::cpu
