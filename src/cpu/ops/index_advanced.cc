// CPU kernels of Python-style advanced indexing (ops/registry/index.h): the
// indices fold into one int64 tensor of element offsets into the view, "off",
// of the broadcast index shape B (wrapping negatives and checking the range in
// the same pass). Then
//   x[idx]          = gather_kernel over the result shape (off adds to a base view)
//   x[idx] (+)= v   = scatter_columns over the non-indexed dims, k walking B.
#include "cpu/ops/index_common.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
using namespace index_detail;
namespace {

// The advanced indices folded into offsets, and the view's other dims.
struct Layout {
  Shape B;                         // broadcast index shape
  Tensor off;                      // int64 [B], contiguous: element offsets into the view
  Shape rest_shape, rest_strides;  // non-indexed dims of the view, in order
};

Layout make_layout(const Tensor& v, std::span<const ops::AdvancedIndex> adv, const char* op) {
  Layout l;
  l.B = adv[0].index.sizes();
  l.off = zeros(l.B, DType::Int64);
  for (const auto& a : adv) add_wrapped_offsets(l.off, a.index, v.size(a.dim), v.stride(a.dim), op, a.dim);
  std::vector<bool> indexed(size_t(v.dim()), false);
  for (const auto& a : adv) indexed[size_t(a.dim)] = true;
  for (int d = 0; d < v.dim(); ++d) {
    if (indexed[size_t(d)]) continue;
    l.rest_shape.push_back(v.size(d));
    l.rest_strides.push_back(v.stride(d));
  }
  return l;
}

// Inserts `ins` at position pos of v.
Shape insert_at(Shape v, int pos, const Shape& ins) {
  v.insert(v.begin() + pos, ins.begin(), ins.end());
  return v;
}

// The stride that walks B's dims of t (laid out at [pos, pos + nb) of t's
// shape) as one flat dim, or false when they do not merge.
bool flat_b_stride(const Tensor& t, int pos, int nb, int64_t* stride) {
  int64_t expect = -1;
  *stride = 0;
  for (int d = pos + nb - 1; d >= pos; --d) {
    if (t.size(d) == 1) continue;
    if (expect < 0) {
      *stride = t.stride(d);
    } else if (t.stride(d) != expect) {
      return false;
    }
    expect = t.stride(d) * t.size(d);
  }
  return true;
}

// out = view[adv]: out is [rest[:b_pos], B, rest[b_pos:]].
void index(const Tensor& v, std::span<const ops::AdvancedIndex> adv, int b_pos, const Tensor& out) {
  const Layout l = make_layout(v, adv, "index");
  if (out.numel() == 0) return;
  const int nb = int(l.B.size());
  // base: the view's non-indexed strides, 0 along B; off: 0 along the rest.
  const Tensor base = restride(v, out.sizes(), insert_at(l.rest_strides, b_pos, Shape(size_t(nb), 0)));
  const Tensor offv =
      restride(l.off, out.sizes(), insert_at(Shape(l.rest_shape.size(), 0), b_pos, l.off.stride_vec()));
  gather_kernel(out, base, offv, 1);
}

// view[adv] (+)= value.
void index_put(const Tensor& v, std::span<const ops::AdvancedIndex> adv, int b_pos, const Tensor& value_in,
               bool accumulate) {
  const char* op = "index_put_";
  if (adv.empty()) {
    // view += value as one column per element, k = 0 only.
    const Tensor zero = zeros({}, DType::Int64);
    scatter_accumulate(v, value_in, restride(zero, v.sizes(), Shape(size_t(v.dim()), 0)), 1, 0, 0, 0,
                       Scalar(int64_t(1)), op);
    return;
  }
  const Layout l = make_layout(v, adv, op);
  const int64_t K = l.off.numel();
  const int nb = int(l.B.size());
  if (K == 0 || shape_numel(l.rest_shape, op) == 0) return;
  Tensor value = value_in;
  int64_t val_k_stride = 0;
  if (!flat_b_stride(value, b_pos, nb, &val_k_stride)) {
    value = value.contiguous();
    flat_b_stride(value, b_pos, nb, &val_k_stride);
  }
  Shape val_rest;
  for (int d = 0; d < value.dim(); ++d)
    if (d < b_pos || d >= b_pos + nb) val_rest.push_back(value.stride(d));
  // Columns: the non-indexed dims; k walks B (flattened) in row-major order.
  const Tensor dst = restride(v, l.rest_shape, l.rest_strides);
  const Tensor src = restride(value, l.rest_shape, val_rest);
  const Tensor offc = restride(l.off, l.rest_shape, Shape(l.rest_shape.size(), 0));
  const int64_t sz = int64_t(v.itemsize());
  if (accumulate)
    scatter_accumulate(dst, src, offc, K, sz, val_k_stride * sz, 8, Scalar(int64_t(1)), op);
  else
    scatter_copy(dst, src, offc, K, sz, val_k_stride * sz, 8);
}

}  // namespace

void register_index_advanced_kernels() {
  ops::index.set_kernel(DeviceKind::CPU, index);
  ops::index_put.set_kernel(DeviceKind::CPU, index_put);
}

}  // namespace kiln::cpu
