// Python-style indexing: x[idx] and x[idx] = value with ints, slices, None,
// Ellipsis, bools and integer/bool tensors (PyTorch's and NumPy's rules).
//
// Basic entries (int, slice, None, Ellipsis) become a view; tensor entries are
// recorded against dims of that view, validated and folded into one int64
// tensor of element offsets, "off", of the broadcast index shape B. Then
//   x[idx]          = gather_kernel over the result shape (off adds to a base view)
//   x[idx] (+)= v   = scatter_columns over the non-indexed dims, k walking B.
#include <limits>

#include "kiln/index.h"
#include "ops/elementwise.h"
#include "ops/index_common.h"

namespace kiln {
using namespace index_detail;
namespace {

struct Advanced {
  int dim;     // dim of the basic view
  Tensor idx;  // int64
};

struct Basic {
  Tensor view;                // x after ints, slices, None, Ellipsis
  std::vector<Advanced> adv;  // in increasing dim order
};

Tensor bool_scalar_index(bool b) {
  Tensor t = zeros({b ? 1 : 0}, DType::Int64);
  return t;
}

Basic apply_basic(const Tensor& x, const std::vector<TensorIndex>& idx, const char* op) {
  using K = TensorIndex::Kind;
  int consumed = 0, ellipses = 0;
  for (const auto& e : idx) {
    switch (e.kind) {
      case K::Integer:
      case K::Slice:
        ++consumed;
        break;
      case K::Ellipsis:
        ++ellipses;
        break;
      case K::Tensor:
        if (!e.tensor.defined()) throw ValueError(std::string("[") + op + "] undefined index tensor");
        consumed += e.tensor.dtype() == DType::Bool ? e.tensor.dim() : 1;
        break;
      default:
        break;
    }
  }
  if (ellipses > 1)
    throw IndexError(std::string("[") + op + "] an index can only have a single ellipsis ('...')");
  if (consumed > x.dim())
    throw IndexError(std::string("[") + op + "] too many indices for tensor of dimension " +
                     std::to_string(x.dim()) + " (got " + std::to_string(consumed) + ")");
  Basic r{x, {}};
  Tensor& v = r.view;
  int d = 0;
  for (size_t pos = 0; pos < idx.size(); ++pos) {
    const TensorIndex& e = idx[pos];
    switch (e.kind) {
      case K::Integer: {
        const int64_t n = v.size(d);
        if (e.integer < -n || e.integer >= n) throw_out_of_bounds(op, e.integer, d, n);
        v = v.select(d, e.integer);
        break;
      }
      case K::Slice: {
        const int64_t step = e.slice.step.value_or(1);
        if (step <= 0) throw ValueError(std::string("[") + op + "] slice step must be greater than zero");
        v = v.slice(d, e.slice.start.value_or(0), e.slice.stop.value_or(std::numeric_limits<int64_t>::max()),
                    step);
        ++d;
        break;
      }
      case K::None:
        v = v.unsqueeze(d);
        ++d;
        break;
      case K::Ellipsis:
        d += x.dim() - consumed;
        break;
      case K::Boolean:
        v = v.unsqueeze(d);
        r.adv.push_back({d, bool_scalar_index(e.boolean)});
        ++d;
        break;
      case K::Tensor: {
        const Tensor& t = e.tensor;
        if (t.dtype() == DType::Bool) {
          if (t.dim() == 0) {
            v = v.unsqueeze(d);
            r.adv.push_back({d, bool_scalar_index(t.item<bool>())});
            ++d;
            break;
          }
          for (int j = 0; j < t.dim(); ++j) {
            if (t.size(j) != v.size(d + j))
              throw IndexError(std::string("[") + op + "] the shape of the mask " + t.shape_str() +
                               " at index " + std::to_string(j) +
                               " does not match the shape of the indexed tensor " + v.shape_str() +
                               " at index " + std::to_string(d + j));
          }
          const Tensor nz = nonzero(t);  // [N, k]
          for (int j = 0; j < t.dim(); ++j) r.adv.push_back({d + j, nz.select(1, j)});
          d += t.dim();
        } else if (is_integral(t.dtype(), false)) {
          r.adv.push_back({d, t.to(DType::Int64)});
          ++d;
        } else {
          throw IndexError(std::string("[") + op +
                           "] tensors used as indices must be integer or bool tensors, got " +
                           name(t.dtype()));
        }
        break;
      }
    }
  }
  return r;
}

// The advanced part laid out for the kernels.
struct Plan {
  Shape out_shape;                 // result of x[idx]
  Shape B;                         // broadcast index shape
  int b_pos = 0;                   // where B's dims start in out_shape
  Tensor off;                      // int64 [B], contiguous: element offsets into the view
  Shape rest_shape, rest_strides;  // non-indexed dims of the view, in order
};

Plan make_plan(const Basic& bs, const char* op) {
  Plan p;
  const Tensor& v = bs.view;
  Shape B = bs.adv[0].idx.sizes();
  for (size_t j = 1; j < bs.adv.size(); ++j) {
    try {
      B = broadcast_shapes(B, bs.adv[j].idx.shape(), op);
    } catch (const ValueError&) {
      std::string shapes;
      for (size_t i = 0; i < bs.adv.size(); ++i) shapes += (i ? ", " : "") + bs.adv[i].idx.shape_str();
      throw IndexError(std::string("[") + op +
                       "] shape mismatch: indexing tensors could not be broadcast together "
                       "with shapes " +
                       shapes);
    }
  }
  p.B = B;
  p.off = zeros(B, DType::Int64);
  for (const auto& a : bs.adv)
    add_wrapped_offsets(p.off, a.idx.expand(B), v.size(a.dim), v.stride(a.dim), op, a.dim);
  bool adjacent = true;
  for (size_t j = 1; j < bs.adv.size(); ++j)
    if (bs.adv[j].dim != bs.adv[j - 1].dim + 1) adjacent = false;
  std::vector<bool> indexed(size_t(v.dim()), false);
  for (const auto& a : bs.adv) indexed[size_t(a.dim)] = true;
  for (int d = 0; d < v.dim(); ++d) {
    if (indexed[size_t(d)]) continue;
    if (adjacent && d < bs.adv[0].dim) ++p.b_pos;
    p.rest_shape.push_back(v.size(d));
    p.rest_strides.push_back(v.stride(d));
  }
  p.out_shape = p.rest_shape;
  p.out_shape.insert(p.out_shape.begin() + p.b_pos, B.begin(), B.end());
  if (p.out_shape.size() > size_t(kMaxDims))
    throw ValueError(std::string("[") + op + "] indexing result would have " +
                     std::to_string(p.out_shape.size()) + " dims; at most " + std::to_string(kMaxDims) +
                     " are supported");
  return p;
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

}  // namespace

Tensor index(const Tensor& x, const std::vector<TensorIndex>& idx) {
  const char* op = "index";
  Basic bs = apply_basic(x, idx, op);
  if (bs.adv.empty()) return bs.view;
  const Plan p = make_plan(bs, op);
  Tensor out = empty(p.out_shape, x.dtype());
  if (out.numel() == 0) return out;
  const int nb = int(p.B.size());
  // base: the view's non-indexed strides, 0 along B; off: 0 along the rest.
  const Tensor base =
      restride(bs.view, p.out_shape, insert_at(p.rest_strides, p.b_pos, Shape(size_t(nb), 0)));
  const Tensor offv =
      restride(p.off, p.out_shape, insert_at(Shape(p.rest_shape.size(), 0), p.b_pos, p.off.stride_vec()));
  gather_kernel(out, base, offv, 1);
  return out;
}

Tensor& index_put_(Tensor& x, const std::vector<TensorIndex>& idx, const Tensor& value_in, bool accumulate) {
  const char* op = "index_put_";
  assert_no_internal_overlap(x, op);
  if (!value_in.defined()) throw ValueError("[index_put_] value is undefined");
  if (is_complex(value_in.dtype()) && !is_complex(x.dtype()))
    throw TypeError(std::string("[index_put_] cannot assign a complex value to a ") + name(x.dtype()) +
                    " tensor");
  Basic bs = apply_basic(x, idx, op);
  Tensor value = value_in.to(x.dtype());
  if (value.storage() == x.storage()) value = value.clone();
  const Tensor& v = bs.view;
  if (bs.adv.empty()) {
    if (!accumulate) {
      bs.view.copy_(value);
      return x;
    }
    // view += value as one column per element, k = 0 only.
    Tensor val;
    try {
      val = value.expand(v.sizes());
    } catch (const ValueError&) {
      throw ValueError("[index_put_] value of shape " + value_in.shape_str() + " cannot be broadcast to " +
                       v.shape_str());
    }
    const Tensor zero = zeros({}, DType::Int64);
    scatter_accumulate(v, val, restride(zero, v.sizes(), Shape(size_t(v.dim()), 0)), 1, 0, 0, 0,
                       Scalar(int64_t(1)), op);
    return x;
  }
  const Plan p = make_plan(bs, op);
  try {
    value = value.expand(p.out_shape);
  } catch (const ValueError&) {
    throw ValueError("[index_put_] shape mismatch: value tensor of shape " + value_in.shape_str() +
                     " cannot be broadcast to indexing result of shape " + shape_to_string(p.out_shape));
  }
  const int64_t K = p.off.numel();
  const int nb = int(p.B.size());
  if (K == 0 || shape_numel(p.rest_shape, op) == 0) return x;
  int64_t val_k_stride = 0;
  if (!flat_b_stride(value, p.b_pos, nb, &val_k_stride)) {
    value = value.contiguous();
    flat_b_stride(value, p.b_pos, nb, &val_k_stride);
  }
  Shape val_rest;
  for (int d = 0; d < value.dim(); ++d)
    if (d < p.b_pos || d >= p.b_pos + nb) val_rest.push_back(value.stride(d));
  // Columns: the non-indexed dims; k walks B (flattened) in row-major order.
  const Tensor dst = restride(v, p.rest_shape, p.rest_strides);
  const Tensor src = restride(value, p.rest_shape, val_rest);
  const Tensor offc = restride(p.off, p.rest_shape, Shape(p.rest_shape.size(), 0));
  const int64_t sz = int64_t(x.itemsize());
  if (accumulate)
    scatter_accumulate(dst, src, offc, K, sz, val_k_stride * sz, 8, Scalar(int64_t(1)), op);
  else
    scatter_copy(dst, src, offc, K, sz, val_k_stride * sz, 8);
  return x;
}

Tensor& index_put_(Tensor& x, const std::vector<TensorIndex>& idx, const Scalar& value, bool accumulate) {
  if (value.is_complex() && !is_complex(x.dtype()))
    throw TypeError(std::string("[index_put_] cannot assign a complex value to a ") + name(x.dtype()) +
                    " tensor");
  return index_put_(x, idx, scalar_tensor(value, x.dtype()), accumulate);
}

Tensor index_put(const Tensor& x, const std::vector<TensorIndex>& idx, const Tensor& value, bool accumulate) {
  Tensor out = x.clone();
  return index_put_(out, idx, value, accumulate);
}

}  // namespace kiln
