// take and put_: x seen as 1-D in row-major order, negative indices wrap (the
// kernels check the range as they compute offsets; ops/registry/index.h).
#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/index.h"
#include "ops/index_common.h"
#include "ops/registry/all.h"

namespace kiln {
using namespace index_detail;

namespace {

Tensor take_impl(const Tensor& x, const Tensor& index) {
  const Tensor idx = index_to_int64(index, "take");
  Tensor out = empty(idx.sizes(), x.dtype(), x.device());
  if (out.numel() == 0) return out;
  ops::take(common_device("take", {&x, &idx, &out}), x, idx, out);
  return out;
}

Tensor& put_impl(Tensor& x, const Tensor& index, const Tensor& source, bool accumulate) {
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

}  // namespace

Tensor take(const Tensor& x, const Tensor& index) {
  autograd::Record rec("take", {&x, &index});
  Tensor out = take_impl(x, index);
  if (rec)  // x's gradient: g added back at the taken places (repeats sum)
    rec.finish("TakeBackward0", {&out}, {index}, [sh = x.sizes()](autograd::FnNode& n, autograd::Grads& g) {
      return autograd::Grads{put(zeros(sh, g[0].dtype(), g[0].device()), n.saved(0), g[0], true), Tensor()};
    });
  return out;
}

Tensor& put_(Tensor& x, const Tensor& index, const Tensor& source, bool accumulate) {
  if (autograd::inplace_needs_grad("put_", x, {&source})) {
    autograd::rebase_inplace(x, put(x, index, source, accumulate));
    return x;
  }
  return put_impl(x, index, source, accumulate);
}

// self's gradient is g (with the written places zeroed unless accumulating);
// source's is g taken at the indexed places.
Tensor put(const Tensor& x, const Tensor& index, const Tensor& source, bool accumulate) {
  autograd::Record rec("put", {&x, &index, &source});
  Tensor out = x.clone();
  put_impl(out, index, source, accumulate);
  if (rec)
    rec.finish(
        "PutBackward0", {&out}, {index},
        [accumulate, sh = source.sizes()](autograd::FnNode& n, autograd::Grads& g) {
          autograd::Grads r(3);
          const Tensor index = n.saved(0);
          if (n.needs(0))
            r[0] = accumulate ? g[0] : put(g[0], index, zeros(index.sizes(), g[0].dtype(), g[0].device()));
          if (n.needs(2)) {
            Tensor gs = take(g[0], index);
            if (!accumulate) {
              // A repeated index keeps the last write: the overwritten
              // source elements get no gradient.
              const Tensor pos = arange(Scalar(int64_t(0)), Scalar(index.numel()), Scalar(int64_t(1)),
                                        DType::Int64, g[0].device())
                                     .reshape(index.sizes());
              const Tensor written =
                  put(full(g[0].sizes(), Scalar(int64_t(-1)), DType::Int64, g[0].device()), index, pos);
              gs = masked_fill(gs, ne(take(written, index), pos), Scalar(0.0));
            }
            r[2] = gs.reshape(sh);
          }
          return r;
        });
  return out;
}

}  // namespace kiln
