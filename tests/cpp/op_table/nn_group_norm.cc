// Op table entries of group_norm and group_norm_backward
// (ops/registry/group_norm.h): float64 loops written from the formulas.
#include <cmath>

#include "kiln/group_norm.h"
#include "kiln/shape.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

constexpr int64_t kGroups = 3;

// x [N, C, *] -> (N, C, inner).
std::array<int64_t, 3> nci(const Shape& s) {
  int64_t inner = 1;
  for (size_t k = 2; k < s.size(); ++k) inner *= s[k];
  return {s[0], s[1], inner};
}

// Per (n, group): mean and 1 / sqrt(biased var + eps) of its C/G * inner values.
void group_stats(const std::vector<double>& x, const Shape& s, int64_t G, double eps,
                 std::vector<double>& mean, std::vector<double>& rstd) {
  const auto [N, C, inner] = nci(s);
  const int64_t len = C / G * inner;
  mean.assign(size_t(N * G), 0.0);
  rstd.assign(size_t(N * G), 0.0);
  for (int64_t i = 0; i < N * G; ++i) {
    double m = 0, v = 0;
    for (int64_t j = 0; j < len; ++j) m += x[size_t(i * len + j)];
    m /= double(len);
    for (int64_t j = 0; j < len; ++j) v += (x[size_t(i * len + j)] - m) * (x[size_t(i * len + j)] - m);
    mean[size_t(i)] = m;
    rstd[size_t(i)] = 1.0 / std::sqrt(v / double(len) + eps);
  }
}

// x [N, 6, *] over the classes (3 groups of 2 channels), then weight and bias [6].
std::vector<InputSpec> group_shapes(ShapeClass c) {
  std::vector<InputSpec> s;
  switch (c) {
    case ShapeClass::Empty:
      s = {{{0, 6, 5}}};
      break;
    case ShapeClass::Scalar:  // one value per channel, 2 per group
      s = {{{1, 6}}};
      break;
    case ShapeClass::Odd:
      s = {{{4, 6, 5}}};
      break;
    case ShapeClass::NonContiguous:
      s = {{{4, 6, 2, 3}, InputSpec::Transposed}};
      break;
    case ShapeClass::Broadcast:
      s = {{{4, 6, 5}, InputSpec::Expanded, {1, 6, 5}}};
      break;
  }
  s.push_back({{6}});
  s.push_back({{6}});
  return s;
}

Entry group_norm_entry() {
  Entry e;
  e.op = "group_norm";
  e.dtypes = kFloats;
  e.shapes = group_shapes;
  // Inputs: x, weight, bias; eps 1e-5.
  e.call = [](const std::vector<Tensor>& x) { return group_norm(x[0], kGroups, x[1], x[2], 1e-5); };
  e.oracle = [](const Inputs& in, const Tensor&) {
    const Shape& s = in.shapes[0];
    const auto [N, C, inner] = nci(s);
    std::vector<double> mean, rstd, y(in.values[0].size());
    group_stats(in.values[0], s, kGroups, 1e-5, mean, rstd);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < inner; ++i) {
          const size_t k = size_t((n * C + c) * inner + i), st = size_t(n * kGroups + c / (C / kGroups));
          y[k] = (in.values[0][k] - mean[st]) * rstd[st] * in.values[1][size_t(c)] + in.values[2][size_t(c)];
        }
    return y;
  };
  e.ulps = 16;
  return e;
}

// grad_out and x [N, 6, 5], mean and rstd [N, 3] (rstd made positive), weight [6].
std::vector<InputSpec> backward_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{0, 6, 5}}, {{0, 6, 5}}, {{0, 3}}, {{0, 3}}, {{6}}};
    case ShapeClass::Scalar:
      return {{{1, 6}}, {{1, 6}}, {{1, 3}}, {{1, 3}}, {{6}}};
    case ShapeClass::Odd:
      return {{{4, 6, 5}}, {{4, 6, 5}}, {{4, 3}}, {{4, 3}}, {{6}}};
    case ShapeClass::NonContiguous:
      return {
          {{4, 6, 5}, InputSpec::Transposed}, {{4, 6, 5}, InputSpec::Transposed}, {{4, 3}}, {{4, 3}}, {{6}}};
    case ShapeClass::Broadcast:
      return {{{4, 6, 5}, InputSpec::Expanded, {1, 6, 5}}, {{4, 6, 5}}, {{4, 3}}, {{4, 3}}, {{6}}};
  }
  return {};
}

// torch's native_group_norm_backward for any mean and rstd: with
// ds_g = sum w*g*x and db_g = sum w*g over a group,
// dx = rstd*w*g + c2*x + c3, c2 = (db_g*mean - ds_g)*rstd^3/len,
// c3 = -c2*mean - db_g*rstd/len; dw = sum_(n, hw) g*(x - mean)*rstd;
// db = sum_(n, hw) g. The entry's output is [dx, dw, db] flattened and joined.
Entry group_norm_backward_entry() {
  Entry e;
  e.op = "group_norm_backward";
  e.dtypes = kFloats;
  e.shapes = backward_shapes;
  e.condition = [](size_t input, const Shape&, std::vector<double>& v) {
    if (input == 3)
      for (double& r : v) r = 0.5 + std::fabs(r) / 4;
  };
  e.call = [](const std::vector<Tensor>& x) {
    auto [dx, dw, db] = group_norm_backward(x[0], x[1], x[2], x[3], x[4], kGroups);
    const Tensor parts[] = {dx.reshape({-1}), dw, db};
    return cat(parts);
  };
  e.oracle = [](const Inputs& in, const Tensor&) {
    const auto [N, C, inner] = nci(in.shapes[0]);
    const int64_t D = C / kGroups, len = D * inner;
    const auto &g = in.values[0], &x = in.values[1], &m = in.values[2], &w = in.values[4];
    std::vector<double> r = in.values[3];
    std::vector<double> out(size_t(N * C * inner + 2 * C), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t gr = 0; gr < kGroups; ++gr) {
        const size_t st = size_t(n * kGroups + gr);
        double dsg = 0, dbg = 0;
        for (int64_t d = 0; d < D; ++d)
          for (int64_t i = 0; i < inner; ++i) {
            const int64_t c = gr * D + d;
            const size_t k = size_t((n * C + c) * inner + i);
            dsg += w[size_t(c)] * g[k] * x[k];
            dbg += w[size_t(c)] * g[k];
            out[size_t(N * C * inner + c)] += g[k] * (x[k] - m[st]) * r[st];
            out[size_t(N * C * inner + C + c)] += g[k];
          }
        const double c2 = (dbg * m[st] - dsg) * r[st] * r[st] * r[st] / double(len);
        const double c3 = -c2 * m[st] - dbg * r[st] / double(len);
        for (int64_t d = 0; d < D; ++d)
          for (int64_t i = 0; i < inner; ++i) {
            const int64_t c = gr * D + d;
            const size_t k = size_t((n * C + c) * inner + i);
            out[k] = r[st] * w[size_t(c)] * g[k] + c2 * x[k] + c3;
          }
      }
    return out;
  };
  e.ulps = 64;
  e.floor = 4;
  return e;
}

KILN_OP_TABLE({group_norm_entry(), group_norm_backward_entry()});

}  // namespace
}  // namespace op_table
