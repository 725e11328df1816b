// Op table entries of flip, roll, repeat, tril and triu (ops/registry/shape.h):
// oracles that map each output index to the input index it reads.
#include <algorithm>
#include <functional>

#include "kiln/shape.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;
using Index = std::vector<int64_t>;

// y over out_shape (row-major), y[i] = x[src(i)] (src edits the index in place
// into one of x_shape).
std::vector<double> remap(const std::vector<double>& x, const Shape& x_shape, const Shape& out_shape,
                          const std::function<void(Index&)>& src) {
  int64_t n = 1;
  for (int64_t s : out_shape) n *= s;
  std::vector<double> y;
  for (int64_t lin = 0; lin < n; ++lin) {
    Index i(out_shape.size());
    int64_t rem = lin;
    for (size_t d = out_shape.size(); d-- > 0;) {
      i[d] = rem % out_shape[d];
      rem /= out_shape[d];
    }
    src(i);
    int64_t at = 0;
    for (size_t d = 0; d < x_shape.size(); ++d) at = at * x_shape[d] + i[d];
    y.push_back(x[size_t(at)]);
  }
  return y;
}

size_t wrap(int d, size_t nd) { return size_t(d < 0 ? d + int(nd) : d); }

Entry base(const char* op) {
  Entry e;
  e.op = op;
  e.dtypes = kFloatsAndInts;
  e.shapes = unary_shapes;
  e.ulps = 0;
  e.perf_shapes = {{{1024, 4096}}};
  return e;
}

Entry flip_entry(std::vector<int> dims) {
  Entry e = base("flip");
  e.call = [dims](const std::vector<Tensor>& x) { return flip(x[0], dims); };
  e.oracle = [dims](const Inputs& in, const Tensor&) {
    const Shape& s = in.shapes[0];
    // A 0-d input takes dim 0 / -1 (both the same dim, so not twice), as torch.
    const size_t nd = std::max<size_t>(s.size(), 1);
    std::vector<size_t> seen;
    for (int d : dims) {
      if (d >= int(nd) || d < -int(nd)) throw raises<IndexError>("IndexError");
      if (std::find(seen.begin(), seen.end(), wrap(d, nd)) != seen.end())
        throw raises<ValueError>("ValueError");
      seen.push_back(wrap(d, nd));
    }
    return remap(in.values[0], s, s, [&](Index& i) {
      if (s.empty()) return;
      for (int d : dims) i[wrap(d, s.size())] = s[wrap(d, s.size())] - 1 - i[wrap(d, s.size())];
    });
  };
  return with_fp8(with_complex_by_parts(e));
}

// dims empty: the flattened roll by shifts[0].
Entry roll_entry(std::vector<int64_t> shifts, std::vector<int> dims) {
  Entry e = base("roll");
  e.call = [shifts, dims](const std::vector<Tensor>& x) { return roll(x[0], shifts, dims); };
  e.oracle = [shifts, dims](const Inputs& in, const Tensor&) {
    Shape s = in.shapes[0];
    std::vector<int64_t> sh = shifts;
    std::vector<int> ds = dims;
    if (dims.empty()) {
      int64_t n = 1;
      for (int64_t v : s) n *= v;
      s = {n};
      ds = {0};
    }
    if (s.empty()) return in.values[0];
    return remap(in.values[0], s, s, [&](Index& i) {
      for (size_t k = 0; k < ds.size(); ++k) {
        const size_t d = wrap(ds[k], s.size());
        const int64_t n = s[d];
        i[d] = (((i[d] - sh[k]) % n) + n) % n;
      }
    });
  };
  return with_fp8(with_complex_by_parts(e));
}

Entry repeat_entry(std::vector<int64_t> reps) {
  Entry e = base("repeat");
  e.call = [reps](const std::vector<Tensor>& x) { return repeat(x[0], reps); };
  e.oracle = [reps](const Inputs& in, const Tensor&) {
    Shape xs = in.shapes[0];
    xs.insert(xs.begin(), reps.size() - xs.size(), 1);
    Shape os(reps.size());
    for (size_t d = 0; d < reps.size(); ++d) os[d] = xs[d] * reps[d];
    return remap(in.values[0], xs, os, [&](Index& i) {
      for (size_t d = 0; d < i.size(); ++d) i[d] %= xs[d];
    });
  };
  return with_fp8(with_complex_by_parts(e));
}

Entry triangle_entry(bool upper, int64_t k) {
  Entry e = base(upper ? "triu" : "tril");
  e.shapes = [](ShapeClass c) -> std::vector<InputSpec> {
    if (c == ShapeClass::Odd) return {{{3, 5, 7}}};  // a batch of matrices
    return unary_shapes(c);
  };
  e.call = [upper, k](const std::vector<Tensor>& x) { return upper ? triu(x[0], k) : tril(x[0], k); };
  e.oracle = [upper, k](const Inputs& in, const Tensor&) {
    const Shape& s = in.shapes[0];
    if (s.size() < 2) throw raises<ValueError>("ValueError");
    const int64_t m = s[s.size() - 2], n = s[s.size() - 1];
    std::vector<double> y = in.values[0];
    for (size_t lin = 0; lin < y.size(); ++lin) {
      const int64_t j = int64_t(lin) % n, i = (int64_t(lin) / n) % m;
      if (upper ? j - i < k : j - i > k) y[lin] = 0;
    }
    return y;
  };
  return with_fp8(with_complex_by_parts(e));
}

KILN_OP_TABLE({
    flip_entry({0, -1}),
    flip_entry({1}),
    roll_entry({3, -2}, {-1, 0}),
    roll_entry({7}, {}),
    repeat_entry({2, 1, 3}),
    repeat_entry({1, 1}),
    triangle_entry(false, 0),
    triangle_entry(false, -2),
    triangle_entry(true, 0),
    triangle_entry(true, 3),
});

}  // namespace
}  // namespace op_table
