// CPU kernels of take and put (ops/registry/index.h): x seen as 1-D in
// row-major order; the offset pass wraps negative indices and checks their
// range before anything is written.
#include "cpu/ops/index_common.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
using namespace index_detail;
namespace {

// Element offsets into x (relative to x.data_ptr()) of the flat indices idx:
// int64, idx's shape. Validates (IndexError) before anything else happens.
Tensor flat_offsets(const Tensor& x, const Tensor& idx, const char* op) {
  Tensor off = zeros(idx.sizes(), DType::Int64);
  add_wrapped_offsets(off, idx, x.numel(), 1, op, 0);
  if (!x.is_contiguous() && off.numel() > 0) {
    // Row-major linear index -> strided offset.
    int64_t* o = off.data<int64_t>();
    const int nd = x.dim();
    const Shape sh = x.sizes(), st = x.stride_vec();
    parallel_for(0, off.numel(), 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        int64_t lin = o[i], r = 0;
        for (int d = nd - 1; d >= 0; --d) {
          r += (lin % sh[d]) * st[d];
          lin /= sh[d];
        }
        o[i] = r;
      }
    });
  }
  return off;
}

// out: [*I] = x.flatten()[idx].
void take(const Tensor& x, const Tensor& idx, const Tensor& out) {
  const Tensor off = flat_offsets(x, idx, "take");
  gather_kernel(out, restride(x, idx.sizes(), Shape(idx.dim(), 0)), off, 1);
}

// x.flatten()[idx] (+)= src, src: [numel(idx)].
void put(const Tensor& x, const Tensor& idx, const Tensor& src, bool accumulate) {
  const Tensor off = flat_offsets(x, idx, "put_").reshape({-1});
  // One column, k walks the index in order: duplicates sum or the last one wins.
  const Tensor dst0 = restride(x, {}, {}), src0 = restride(src, {}, {}), off0 = restride(off, {}, {});
  const int64_t sz = int64_t(x.itemsize());
  if (accumulate)
    scatter_accumulate(dst0, src0, off0, off.numel(), sz, src.stride(0) * sz, 8, Scalar(int64_t(1)), "put_");
  else
    scatter_copy(dst0, src0, off0, off.numel(), sz, src.stride(0) * sz, 8);
}

}  // namespace

void register_index_take_kernels() {
  ops::take.set_kernel(DeviceKind::CPU, take);
  ops::put.set_kernel(DeviceKind::CPU, put);
}

}  // namespace kiln::cpu
