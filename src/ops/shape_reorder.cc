// flip / roll / repeat / tril / triu front-ends (ops/registry/shape.h) and the
// compositions over them: fliplr, flipud, rot90, tile, repeat_interleave.
#include <algorithm>
#include <string>
#include <vector>

#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/error.h"
#include "kiln/index.h"
#include "kiln/reduce.h"
#include "kiln/shape.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

Tensor roll_impl(const Tensor& x, std::span<const int64_t> shifts, std::span<const int> dims);

// dims wrapped against x (a 0-d tensor takes 0 / -1), each at most once.
std::vector<int> distinct_dims(const Tensor& x, std::span<const int> dims, const char* op) {
  std::vector<int> r;
  const int nd = std::max(x.dim(), 1);
  for (int d : dims) {
    const int w = wrap_dim(d, nd, op);
    KILN_CHECK(std::find(r.begin(), r.end(), w) == r.end(), ValueError,
               "[" << op << "] dim " << w << " appears multiple times in the list of dims");
    r.push_back(w);
  }
  if (x.dim() == 0) r.clear();
  return r;
}

std::string list_str(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

Tensor triangle(const Tensor& x, int64_t diagonal, const Tensor* out_arg, bool upper) {
  const char* op = upper ? "triu" : "tril";
  KILN_CHECK(x.dim() >= 2, ValueError,
             "[" << op << "] input tensor must have at least 2 dimensions, got " << x.shape_str());
  Tensor out;
  if (out_arg) {
    out = *out_arg;
    KILN_CHECK(out.sizes() == x.sizes(), ValueError,
               "[" << op << "] out has shape " << out.shape_str() << ", expected " << x.shape_str());
    KILN_CHECK(out.dtype() == x.dtype(), TypeError,
               "[" << op << "] out has dtype " << name(out.dtype()) << ", expected " << name(x.dtype()));
    assert_no_internal_overlap(out, op);
  } else {
    out = empty(x.sizes(), x.dtype(), x.device());
  }
  const Device device = common_device(op, {&x, &out});
  (upper ? ops::triu : ops::tril)(device, x, diagonal, out);
  return out;
}

// tril / triu keep the same triangle of the gradient.
Tensor triangle_recorded(const Tensor& x, int64_t diagonal, bool upper) {
  autograd::Record rec(upper ? "triu" : "tril", {&x});
  Tensor out = triangle(x, diagonal, nullptr, upper);
  if (rec)
    rec.finish(upper ? "TriuBackward0" : "TrilBackward0", {&out}, {},
               [diagonal, upper](autograd::FnNode&, autograd::Grads& g) {
                 return autograd::Grads{upper ? triu(g[0], diagonal) : tril(g[0], diagonal)};
               });
  return out;
}

}  // namespace

Tensor flip(const Tensor& x, std::span<const int> dims) {
  autograd::Record rec("flip", {&x});
  const std::vector<int> d = distinct_dims(x, dims, "flip");
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  if (x.numel() > 0) ops::flip(common_device("flip", {&x, &out}), x, d, out);
  if (rec)
    rec.finish("FlipBackward0", {&out}, {},
               [d](autograd::FnNode&, autograd::Grads& g) { return autograd::Grads{flip(g[0], d)}; });
  return out;
}
Tensor fliplr(const Tensor& x) {
  KILN_CHECK(x.dim() >= 2, ValueError, "[fliplr] input must be >= 2-d, got " << x.shape_str());
  const int d = 1;
  return flip(x, {&d, 1});
}
Tensor flipud(const Tensor& x) {
  KILN_CHECK(x.dim() >= 1, ValueError, "[flipud] input must be >= 1-d, got " << x.shape_str());
  const int d = 0;
  return flip(x, {&d, 1});
}

Tensor roll(const Tensor& x, std::span<const int64_t> shifts, std::span<const int> dims) {
  autograd::Record rec("roll", {&x});
  Tensor out = roll_impl(x, shifts, dims);
  if (rec) {
    // Rolling back by the opposite shifts.
    // Reduced modulo the rolled size first so that -shift cannot overflow.
    std::vector<int64_t> back;
    for (size_t k = 0; k < shifts.size(); ++k) {
      const int64_t n = dims.empty() ? x.numel() : x.dim() == 0 ? 1 : x.size(dims[k]);
      back.push_back(n == 0 ? 0 : -(shifts[k] % n));
    }
    std::vector<int> ds(dims.begin(), dims.end());
    rec.finish("RollBackward0", {&out}, {}, [back, ds](autograd::FnNode&, autograd::Grads& g) {
      return autograd::Grads{roll(g[0], back, ds)};
    });
  }
  return out;
}

namespace {
Tensor roll_impl(const Tensor& x, std::span<const int64_t> shifts, std::span<const int> dims) {
  if (dims.empty()) {
    KILN_CHECK(shifts.size() == 1, ValueError,
               "[roll] shifts and dimensions must align: got " << shifts.size() << " shifts and no dims");
    const int d = 0;
    return roll(x.reshape({-1}), shifts, {&d, 1}).view(x.sizes());
  }
  KILN_CHECK(shifts.size() == dims.size(), ValueError,
             "[roll] shifts and dimensions must align: got " << shifts.size() << " shifts and " << dims.size()
                                                             << " dims");
  std::vector<int> w;
  std::vector<int64_t> s;
  const int nd = std::max(x.dim(), 1);
  for (size_t k = 0; k < dims.size(); ++k) {
    const int d = wrap_dim(dims[k], nd, "roll");
    if (x.dim() == 0) continue;
    const int64_t n = x.size(d);
    const int64_t sh = n == 0 ? 0 : ((shifts[k] % n) + n) % n;
    auto it = std::find(w.begin(), w.end(), d);  // a repeated dim rolls twice
    if (it != w.end()) {
      int64_t& t = s[size_t(it - w.begin())];
      t = n ? (t + sh) % n : 0;
    } else {
      w.push_back(d);
      s.push_back(sh);
    }
  }
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  if (x.numel() > 0) ops::roll(common_device("roll", {&x, &out}), x, s, w, out);
  return out;
}
}  // namespace

Tensor rot90(const Tensor& x, int64_t k, std::span<const int> dims) {
  KILN_CHECK(dims.size() == 2, ValueError,
             "[rot90] expected total rotation dims == 2, but got dims = " << dims.size());
  KILN_CHECK(x.dim() >= 2, ValueError, "[rot90] expected total dims >= 2, but got total dims = " << x.dim());
  const int d0 = wrap_dim(dims[0], x.dim(), "rot90"), d1 = wrap_dim(dims[1], x.dim(), "rot90");
  KILN_CHECK(d0 != d1, ValueError,
             "[rot90] expected rotation dims to be different, but got dim0 = " << d0 << " and dim1 = " << d1);
  switch (((k % 4) + 4) % 4) {
    case 1:
      return flip(x, {&d1, 1}).transpose(d0, d1);
    case 2: {
      const int both[2] = {d0, d1};
      return flip(x, both);
    }
    case 3:
      return flip(x, {&d0, 1}).transpose(d0, d1);
    default:
      return x.clone();
  }
}

Tensor repeat(const Tensor& x, std::span<const int64_t> repeats) {
  autograd::Record rec("repeat", {&x});
  KILN_CHECK(int64_t(repeats.size()) >= x.dim(), ValueError,
             "[repeat] number of dimensions of repeat dims ("
                 << repeats.size() << ") can not be smaller than number of dimensions of tensor (" << x.dim()
                 << ")");
  for (int64_t r : repeats)
    KILN_CHECK(r >= 0, ValueError, "[repeat] repeats must be non-negative, got " << list_str(repeats));
  Tensor xv = x;
  while (xv.dim() < int(repeats.size())) xv = xv.unsqueeze(0);
  Shape shape(repeats.size());
  for (size_t d = 0; d < repeats.size(); ++d) {
    KILN_CHECK(xv.size(int(d)) == 0 || repeats[d] <= INT64_MAX / xv.size(int(d)), ValueError,
               "[repeat] size " << xv.size(int(d)) << " times " << repeats[d] << " overflows int64");
    shape[d] = xv.size(int(d)) * repeats[d];
  }
  Tensor out = empty(shape, x.dtype(), x.device());
  if (out.numel() > 0) ops::repeat(common_device("repeat", {&x, &out}), xv, out);
  if (rec) {
    // g: [r0 * s0, r1 * s1, ..] -> [r0, s0, r1, s1, ..], summed over the r's.
    Shape split;
    std::vector<int> rdims;
    for (size_t d = 0; d < repeats.size(); ++d) {
      rdims.push_back(int(split.size()));
      split.push_back(repeats[d]);
      split.push_back(xv.size(int(d)));
    }
    rec.finish("RepeatBackward0", {&out}, {},
               [split, rdims, sh = x.sizes()](autograd::FnNode&, autograd::Grads& g) {
                 if (rdims.empty()) return autograd::Grads{g[0]};
                 return autograd::Grads{sum(g[0].reshape(split), rdims).reshape(sh)};
               });
  }
  return out;
}

Tensor tile(const Tensor& x, std::span<const int64_t> dims) {
  std::vector<int64_t> r(dims.begin(), dims.end());
  if (int(r.size()) < x.dim()) r.insert(r.begin(), size_t(x.dim()) - r.size(), 1);
  return repeat(x, r);
}

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int> dim) {
  KILN_CHECK(repeats >= 0, ValueError, "[repeat_interleave] repeats can not be negative, got " << repeats);
  const Tensor xv = dim ? x : x.reshape({-1});
  const int d = wrap_dim(dim.value_or(0), std::max(xv.dim(), 1), "repeat_interleave");
  if (xv.dim() == 0) return repeat(xv.view({1}), std::vector<int64_t>{repeats});
  // [.., n, ..] -> [.., n, r, ..] (a stride-0 view) -> [.., n * r, ..]
  Shape e = xv.sizes();
  e.insert(e.begin() + d + 1, repeats);
  Shape merged = xv.sizes();
  merged[size_t(d)] *= repeats;
  return xv.unsqueeze(d + 1).expand(e).reshape(merged);
}

Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int> dim) {
  KILN_CHECK(is_integral(repeats.dtype(), false), TypeError,
             "[repeat_interleave] repeats must be an integer tensor, got " << name(repeats.dtype()));
  KILN_CHECK(repeats.dim() <= 1, ValueError,
             "[repeat_interleave] repeats must be 0-dim or 1-dim tensor, got " << repeats.shape_str());
  if (repeats.numel() == 1) return repeat_interleave(x, repeats.reshape({}).item<int64_t>(), dim);
  const Tensor xv = dim ? x : x.reshape({-1});
  const int d = wrap_dim(dim.value_or(0), std::max(xv.dim(), 1), "repeat_interleave");
  const int64_t n = xv.dim() == 0 ? 1 : xv.size(d);
  KILN_CHECK(
      repeats.numel() == n, ValueError,
      "[repeat_interleave] repeats must have the same size as input along dim, but got repeats.size(0) = "
          << repeats.numel() << " and input.size(" << d << ") = " << n);
  const Tensor r = repeats.to(DType::Int64).contiguous().cpu();
  const int64_t* rp = r.data<int64_t>();
  std::vector<int64_t> index;
  for (int64_t i = 0; i < n; ++i) {
    KILN_CHECK(rp[i] >= 0, ValueError, "[repeat_interleave] repeats can not be negative, got " << rp[i]);
    index.insert(index.end(), size_t(rp[i]), i);
  }
  const Tensor idx = from_buffer_copy(index.data(), {int64_t(index.size())}, DType::Int64).to(x.device());
  return index_select(xv.dim() == 0 ? xv.view({1}) : xv, d, idx);
}

Tensor repeat_interleave(const Tensor& repeats) {
  KILN_CHECK(repeats.dim() <= 1, ValueError,
             "[repeat_interleave] repeats must be 0-dim or 1-dim tensor, got " << repeats.shape_str());
  const Tensor r = repeats.reshape({-1});
  const Tensor ar =
      arange(Scalar(int64_t(0)), Scalar(r.numel()), Scalar(int64_t(1)), DType::Int64, r.device());
  return repeat_interleave(ar, r, 0);
}

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle_recorded(x, diagonal, false); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle_recorded(x, diagonal, true); }
void tril_out(const Tensor& x, int64_t diagonal, const Tensor& out) {
  autograd::Record("tril", {&x}).no_out(out);
  autograd::wrote(out);
  triangle(x, diagonal, &out, false);
}
void triu_out(const Tensor& x, int64_t diagonal, const Tensor& out) {
  autograd::Record("triu", {&x}).no_out(out);
  autograd::wrote(out);
  triangle(x, diagonal, &out, true);
}
Tensor& tril_(Tensor& x, int64_t diagonal) {
  if (autograd::inplace_needs_grad("tril_", x, {})) {
    autograd::rebase_inplace(x, tril(x, diagonal));
    return x;
  }
  triangle(x, diagonal, &x, false);
  return x;
}
Tensor& triu_(Tensor& x, int64_t diagonal) {
  if (autograd::inplace_needs_grad("triu_", x, {})) {
    autograd::rebase_inplace(x, triu(x, diagonal));
    return x;
  }
  triangle(x, diagonal, &x, true);
  return x;
}

}  // namespace kiln
