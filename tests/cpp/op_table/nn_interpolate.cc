// Op table entries of the resampling ops (ops/registry/interpolate.h): a
// float64 oracle that builds each spatial dim's dense weight matrix from
// torch's source-index formulas and sums over every input position; the
// backward entries apply its transpose. Sizes are coprime where nearest's
// floor could tie, so float32 index arithmetic picks the same source.
#include <algorithm>
#include <cmath>

#include "kiln/interpolate.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;
using Matrix = std::vector<std::vector<double>>;  // [out][in]

enum class M { Nearest, NearestExact, Linear, Cubic, Area };

double keys(double x, double a) {  // the cubic convolution kernel
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// nd: the spatial rank (torch's same-size and double-size shortcuts of
// nearest are its 2-d kernel's only).
Matrix weights(M m, size_t nd, int64_t in, int64_t out, bool ac, bool aa, double sc) {
  Matrix w(size_t(out), std::vector<double>(size_t(in), 0.0));
  const double ratio = sc > 0 ? 1.0 / sc : double(in) / double(out);
  const double scale = ac ? (out > 1 ? double(in - 1) / double(out - 1) : 0.0) : ratio;
  for (int64_t o = 0; o < out; ++o) {
    auto& row = w[size_t(o)];
    if (aa) {  // filter stretched by the scale when downsampling, normalized
      const double support = (m == M::Cubic ? 2.0 : 1.0) * std::max(scale, 1.0);
      const double center = scale * (double(o) + 0.5), inv = 1.0 / std::max(scale, 1.0);
      const int64_t lo = std::max<int64_t>(int64_t(center - support + 0.5), 0);
      const int64_t hi = std::min<int64_t>(int64_t(center + support + 0.5), in);
      double total = 0;
      for (int64_t i = lo; i < hi; ++i) {
        const double x = (double(i) - center + 0.5) * inv;
        row[size_t(i)] = m == M::Cubic ? keys(x, -0.5) : std::max(0.0, 1.0 - std::fabs(x));
        total += row[size_t(i)];
      }
      for (double& v : row) v /= total;
      continue;
    }
    switch (m) {
      case M::Nearest:
      case M::NearestExact: {
        int64_t s = m == M::NearestExact       ? int64_t(std::floor((double(o) + 0.5) * ratio))
                    : nd == 2 && out == in     ? o
                    : nd == 2 && out == 2 * in ? o / 2
                                               : int64_t(std::floor(double(o) * ratio));
        row[size_t(std::min(s, in - 1))] = 1;
        break;
      }
      case M::Linear: {
        if (out == in) {
          row[size_t(o)] = 1;
          break;
        }
        const double real = ac ? scale * double(o) : std::max(scale * (double(o) + 0.5) - 0.5, 0.0);
        const int64_t i0 = std::min(int64_t(std::floor(real)), in - 1);
        const double l = std::clamp(real - double(i0), 0.0, 1.0);
        row[size_t(i0)] += 1 - l;
        row[size_t(std::min(i0 + 1, in - 1))] += l;
        break;
      }
      case M::Cubic: {
        const double real = ac ? scale * double(o) : scale * (double(o) + 0.5) - 0.5;
        const int64_t i0 = std::min(int64_t(std::floor(real)), in - 1);
        const double t = std::clamp(real - double(i0), 0.0, 1.0);
        for (int k = 0; k < 4; ++k)
          row[size_t(std::clamp<int64_t>(i0 - 1 + k, 0, in - 1))] += keys(t + 1 - k, -0.75);
        break;
      }
      case M::Area: {
        const int64_t s = int64_t(std::floor(double(o * in) / double(out)));
        const int64_t e = int64_t(std::ceil(double((o + 1) * in) / double(out)));
        for (int64_t i = s; i < e; ++i) row[size_t(i)] = 1.0 / double(e - s);
        break;
      }
    }
  }
  return w;
}

struct Case {
  const char* op;
  M mode;
  Shape in, out;  // spatial sizes of the forward
  bool ac = false, aa = false, backward = false;
  std::vector<double> scales = {};
};

// y[n, c, O] = sum over I of prod_d W_d[o_d][i_d] * x[n, c, I] (the backward:
// the transpose), x and y row-major with NC planes of the spatial shapes.
std::vector<double> oracle(const Case& k, const std::vector<double>& x, const Shape& xshape) {
  const size_t nd = k.in.size();
  std::vector<Matrix> w;
  for (size_t d = 0; d < nd; ++d)
    w.push_back(weights(k.mode, nd, k.in[d], k.out[d], k.ac, k.aa, k.scales.empty() ? 0.0 : k.scales[d]));
  int64_t nin = 1, nout = 1;
  for (size_t d = 0; d < nd; ++d) nin *= k.in[d], nout *= k.out[d];
  const int64_t planes = xshape[0] * xshape[1];
  auto coord = [&](int64_t flat, const Shape& s, size_t d) {
    int64_t r = flat;
    for (size_t e = nd; e-- > d + 1;) r /= s[e];
    return r % s[d];
  };
  const int64_t nsrc = k.backward ? nout : nin, ndst = k.backward ? nin : nout;
  std::vector<double> y(size_t(planes * ndst), 0.0);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t O = 0; O < nout; ++O)
      for (int64_t I = 0; I < nin; ++I) {
        double wt = 1;
        for (size_t d = 0; d < nd; ++d) wt *= w[d][size_t(coord(O, k.out, d))][size_t(coord(I, k.in, d))];
        if (wt == 0) continue;
        if (k.backward)
          y[size_t(p * ndst + I)] += wt * x[size_t(p * nsrc + O)];
        else
          y[size_t(p * ndst + O)] += wt * x[size_t(p * nsrc + I)];
      }
  return y;
}

Entry entry(const Case& k) {
  Entry e;
  e.op = k.op;
  e.dtypes = kFloats;
  const Shape spatial = k.backward ? k.out : k.in;
  e.shapes = [spatial](ShapeClass c) -> std::vector<InputSpec> {
    auto with = [&](Shape lead) {
      lead.insert(lead.end(), spatial.begin(), spatial.end());
      return lead;
    };
    switch (c) {
      case ShapeClass::Empty:
        return {{with({0, 3})}};
      case ShapeClass::Scalar:
        return {};
      case ShapeClass::Odd:
        return {{with({2, 3})}};
      case ShapeClass::NonContiguous:
        return {{with({2, 3}), InputSpec::Transposed}};
      case ShapeClass::Broadcast:
        return {{with({2, 3}), InputSpec::Expanded, with({2, 1})}};
    }
    return {};
  };
  e.call = [k](const std::vector<Tensor>& x) {
    Shape in_full{x[0].size(0), x[0].size(1)};
    in_full.insert(in_full.end(), k.in.begin(), k.in.end());
    const std::string op = k.op;
    const bool exact = k.mode == M::NearestExact;
    if (op == "upsample_nearest") return upsample_nearest(x[0], k.out, k.scales, exact);
    if (op == "upsample_nearest_backward") return upsample_nearest_backward(x[0], in_full, k.scales, exact);
    if (op == "upsample_linear") return upsample_linear(x[0], k.out, k.ac, k.scales, k.aa);
    if (op == "upsample_linear_backward")
      return upsample_linear_backward(x[0], in_full, k.ac, k.scales, k.aa);
    if (op == "upsample_bicubic2d") return upsample_bicubic2d(x[0], k.out, k.ac, k.scales, k.aa);
    if (op == "upsample_bicubic2d_backward")
      return upsample_bicubic2d_backward(x[0], in_full, k.ac, k.scales, k.aa);
    if (op == "upsample_area") return upsample_area(x[0], k.out);
    return upsample_area_backward(x[0], in_full);
  };
  e.oracle = [k](const Inputs& in, const Tensor&) { return oracle(k, in.values[0], in.shapes[0]); };
  e.ulps = 64;  // sums of up to 16 * 3 weighted terms; float index arithmetic in float32
  e.floor = 4;
  return e;
}

std::vector<Entry> all() {
  const std::vector<Case> cases = {
      {"upsample_nearest", M::Nearest, {7}, {12}},
      {"upsample_nearest", M::Nearest, {5, 7}, {8, 4}},
      {"upsample_nearest", M::Nearest, {3, 4, 5}, {5, 3, 7}},
      {"upsample_nearest", M::Nearest, {5, 7}, {8, 4}, false, false, false, {1.7, 0.65}},
      {"upsample_nearest", M::NearestExact, {5, 7}, {8, 4}},
      {"upsample_nearest", M::Nearest, {4}, {8}},
      {"upsample_nearest", M::Nearest, {3}, {3}, false, false, false, {1.3}},
      {"upsample_nearest", M::Nearest, {3, 4}, {3, 5}, false, false, false, {1.3, 1.3}},
      {"upsample_nearest_backward", M::Nearest, {5, 7}, {8, 4}, false, false, true},
      {"upsample_nearest_backward", M::NearestExact, {7}, {12}, false, false, true},
      {"upsample_nearest_backward", M::Nearest, {3, 4, 5}, {5, 3, 7}, false, false, true},
      {"upsample_linear", M::Linear, {7}, {12}},
      {"upsample_linear", M::Linear, {7}, {4}, true},
      {"upsample_linear", M::Linear, {5, 7}, {8, 4}},
      {"upsample_linear", M::Linear, {5, 7}, {8, 4}, true},
      {"upsample_linear", M::Linear, {5, 7}, {8, 4}, false, false, false, {1.7, 0.65}},
      {"upsample_linear", M::Linear, {3, 4, 5}, {5, 3, 7}},
      {"upsample_linear", M::Linear, {3, 4, 5}, {5, 4, 1}, true},
      {"upsample_linear", M::Linear, {9, 7}, {4, 3}, false, true},
      {"upsample_linear", M::Linear, {9, 7}, {4, 10}, true, true},
      {"upsample_linear_backward", M::Linear, {5, 7}, {8, 4}, false, false, true},
      {"upsample_linear_backward", M::Linear, {7}, {12}, true, false, true},
      {"upsample_linear_backward", M::Linear, {3, 4, 5}, {5, 3, 7}, false, false, true},
      {"upsample_linear_backward", M::Linear, {9, 7}, {4, 3}, false, true, true},
      {"upsample_bicubic2d", M::Cubic, {5, 7}, {8, 4}},
      {"upsample_bicubic2d", M::Cubic, {5, 7}, {8, 4}, true},
      {"upsample_bicubic2d", M::Cubic, {5, 7}, {8, 4}, false, false, false, {1.7, 0.65}},
      {"upsample_bicubic2d", M::Cubic, {9, 7}, {4, 3}, false, true},
      {"upsample_bicubic2d_backward", M::Cubic, {5, 7}, {8, 4}, false, false, true},
      {"upsample_bicubic2d_backward", M::Cubic, {5, 7}, {8, 1}, true, false, true},
      {"upsample_bicubic2d_backward", M::Cubic, {9, 7}, {4, 3}, false, true, true},
      {"upsample_area", M::Area, {7}, {3}},
      {"upsample_area", M::Area, {5, 7}, {3, 4}},
      {"upsample_area", M::Area, {3, 4, 5}, {2, 3, 2}},
      {"upsample_area", M::Area, {5, 7}, {8, 9}},
      {"upsample_area_backward", M::Area, {5, 7}, {3, 4}, false, false, true},
      {"upsample_area_backward", M::Area, {3, 4, 5}, {2, 3, 7}, false, false, true},
  };
  std::vector<Entry> es;
  for (const Case& k : cases) es.push_back(entry(k));
  return es;
}

KILN_OP_TABLE(all());

}  // namespace
}  // namespace op_table
