// Op table entries of grid_sampler and grid_sampler_backward
// (ops/registry/interpolate.h): a float64 oracle written from torch's
// definition of F.grid_sample (unnormalize, pad, interpolate, zeros outside).
// The padded coordinate's slope (0 or +-1) is read off the padding function
// itself by a central difference, so the grid's gradient does not reuse the
// kernel's clip and reflect rules. The backward entry returns
// [grad_input.flatten(), grad_grid.flatten()] against the oracle's transposed
// weights and analytic derivatives.
#include <cmath>
#include <string>

#include "kiln/interpolate.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

struct Case {
  std::string mode, padding;
  bool ac;
  int nd;
  bool backward = false;
};

double unnormalize(double g, int64_t n, bool ac) {
  return ac ? (g + 1) / 2 * double(n - 1) : ((g + 1) * double(n) - 1) / 2;
}

double reflect(double c, double twice_lo, double twice_hi) {
  if (twice_lo == twice_hi) return 0;
  const double lo = twice_lo / 2, span = (twice_hi - twice_lo) / 2;
  c = std::fabs(c - lo);
  const double extra = std::fmod(c, span);
  return std::fmod(std::floor(c / span), 2.0) == 0 ? extra + lo : span - extra + lo;
}

double padded(double c, int64_t n, const Case& k) {
  if (k.padding == "border") return std::min(double(n - 1), std::max(c, 0.0));
  if (k.padding == "reflection") {
    c = k.ac ? reflect(c, 0, 2.0 * double(n - 1)) : reflect(c, -1, 2.0 * double(n) - 1);
    return std::min(double(n - 1), std::max(c, 0.0));
  }
  return c;
}

// d padded / d c: 0 or +-1, read off by a central difference. At a clip's
// corner (slope 1/2 there) it is 0, as torch's rule (float16 grids land on
// corners such as -0.75).
double padded_slope(double c, int64_t n, const Case& k) {
  const double h = 1e-7, s = (padded(c + h, n, k) - padded(c - h, n, k)) / (2 * h);
  return std::fabs(s) < 0.75 ? 0.0 : s > 0 ? 1.0 : -1.0;
}

double keys(double x) {  // A = -0.75, x >= 0
  const double a = -0.75;
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}
double dkeys(double x) {
  const double a = -0.75;
  if (x <= 1) return 3 * (a + 2) * x * x - 2 * (a + 3) * x;
  if (x < 2) return 3 * a * x * x - 10 * a * x + 8 * a;
  return 0;
}

// One grid point's taps in a plane of `size` (nd dims, row-major): offset,
// weight, and d weight / d grid value per spatial dim.
struct Tap {
  int64_t off;
  double w;
  double dw[3];
};

std::vector<Tap> taps(const Case& k, const int64_t* size, const double* g /* x first */) {
  const int nd = k.nd;
  double c[3], mult[3];
  for (int d = 0; d < nd; ++d) {
    const int64_t n = size[d];
    const double u = unnormalize(g[nd - 1 - d], n, k.ac);
    const double du = k.ac ? double(n - 1) / 2 : double(n) / 2;
    if (k.mode == "bicubic") {
      c[d] = u, mult[d] = du;
    } else {
      c[d] = padded(u, n, k), mult[d] = du * padded_slope(u, n, k);
    }
  }
  std::vector<Tap> out;
  auto offset = [&](const int64_t* idx) -> int64_t {
    int64_t off = 0;
    for (int d = 0; d < nd; ++d) {
      if (idx[d] < 0 || idx[d] >= size[d]) return -1;
      off = off * size[d] + idx[d];
    }
    return off;
  };
  if (k.mode == "nearest") {
    int64_t idx[3];
    for (int d = 0; d < nd; ++d) idx[d] = int64_t(std::nearbyint(c[d]));
    if (const int64_t off = offset(idx); off >= 0) out.push_back({off, 1, {0, 0, 0}});
    return out;
  }
  const int taps_per_dim = k.mode == "bicubic" ? 4 : 2;
  int total = 1;
  for (int d = 0; d < nd; ++d) total *= taps_per_dim;
  for (int t = 0; t < total; ++t) {
    int64_t idx[3];
    double w[3], dw[3];
    for (int d = nd - 1, r = t; d >= 0; --d, r /= taps_per_dim) {
      const int j = r % taps_per_dim;
      const double f = std::floor(c[d]), frac = c[d] - f;
      if (k.mode == "bicubic") {
        // taps f - 1 .. f + 2 at distances frac + 1, frac, 1 - frac, 2 - frac
        const double dist = std::fabs(frac - double(j - 1));
        w[d] = keys(dist);
        dw[d] = dkeys(dist) * (frac >= double(j - 1) ? 1.0 : -1.0);
        idx[d] = int64_t(padded(f - 1 + j, size[d], k));
      } else {
        w[d] = j ? frac : 1 - frac;
        dw[d] = j ? 1.0 : -1.0;
        idx[d] = int64_t(f) + j;
      }
    }
    const int64_t off = offset(idx);
    if (off < 0) continue;
    Tap tap{off, 1, {0, 0, 0}};
    for (int d = 0; d < nd; ++d) tap.w *= w[d];
    for (int d = 0; d < nd; ++d) {
      double p = dw[d] * mult[d];
      for (int e = 0; e < nd; ++e)
        if (e != d) p *= w[e];
      tap.dw[d] = p;
    }
    out.push_back(tap);
  }
  return out;
}

// x [N, C, *in], grid [N, *out, nd] (and go [N, C, *out] for the backward).
std::vector<double> oracle(const Case& k, const Inputs& in) {
  const Shape& xs = in.shapes[0];
  const Shape& gs = in.shapes[1];
  const int64_t N = xs[0], C = xs[1];
  int64_t Q = 1, P = 1;
  for (int d = 0; d < k.nd; ++d) Q *= xs[size_t(d) + 2], P *= gs[size_t(d) + 1];
  const std::vector<double>& x = in.values[0];
  const std::vector<double>& g = in.values[1];
  std::vector<double> out(size_t(k.backward ? N * C * Q + N * P * k.nd : N * C * P), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < P; ++p) {
      const std::vector<Tap> ts = taps(k, xs.data() + 2, g.data() + (n * P + p) * k.nd);
      for (int64_t c = 0; c < C; ++c) {
        const double* plane = x.data() + (n * C + c) * Q;
        if (!k.backward) {
          double s = 0;
          for (const Tap& t : ts) s += t.w * plane[t.off];
          out[size_t((n * C + c) * P + p)] = s;
          continue;
        }
        const double go = in.values[2][size_t((n * C + c) * P + p)];
        for (const Tap& t : ts) {
          out[size_t((n * C + c) * Q + t.off)] += t.w * go;
          for (int d = 0; d < k.nd; ++d)
            out[size_t(N * C * Q + (n * P + p) * k.nd + (k.nd - 1 - d))] += t.dw[d] * plane[t.off] * go;
        }
      }
    }
  return out;
}

Entry entry(const Case& k) {
  Entry e;
  e.op = k.backward ? "grid_sampler_backward" : "grid_sampler";
  e.dtypes = kFloats;
  e.lo = -1.3, e.hi = 1.3;  // grid points inside and a little outside [-1, 1]
  const Shape x = k.nd == 2 ? Shape{2, 3, 5, 4} : Shape{2, 2, 3, 4, 5};
  const Shape g = k.nd == 2 ? Shape{2, 3, 4, 2} : Shape{2, 2, 3, 2, 3};
  Shape go{x[0], x[1]};
  go.insert(go.end(), g.begin() + 1, g.end() - 1);
  e.shapes = [=](ShapeClass c) -> std::vector<InputSpec> {
    auto with_n = [](Shape s, int64_t n) {
      s[0] = n;
      return s;
    };
    std::vector<InputSpec> specs;
    switch (c) {
      case ShapeClass::Empty:
        specs = {{with_n(x, 0)}, {with_n(g, 0)}, {with_n(go, 0)}};
        break;
      case ShapeClass::Scalar:
        return {};
      case ShapeClass::Odd:
        specs = {{x}, {g}, {go}};
        break;
      case ShapeClass::NonContiguous:
        specs = {{x, InputSpec::Transposed}, {g, InputSpec::Transposed}, {go, InputSpec::Transposed}};
        break;
      case ShapeClass::Broadcast:
        specs = {{x, InputSpec::Expanded, with_n(x, 1)}, {g}, {go}};
        break;
    }
    if (!k.backward) specs.pop_back();
    return specs;
  };
  e.call = [k](const std::vector<Tensor>& t) {
    if (!k.backward) return grid_sample(t[0], t[1], k.mode, k.padding, k.ac);
    auto [gi, gg] = grid_sample_backward(t[2], t[0], t[1], k.mode, k.padding, k.ac);
    const std::vector<Tensor> parts{gi.flatten(), gg.flatten()};
    return cat(parts, 0);
  };
  e.oracle = [k](const Inputs& in, const Tensor&) { return oracle(k, in); };
  e.ulps = 64;  // float coordinate arithmetic, sums of up to 16 taps (times C for the grid's gradient)
  e.floor = 8;
  return e;
}

std::vector<Entry> all() {
  const std::vector<Case> cases = {
      {"bilinear", "zeros", false, 2},
      {"bilinear", "zeros", true, 2},
      {"bilinear", "border", false, 2},
      {"bilinear", "reflection", false, 2},
      {"bilinear", "reflection", true, 2},
      {"nearest", "zeros", false, 2},
      {"nearest", "reflection", true, 2},
      {"bicubic", "zeros", false, 2},
      {"bicubic", "border", true, 2},
      {"bicubic", "reflection", false, 2},
      {"bilinear", "zeros", false, 3},
      {"bilinear", "reflection", true, 3},
      {"nearest", "border", false, 3},
      {"bilinear", "zeros", false, 2, true},
      {"bilinear", "reflection", false, 2, true},
      {"bicubic", "border", false, 2, true},
      {"bicubic", "reflection", true, 2, true},
      {"bilinear", "border", true, 3, true},
      {"nearest", "zeros", false, 3, true},
  };
  std::vector<Entry> es;
  for (const Case& k : cases) es.push_back(entry(k));
  return es;
}

KILN_OP_TABLE(all());

}  // namespace
}  // namespace op_table
