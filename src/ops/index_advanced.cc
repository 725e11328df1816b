// Python-style indexing: x[idx] and x[idx] = value with ints, slices, None,
// Ellipsis, bools and integer/bool tensors (PyTorch's and NumPy's rules).
//
// Basic entries (int, slice, None, Ellipsis) become a view; tensor entries are
// recorded against dims of that view and expanded to the broadcast index
// shape B. The kernels (ops::index, ops::index_put of ops/registry/index.h)
// check and wrap the indices as they fold them into element offsets.
#include <limits>

#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/index.h"
#include "ops/elementwise.h"
#include "ops/index_common.h"
#include "ops/registry/all.h"

namespace kiln {
using namespace index_detail;
namespace {

struct Basic {
  Tensor view;                          // x after ints, slices, None, Ellipsis
  std::vector<ops::AdvancedIndex> adv;  // int64, in increasing dim order
};

// x[True] / x[False]: an index of one zero or none, on x's device.
Tensor bool_scalar_index(bool b, Device device) { return zeros({b ? 1 : 0}, DType::Int64, device); }

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
        r.adv.push_back({d, bool_scalar_index(e.boolean, x.device())});
        ++d;
        break;
      case K::Tensor: {
        const Tensor& t = e.tensor;
        if (t.dtype() == DType::Bool) {
          if (t.dim() == 0) {
            v = v.unsqueeze(d);
            r.adv.push_back({d, bool_scalar_index(t.item<bool>(), x.device())});
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

// The shape of x[idx] when idx has advanced entries.
struct Plan {
  Shape out_shape;  // result of x[idx]
  Shape B;          // broadcast index shape
  int b_pos = 0;    // where B's dims start in out_shape
};

// Broadcasts the advanced indices of bs together (expanding them to B) and
// lays out the result shape.
Plan make_plan(Basic& bs, const char* op) {
  Plan p;
  const Tensor& v = bs.view;
  Shape B = bs.adv[0].index.sizes();
  for (size_t j = 1; j < bs.adv.size(); ++j) {
    try {
      B = broadcast_shapes(B, bs.adv[j].index.shape(), op);
    } catch (const ValueError&) {
      std::string shapes;
      for (size_t i = 0; i < bs.adv.size(); ++i) shapes += (i ? ", " : "") + bs.adv[i].index.shape_str();
      throw IndexError(std::string("[") + op +
                       "] shape mismatch: indexing tensors could not be broadcast together "
                       "with shapes " +
                       shapes);
    }
  }
  p.B = B;
  for (auto& a : bs.adv) a.index = a.index.expand(B);
  bool adjacent = true;
  for (size_t j = 1; j < bs.adv.size(); ++j)
    if (bs.adv[j].dim != bs.adv[j - 1].dim + 1) adjacent = false;
  std::vector<bool> indexed(size_t(v.dim()), false);
  for (const auto& a : bs.adv) indexed[size_t(a.dim)] = true;
  for (int d = 0; d < v.dim(); ++d) {
    if (indexed[size_t(d)]) continue;
    if (adjacent && d < bs.adv[0].dim) ++p.b_pos;
    p.out_shape.push_back(v.size(d));
  }
  p.out_shape.insert(p.out_shape.begin() + p.b_pos, B.begin(), B.end());
  if (p.out_shape.size() > size_t(kMaxDims))
    throw ValueError(std::string("[") + op + "] indexing result would have " +
                     std::to_string(p.out_shape.size()) + " dims; at most " + std::to_string(kMaxDims) +
                     " are supported");
  return p;
}

// Whether idx has an advanced entry (a tensor or a bool); without one x[idx]
// is a view, recorded by the view methods apply_basic calls.
bool has_advanced(const std::vector<TensorIndex>& idx) {
  for (const TensorIndex& e : idx)
    if (e.kind == TensorIndex::Kind::Tensor || e.kind == TensorIndex::Kind::Boolean) return true;
  return false;
}

Tensor index_impl(const Tensor& x, const std::vector<TensorIndex>& idx) {
  const char* op = "index";
  Basic bs = apply_basic(x, idx, op);
  if (bs.adv.empty()) return bs.view;
  const Plan p = make_plan(bs, op);
  Tensor out = empty(p.out_shape, x.dtype(), x.device());
  // With B non-empty the kernel checks the indices even when out is empty.
  if (shape_numel(p.B, op) == 0) return out;
  ops::index(common_device(op, {&x, &out}), bs.view, bs.adv, p.b_pos, out);
  return out;
}

Tensor& index_put_impl(Tensor& x, const std::vector<TensorIndex>& idx, const Tensor& value_in,
                       bool accumulate) {
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
  const Device device = common_device(op, {&x, &value});
  if (bs.adv.empty()) {
    if (!accumulate) {
      bs.view.copy_(value);
      return x;
    }
    Tensor val;
    try {
      val = value.expand(v.sizes());
    } catch (const ValueError&) {
      throw ValueError("[index_put_] value of shape " + value_in.shape_str() + " cannot be broadcast to " +
                       v.shape_str());
    }
    ops::index_put(device, v, bs.adv, 0, val, true);
    return x;
  }
  const Plan p = make_plan(bs, op);
  try {
    value = value.expand(p.out_shape);
  } catch (const ValueError&) {
    throw ValueError("[index_put_] shape mismatch: value tensor of shape " + value_in.shape_str() +
                     " cannot be broadcast to indexing result of shape " + shape_to_string(p.out_shape));
  }
  if (shape_numel(p.B, op) == 0) return x;
  ops::index_put(device, v, bs.adv, p.b_pos, value, accumulate);
  return x;
}

}  // namespace

// x[idx] with advanced entries: x's gradient accumulates g at the indexed
// places (repeated indices sum).
Tensor index(const Tensor& x, const std::vector<TensorIndex>& idx) {
  if (!has_advanced(idx)) return index_impl(x, idx);
  autograd::Record rec("index", {&x});
  Tensor out = index_impl(x, idx);
  if (rec)
    rec.finish("IndexBackward0", {&out}, {}, [idx, sh = x.sizes()](autograd::FnNode&, autograd::Grads& g) {
      return autograd::Grads{index_put(zeros(sh, g[0].dtype(), g[0].device()), idx, g[0], true)};
    });
  return out;
}

Tensor& index_put_(Tensor& x, const std::vector<TensorIndex>& idx, const Tensor& value, bool accumulate) {
  if (value.defined() && autograd::inplace_needs_grad("index_put_", x, {&value})) {
    autograd::rebase_inplace(x, index_put(x, idx, value, accumulate));
    return x;
  }
  return index_put_impl(x, idx, value, accumulate);
}

Tensor& index_put_(Tensor& x, const std::vector<TensorIndex>& idx, const Scalar& value, bool accumulate) {
  if (value.is_complex() && !is_complex(x.dtype()))
    throw TypeError(std::string("[index_put_] cannot assign a complex value to a ") + name(x.dtype()) +
                    " tensor");
  return index_put_(x, idx, scalar_tensor(value, x.dtype(), x.device()), accumulate);
}

// value's gradient is g at the indexed places (summed by the engine to value's
// shape); x's is g, with those places zeroed unless accumulating.
Tensor index_put(const Tensor& x, const std::vector<TensorIndex>& idx, const Tensor& value, bool accumulate) {
  if (!value.defined()) throw ValueError("[index_put] value is undefined");
  autograd::Record rec("index_put", {&x, &value});
  Tensor out = x.clone();
  index_put_impl(out, idx, value, accumulate);
  if (rec)
    rec.finish("IndexPutBackward0", {&out}, {}, [idx, accumulate](autograd::FnNode& n, autograd::Grads& g) {
      autograd::Grads r(2);
      if (n.needs(0)) r[0] = accumulate ? g[0] : index_put(g[0], idx, zeros({}, g[0].dtype(), g[0].device()));
      if (n.needs(1)) {
        r[1] = index(g[0], idx);
        if (!accumulate) {
          // A repeated index keeps the last write: the value elements it
          // overwrote get no gradient.
          const Tensor pos = arange(Scalar(int64_t(0)), Scalar(r[1].numel()), Scalar(int64_t(1)),
                                    DType::Int64, g[0].device())
                                 .reshape(r[1].sizes());
          const Tensor written =
              index_put(full(g[0].sizes(), Scalar(int64_t(-1)), DType::Int64, g[0].device()), idx, pos);
          r[1] = masked_fill(r[1], ne(index(written, idx), pos), Scalar(0.0));
        }
      }
      return r;
    });
  return out;
}

}  // namespace kiln
