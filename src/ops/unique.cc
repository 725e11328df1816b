// unique and unique_consecutive front-ends, flattened (sort when asked, then
// the runs of equal neighbours) and along a dim (the slices as rows, through
// unique_rows), ops/registry/sort.h.
#include <string>

#include "kiln/index.h"
#include "kiln/shape.h"
#include "kiln/sort.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

UniqueResult runs_of(const Tensor& flat, const Tensor& order, const Shape& in_shape, bool return_inverse,
                     bool return_counts) {
  const int64_t n = flat.numel();
  Tensor values = empty({n}, flat.dtype(), flat.device());
  Tensor inverse = return_inverse ? empty({n}, DType::Int64, flat.device()) : Tensor();
  Tensor counts = return_counts ? empty({n}, DType::Int64, flat.device()) : Tensor();
  const int64_t k =
      ops::unique_runs(common_device("unique", {&flat, &values}), flat, order, values, inverse, counts);
  // Copies when the runs fill less than the buffers: a narrowed view would keep all n alive.
  auto fit = [&](const Tensor& t) { return k == n ? t : t.narrow(0, 0, k).clone(); };
  UniqueResult r;
  r.values = fit(values);
  if (return_inverse) r.inverse = inverse.view(in_shape);
  if (return_counts) r.counts = fit(counts);
  return r;
}

void check_orderable(const Tensor& x, const char* op) {
  if (is_complex(x.dtype()) || is_fp8(x.dtype()))
    throw TypeError(std::string("[") + op + "] does not support " + name(x.dtype()) + " tensors");
}

// The distinct slices of x along dim: its slices as the rows of an [m, k]
// matrix, the runs found by unique_rows, the values gathered from x.
UniqueResult unique_slices(const Tensor& x, int64_t dim, bool sorted, bool return_inverse, bool return_counts,
                           const char* op) {
  check_orderable(x, op);
  KILN_CHECK(x.dim() > 0, IndexError,
             "[" << op << "] Dimension specified as " << dim << " but tensor has no dimensions");
  const int d = wrap_dim(int(dim), x.dim(), op);
  const int from[] = {d}, to[] = {0};
  const Tensor moved = movedim(x, from, to);  // [m, ...]
  const int64_t m = moved.size(0);
  const Tensor rows = moved.reshape({m, m == 0 ? 0 : moved.numel() / m}).contiguous();  // [m, k]
  const Device dev = common_device(op, {&rows});
  Tensor first = empty({m}, DType::Int64, dev);
  Tensor inverse = return_inverse ? empty({m}, DType::Int64, dev) : Tensor();
  Tensor counts = return_counts ? empty({m}, DType::Int64, dev) : Tensor();
  const int64_t u = ops::unique_rows(dev, rows, sorted, first, inverse, counts);
  UniqueResult r;
  r.values = movedim(index_select(moved, 0, first.narrow(0, 0, u)), to, from);
  if (return_inverse) r.inverse = inverse;
  if (return_counts) r.counts = u == m ? counts : counts.narrow(0, 0, u).clone();
  return r;
}

}  // namespace

UniqueResult unique(const Tensor& x, bool return_inverse, bool return_counts) {
  check_orderable(x, "unique");
  const Tensor flat = x.reshape({-1});
  if (flat.numel() == 0)
    return runs_of(flat.contiguous(), Tensor(), x.sizes(), return_inverse, return_counts);
  const SortResult s = sort(flat, 0, false, true);
  return runs_of(s.values, s.indices, x.sizes(), return_inverse, return_counts);
}

UniqueResult unique_consecutive(const Tensor& x, bool return_inverse, bool return_counts) {
  check_orderable(x, "unique_consecutive");
  return runs_of(x.reshape({-1}).contiguous(), Tensor(), x.sizes(), return_inverse, return_counts);
}

UniqueResult unique_dim(const Tensor& x, int64_t dim, bool return_inverse, bool return_counts) {
  return unique_slices(x, dim, true, return_inverse, return_counts, "unique");
}

UniqueResult unique_consecutive_dim(const Tensor& x, int64_t dim, bool return_inverse, bool return_counts) {
  return unique_slices(x, dim, false, return_inverse, return_counts, "unique_consecutive");
}

}  // namespace kiln
