// Op table entries of rms_norm, layer_norm and batch_norm (ops/registry/nn.h):
// float64 normalizations written from the formulas.
#include <cmath>

#include "kiln/nn.h"
#include "kiln/unary.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

// Rows of n trailing elements of x: y = (x - mean) / sqrt(var + eps) * w + b,
// mean = 0 and var = mean(x^2) for rms; w / b empty: absent.
std::vector<double> norm_ref(const std::vector<double>& x, int64_t n, const std::vector<double>& w,
                             const std::vector<double>& b, double eps, bool rms) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r * size_t(n) < x.size(); ++r) {
    const double* xr = x.data() + r * size_t(n);
    double mean = 0, var = 0;
    if (!rms) {
      for (int64_t i = 0; i < n; ++i) mean += xr[i];
      mean /= double(n);
    }
    for (int64_t i = 0; i < n; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= double(n);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < n; ++i) {
      double v = (xr[i] - mean) * inv;
      if (!w.empty()) v *= w[size_t(i)];
      if (!b.empty()) v += b[size_t(i)];
      y[r * size_t(n) + size_t(i)] = v;
    }
  }
  return y;
}

// x over the shape classes, then `params` vectors of x's last dim.
std::function<std::vector<InputSpec>(ShapeClass)> rows_with_params(int params) {
  return [params](ShapeClass c) {
    std::vector<InputSpec> s;
    switch (c) {
      case ShapeClass::Empty:
        s = {{{0, 37}}};
        break;
      case ShapeClass::Scalar:  // one row of one element
        s = {{{1}}};
        break;
      case ShapeClass::Odd:
        s = {{{5, 37}}};
        break;
      case ShapeClass::NonContiguous:
        s = {{{5, 37}, InputSpec::Transposed}};
        break;
      case ShapeClass::Broadcast:
        s = {{{5, 37}, InputSpec::Expanded, {1, 37}}};
        break;
    }
    for (int i = 0; i < params; ++i) s.push_back({{s[0].shape.back()}});
    return s;
  };
}

Entry rms_entry(bool weighted) {
  Entry e;
  e.op = "rms_norm";
  e.dtypes = kFloats;
  e.shapes = rows_with_params(weighted ? 1 : 0);
  if (weighted) {
    // Over the last dim, with a weight, eps 1e-5.
    e.call = [](const std::vector<Tensor>& x) { return rms_norm(x[0], {x[0].size(-1)}, x[1], 1e-5); };
    e.oracle = [](const Inputs& in, const Tensor&) {
      return norm_ref(in.values[0], in.shapes[0].back(), in.values[1], {}, 1e-5, true);
    };
  } else {
    // Over all dims, no weight, eps 0.25.
    e.call = [](const std::vector<Tensor>& x) { return rms_norm(x[0], x[0].sizes(), Tensor(), 0.25); };
    e.oracle = [](const Inputs& in, const Tensor&) {
      int64_t n = 1;
      for (int64_t s : in.shapes[0]) n *= s;
      return norm_ref(in.values[0], n, {}, {}, 0.25, true);
    };
  }
  e.ulps = 16;
  e.perf_shapes = {{{64, 4096}}, {{4096}}};
  return e;
}

Entry layer_norm_entry() {
  Entry e;
  e.op = "layer_norm";
  e.dtypes = kFloats;
  e.shapes = rows_with_params(2);
  e.call = [](const std::vector<Tensor>& x) { return layer_norm(x[0], {x[0].size(-1)}, x[1], x[2], 1e-5); };
  e.oracle = [](const Inputs& in, const Tensor&) {
    return norm_ref(in.values[0], in.shapes[0].back(), in.values[1], in.values[2], 1e-5, false);
  };
  // The mean's cancellation costs a few more ulps than rms_norm.
  e.ulps = 32;
  e.perf_shapes = {{{64, 4096}}, {{4096}}, {{4096}}};
  return e;
}

// x [N, C, inner] (row-major values); per channel c: mean/var given, or the
// batch statistics (biased) when training.
std::vector<double> batch_norm_ref(const std::vector<double>& x, const Shape& shape, std::vector<double> mean,
                                   std::vector<double> var, const std::vector<double>& w,
                                   const std::vector<double>& b, bool training, double eps) {
  const int64_t N = shape[0], C = shape[1];
  int64_t inner = 1;
  for (size_t k = 2; k < shape.size(); ++k) inner *= shape[k];
  auto at = [&](int64_t n, int64_t c, int64_t i) { return size_t((n * C + c) * inner + i); };
  if (training) {
    mean.assign(size_t(C), 0.0);
    var.assign(size_t(C), 0.0);
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < inner; ++i) mean[size_t(c)] += x[at(n, c, i)];
      mean[size_t(c)] /= double(N * inner);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < inner; ++i) {
          const double d = x[at(n, c, i)] - mean[size_t(c)];
          var[size_t(c)] += d * d;
        }
      var[size_t(c)] /= double(N * inner);
    }
  }
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < inner; ++i)
        y[at(n, c, i)] = (x[at(n, c, i)] - mean[size_t(c)]) / std::sqrt(var[size_t(c)] + eps) * w[size_t(c)] +
                         b[size_t(c)];
  return y;
}

// x [N, C, inner] over the classes (training needs > 1 value per channel, so
// no empty or one-element case), then four [C] per-channel inputs.
std::vector<InputSpec> batch_norm_shapes(ShapeClass c) {
  std::vector<InputSpec> s;
  switch (c) {
    case ShapeClass::Empty:
    case ShapeClass::Scalar:
      return {};
    case ShapeClass::Odd:
      s = {{{4, 3, 5}}};
      break;
    case ShapeClass::NonContiguous:
      s = {{{4, 3, 5}, InputSpec::Transposed}};
      break;
    case ShapeClass::Broadcast:
      s = {{{4, 3, 5}, InputSpec::Expanded, {1, 3, 5}}};
      break;
  }
  for (int i = 0; i < 4; ++i) s.push_back({{3}});
  return s;
}

Entry batch_norm_entry(bool training) {
  Entry e;
  e.op = "batch_norm";
  e.dtypes = kFloats;
  e.shapes = batch_norm_shapes;
  // Inputs: x, weight, bias, running_mean, running_var (|values|: a variance).
  // Training leaves the running statistics out; eval uses them with eps 0.5.
  e.call = [training](const std::vector<Tensor>& x) {
    if (training) return batch_norm(x[0], Tensor(), Tensor(), x[1], x[2], true, 0.1, 1e-5);
    return batch_norm(x[0], x[3], abs(x[4]), x[1], x[2], false, 0.1, 0.5);
  };
  e.oracle = [training](const Inputs& in, const Tensor&) {
    std::vector<double> var = in.values[4];
    for (double& v : var) v = std::fabs(v);
    return batch_norm_ref(in.values[0], in.shapes[0], in.values[3], var, in.values[1], in.values[2], training,
                          training ? 1e-5 : 0.5);
  };
  e.ulps = 16;
  return e;
}

KILN_OP_TABLE({
    rms_entry(true),
    rms_entry(false),
    layer_norm_entry(),
    batch_norm_entry(true),
    batch_norm_entry(false),
});

}  // namespace
}  // namespace op_table
