// CPU kernels of gather, scatter and scatter_add (ops/registry/index.h):
// indices already validated by the front-end.
#include "cpu/ops/index_common.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
using namespace index_detail;
namespace {

// out[i][j][k] = x[i][index[i][j][k]][k] (dim = 1); out, index: [index.shape].
void gather(const Tensor& x, int dim, const Tensor& idx, const Tensor& out) {
  // base steps like x except along dim.
  Shape strides = x.stride_vec();
  strides[size_t(dim)] = 0;
  gather_kernel(out, restride(x, idx.sizes(), strides), idx, x.stride(dim));
}

// x[i][index[i][j][k]][k] (+)= src[i][j][k] (dim = 1).
void scatter_impl(const Tensor& x, int dim, const Tensor& idx, const Tensor& src, bool add, const char* op) {
  // Columns: index's shape without dim; k walks dim.
  Shape cols, xs, ss, is;
  drop_dim(idx, dim, &cols, &is);
  for (int d = 0; d < x.dim(); ++d)
    if (d != dim) xs.push_back(x.stride(d));
  for (int d = 0; d < src.dim(); ++d)
    if (d != dim) ss.push_back(src.stride(d));
  const Tensor dst_base = restride(x, cols, xs);
  const Tensor src_cols = restride(src, cols, ss);
  const Tensor idx_cols = restride(idx, cols, is);
  const int64_t K = idx.size(dim);
  const int64_t sz = int64_t(x.itemsize());
  if (add)
    scatter_accumulate(dst_base, src_cols, idx_cols, K, x.stride(dim) * sz, src.stride(dim) * sz,
                       idx.stride(dim) * 8, Scalar(int64_t(1)), op);
  else
    scatter_copy(dst_base, src_cols, idx_cols, K, x.stride(dim) * sz, src.stride(dim) * sz,
                 idx.stride(dim) * 8);
}

void scatter(const Tensor& x, int dim, const Tensor& idx, const Tensor& src) {
  scatter_impl(x, dim, idx, src, false, "scatter");
}
void scatter_add(const Tensor& x, int dim, const Tensor& idx, const Tensor& src) {
  scatter_impl(x, dim, idx, src, true, "scatter_add");
}

}  // namespace

void register_index_gather_kernels() {
  ops::gather.set_kernel(DeviceKind::CPU, gather);
  ops::scatter.set_kernel(DeviceKind::CPU, scatter);
  ops::scatter_add.set_kernel(DeviceKind::CPU, scatter_add);
}

}  // namespace kiln::cpu
