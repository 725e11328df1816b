// take and put_: x seen as 1-D in row-major order, negative indices wrap (the
// kernels check the range as they compute offsets; ops/registry/index.h).
#include "kiln/index.h"
#include "ops/index_common.h"
#include "ops/registry/all.h"

namespace kiln {
using namespace index_detail;

Tensor take(const Tensor& x, const Tensor& index) {
  const Tensor idx = index_to_int64(index, "take");
  Tensor out = empty(idx.sizes(), x.dtype(), x.device());
  if (out.numel() == 0) return out;
  ops::take(common_device("take", {&x, &idx, &out}), x, idx, out);
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
  if (idx.numel() == 0) return x;
  Tensor src = source.reshape({-1});
  if (src.storage() == x.storage()) src = src.clone();
  ops::put(common_device("put_", {&x, &idx, &src}), x, idx, src, accumulate);
  return x;
}

Tensor put(const Tensor& x, const Tensor& index, const Tensor& source, bool accumulate) {
  Tensor out = x.clone();
  return put_(out, index, source, accumulate);
}

}  // namespace kiln
