// unique (flattened) and unique_consecutive front-ends: sort when asked,
// then the runs of equal neighbours (ops/registry/sort.h) in one pass.
#include <string>

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

}  // namespace kiln
