// View ops beyond Tensor's own (diagonal, movedim, broadcast_to/tensors,
// unflatten) and the compositions over them (diag, diag_embed, diagflat,
// trace): no kernel of their own.
#include <algorithm>
#include <string>
#include <vector>

#include "core/autograd_record.h"
#include "kiln/error.h"
#include "kiln/reduce.h"
#include "kiln/shape.h"

namespace kiln {

namespace {

// Zeros of `shape` with g on the diagonal (offset, d1, d2): diagonal's
// gradient, differentiable again (its own gradient is that diagonal of g).
Tensor diagonal_backward(const Tensor& g, const Shape& shape, int64_t offset, int d1, int d2) {
  autograd::Record rec("diagonal_backward", {&g});
  Tensor z = zeros(shape, g.dtype(), g.device());
  diagonal(z, offset, d1, d2).copy_(g);
  if (rec)
    rec.finish("DiagonalBackwardBackward0", {&z}, {},
               [offset, d1, d2](autograd::FnNode&, autograd::Grads& gg) {
                 return autograd::Grads{diagonal(gg[0], offset, d1, d2)};
               });
  return z;
}

}  // namespace

Tensor diagonal(const Tensor& x, int64_t offset, int dim1, int dim2) {
  KILN_CHECK(x.dim() >= 2, ValueError,
             "[diagonal] expected a tensor with at least 2 dims, got " << x.shape_str());
  const int d1 = wrap_dim(dim1, x.dim(), "diagonal"), d2 = wrap_dim(dim2, x.dim(), "diagonal");
  KILN_CHECK(d1 != d2, ValueError, "[diagonal] dimensions cannot be identical " << dim1 << ", " << dim2);
  const int64_t s1 = x.size(d1), s2 = x.size(d2);
  int64_t n = offset >= 0 ? std::min(s1, s2 - offset) : std::min(s1 + offset, s2);
  n = std::max<int64_t>(n, 0);
  int64_t start = x.offset();
  if (n > 0) start += offset >= 0 ? offset * x.stride(d2) : -offset * x.stride(d1);
  Shape shape, strides;
  for (int d = 0; d < x.dim(); ++d)
    if (d != d1 && d != d2) shape.push_back(x.size(d)), strides.push_back(x.stride(d));
  shape.push_back(n);
  strides.push_back(x.stride(d1) + x.stride(d2));
  // as_strided has no derivative: record the view itself (x's gradient is g
  // laid on the same diagonal of zeros).
  autograd::Record rec("diagonal", {&x});
  Tensor out = x.as_strided(shape, strides, start);
  if (rec) {
    rec.finish("DiagonalBackward0", {&out}, {},
               [sh = x.sizes(), offset, d1, d2](autograd::FnNode&, autograd::Grads& g) {
                 return autograd::Grads{diagonal_backward(g[0], sh, offset, d1, d2)};
               });
    out.autograd_meta()->is_view = true;
  }
  return out;
}

Tensor diag(const Tensor& x, int64_t diagonal_) {
  if (x.dim() == 1) {
    return diag_embed(x, diagonal_, 0, 1);
  }
  KILN_CHECK(x.dim() == 2, ValueError, "[diag] matrix or a vector expected, got " << x.shape_str());
  return diagonal(x, diagonal_, 0, 1).clone();
}

Tensor diag_embed(const Tensor& x, int64_t offset, int dim1, int dim2) {
  KILN_CHECK(x.dim() >= 1, ValueError,
             "[diag_embed] expected a tensor with at least 1 dim, got a 0-dim tensor");
  const int nd = x.dim() + 1;
  const int d1 = wrap_dim(dim1, nd, "diag_embed"), d2 = wrap_dim(dim2, nd, "diag_embed");
  KILN_CHECK(d1 != d2, ValueError,
             "[diag_embed] diagonal dimensions cannot be identical " << dim1 << ", " << dim2);
  const int64_t n = x.size(-1) + (offset < 0 ? -offset : offset);
  Shape shape = x.sizes();
  shape.pop_back();
  shape.insert(shape.begin() + std::min(d1, d2), n);
  shape.insert(shape.begin() + std::max(d1, d2), n);
  // The copy into a view of fresh zeros would leave `out` without history:
  // record the op itself (x's gradient is g's diagonal).
  autograd::Record rec("diag_embed", {&x});
  Tensor out = zeros(shape, x.dtype(), x.device());
  diagonal(out, offset, d1, d2).copy_(x);
  if (rec)
    rec.finish("DiagEmbedBackward0", {&out}, {}, [offset, d1, d2](autograd::FnNode&, autograd::Grads& g) {
      return autograd::Grads{diagonal(g[0], offset, d1, d2)};
    });
  return out;
}

Tensor diagflat(const Tensor& x, int64_t offset) { return diag(x.reshape({-1}), offset); }

Tensor trace(const Tensor& x) {
  KILN_CHECK(x.dim() == 2, ValueError, "[trace] expected a matrix, but got tensor with dim " << x.dim());
  return sum(diagonal(x, 0, 0, 1));
}

Tensor movedim(const Tensor& x, std::span<const int> source, std::span<const int> destination) {
  KILN_CHECK(source.size() == destination.size(), ValueError,
             "[movedim] invalid source or destination dims: source has "
                 << source.size() << " dims but destination has " << destination.size() << " dims");
  const int nd = x.dim();
  std::vector<int> perm(size_t(std::max(nd, 1)), -1);
  std::vector<bool> used(perm.size(), false);
  for (size_t i = 0; i < source.size(); ++i) {
    const int s = wrap_dim(source[i], std::max(nd, 1), "movedim");
    const int d = wrap_dim(destination[i], std::max(nd, 1), "movedim");
    KILN_CHECK(!used[size_t(s)], ValueError, "[movedim] repeated dim in `source` (" << source[i] << ")");
    KILN_CHECK(perm[size_t(d)] < 0, ValueError,
               "[movedim] repeated dim in `destination` (" << destination[i] << ")");
    perm[size_t(d)] = s;
    used[size_t(s)] = true;
  }
  if (nd == 0) return x;
  int next = 0;
  for (int& p : perm) {
    if (p >= 0) continue;
    while (used[size_t(next)]) ++next;
    p = next++;
  }
  return x.permute(perm);
}

Shape broadcast_shapes(std::span<const Shape> shapes) {
  size_t nd = 0;
  for (const Shape& s : shapes) nd = std::max(nd, s.size());
  Shape r(nd, 1);
  for (const Shape& s : shapes)
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t& o = r[nd - s.size() + k];
      const int64_t v = s[k];
      KILN_CHECK(v == o || v == 1 || o == 1, ValueError,
                 "[broadcast_shapes] shape " << shape_to_string(s) << " cannot be broadcast with "
                                             << shape_to_string(r) << " at dim " << k);
      if (o == 1) o = v;
    }
  return r;
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  KILN_CHECK(shape.size() >= size_t(x.dim()), ValueError,
             "[broadcast_to] the shape " << shape_to_string(shape) << " has fewer dims than the tensor's "
                                         << x.shape_str());
  return x.expand(shape);
}

std::vector<Tensor> broadcast_tensors(std::span<const Tensor> xs) {
  std::vector<Shape> shapes;
  for (const Tensor& t : xs) shapes.push_back(t.sizes());
  const Shape s = broadcast_shapes(shapes);
  std::vector<Tensor> r;
  for (const Tensor& t : xs) r.push_back(t.expand(s));
  return r;
}

Tensor unflatten(const Tensor& x, int dim, const Shape& sizes) {
  KILN_CHECK(x.dim() > 0, ValueError, "[unflatten] cannot unflatten a 0-dim tensor");
  KILN_CHECK(!sizes.empty(), ValueError, "[unflatten] sizes must be non-empty");
  const int d = wrap_dim(dim, x.dim(), "unflatten");
  Shape s = x.sizes();
  s.erase(s.begin() + d);
  s.insert(s.begin() + d, sizes.begin(), sizes.end());
  return x.view(s);
}

}  // namespace kiln
