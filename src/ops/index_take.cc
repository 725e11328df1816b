// take and put_: x seen as 1-D in row-major order, negative indices wrap.
#include "kiln/index.h"
#include "ops/index_common.h"

namespace kiln {
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

}  // namespace

Tensor take(const Tensor& x, const Tensor& index) {
  const Tensor idx = index_to_int64(index, "take");
  const Tensor off = flat_offsets(x, idx, "take");
  Tensor out = empty(idx.sizes(), x.dtype());
  if (out.numel() == 0) return out;
  gather_kernel(out, restride(x, idx.sizes(), Shape(idx.dim(), 0)), off, 1);
  return out;
}

Tensor& put_(Tensor& x, const Tensor& index, const Tensor& source, bool accumulate) {
  assert_no_internal_overlap(x, "put_");
  const Tensor idx = index_to_int64(index, "put_");
  if (source.dtype() != x.dtype())
    throw TypeError(std::string("[put_] self and source expected to have the same dtype, got ") +
                    name(x.dtype()) + " and " + name(source.dtype()));
  if (source.numel() != idx.numel())
    throw ValueError("[put_] expected source " + source.shape_str() + " and index " + idx.shape_str() +
                     " to have the same number of elements");
  const Tensor off = flat_offsets(x, idx, "put_").reshape({-1});
  if (off.numel() == 0) return x;
  Tensor src = source.reshape({-1});
  if (src.storage() == x.storage()) src = src.clone();
  // One column, k walks the index in order: duplicates sum or the last one wins.
  const Tensor dst0 = restride(x, {}, {}), src0 = restride(src, {}, {}), off0 = restride(off, {}, {});
  const int64_t sz = int64_t(x.itemsize());
  if (accumulate)
    scatter_accumulate(dst0, src0, off0, off.numel(), sz, src.stride(0) * sz, 8, Scalar(int64_t(1)), "put_");
  else
    scatter_copy(dst0, src0, off0, off.numel(), sz, src.stride(0) * sz, 8);
  return x;
}

Tensor put(const Tensor& x, const Tensor& index, const Tensor& source, bool accumulate) {
  Tensor out = x.clone();
  return put_(out, index, source, accumulate);
}

}  // namespace kiln
