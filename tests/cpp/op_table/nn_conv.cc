// Op table entries of convolution and convolution_backward_weight
// (ops/registry/conv.h): every product term of the convolution sum visited by
// a float64 loop written from the definition (forward: out[o] += w[k] *
// x[o * s - p + k * d]; transposed: out[i * s - p + k * d] += w[k] * x[i]).
#include <array>
#include <functional>

#include "kiln/conv.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

struct Case {
  const char* name;
  Shape x, w;  // batched input [N, C, *s], weight
  bool bias = true;
  std::vector<int64_t> stride{1}, padding{0}, dilation{1}, output_padding{0};
  bool transposed = false;
  int64_t groups = 1;
  bool same = false;  // conv_nd with padding="same" (stride 1)
};

int64_t at(const std::vector<int64_t>& v, int i) { return v.size() == 1 ? v[0] : v[size_t(i)]; }

// The output shape of c with batch N.
Shape out_shape(const Case& c, int64_t N) {
  const int nd = int(c.x.size()) - 2;
  Shape o{N, c.transposed ? c.w[1] * c.groups : c.w[0]};
  for (int i = 0; i < nd; ++i) {
    const int64_t s = c.x[size_t(i) + 2], k = c.w[size_t(i) + 2], d = at(c.dilation, i);
    const int64_t p = c.same ? d * (k - 1) / 2 : at(c.padding, i);
    const int64_t extra = c.same ? d * (k - 1) % 2 : 0;  // "same": odd pad on the right
    o.push_back(c.transposed ? (s - 1) * at(c.stride, i) - 2 * p + d * (k - 1) + at(c.output_padding, i) + 1
                             : (s + 2 * p + extra - d * (k - 1) - 1) / at(c.stride, i) + 1);
  }
  return o;
}

// Calls f(out_index, x_index, w_index) for every term of the sum (row-major
// flat indices), for input sizes xs and output sizes os.
void visit(const Case& c, const Shape& xs, const Shape& os,
           const std::function<void(size_t, size_t, size_t)>& f) {
  const int nd = int(xs.size()) - 2;
  const int64_t N = xs[0], G = c.groups;
  const Shape& ws = c.w;
  std::array<int64_t, 3> S{1, 1, 1}, O{1, 1, 1}, K{1, 1, 1}, st{1, 1, 1}, pd{0, 0, 0}, dl{1, 1, 1};
  for (int i = 0; i < nd; ++i) {
    const size_t j = size_t(3 - nd + i);
    S[j] = xs[size_t(i) + 2];
    O[j] = os[size_t(i) + 2];
    K[j] = ws[size_t(i) + 2];
    st[j] = at(c.stride, i);
    dl[j] = at(c.dilation, i);
    pd[j] = c.same ? dl[j] * (K[j] - 1) / 2 : at(c.padding, i);
  }
  const int64_t Cx = xs[1], Co = os[1];
  const int64_t Cx_g = Cx / G, Co_g = Co / G;
  // Forward: the window over x at output position o; transposed: the output
  // position reached from input position i (same index arithmetic, roles swapped).
  const std::array<int64_t, 3>& A = c.transposed ? S : O;  // the positions iterated
  const std::array<int64_t, 3>& B = c.transposed ? O : S;  // the side reached
  for (int64_t n = 0; n < N; ++n)
    for (int64_t co = 0; co < Co; ++co)
      for (int64_t cl = 0; cl < Cx_g; ++cl) {
        const int64_t g = co / Co_g, ci = g * Cx_g + cl;
        for (int64_t a0 = 0; a0 < A[0]; ++a0)
          for (int64_t a1 = 0; a1 < A[1]; ++a1)
            for (int64_t a2 = 0; a2 < A[2]; ++a2)
              for (int64_t k0 = 0; k0 < K[0]; ++k0)
                for (int64_t k1 = 0; k1 < K[1]; ++k1)
                  for (int64_t k2 = 0; k2 < K[2]; ++k2) {
                    const int64_t b0 = a0 * st[0] - pd[0] + k0 * dl[0], b1 = a1 * st[1] - pd[1] + k1 * dl[1],
                                  b2 = a2 * st[2] - pd[2] + k2 * dl[2];
                    if (b0 < 0 || b0 >= B[0] || b1 < 0 || b1 >= B[1] || b2 < 0 || b2 >= B[2]) continue;
                    const int64_t a = (a0 * A[1] + a1) * A[2] + a2, b = (b0 * B[1] + b1) * B[2] + b2;
                    const int64_t xsp = c.transposed ? a : b, osp = c.transposed ? b : a;
                    const int64_t kk = (k0 * K[1] + k1) * K[2] + k2;
                    // weight [C_out, C_in_g, *k]; transposed [C_in, C_out_g, *k].
                    const int64_t wi = c.transposed ? (ci * Co_g + co % Co_g) * K[0] * K[1] * K[2] + kk
                                                    : (co * Cx_g + cl) * K[0] * K[1] * K[2] + kk;
                    f(size_t((n * Co + co) * O[0] * O[1] * O[2] + osp),
                      size_t((n * Cx + ci) * S[0] * S[1] * S[2] + xsp), size_t(wi));
                  }
      }
}

Shape with_batch(Shape s, int64_t N) {
  s[0] = N;
  return s;
}

// Inputs: x (batch per class), weight, bias (when c.bias).
std::function<std::vector<InputSpec>(ShapeClass)> conv_shapes(const Case& c) {
  return [c](ShapeClass k) -> std::vector<InputSpec> {
    std::vector<InputSpec> s;
    switch (k) {
      case ShapeClass::Empty:
        s = {{with_batch(c.x, 0)}};
        break;
      case ShapeClass::Scalar:
        return {};
      case ShapeClass::Odd:
        s = {{c.x}};
        break;
      case ShapeClass::NonContiguous:
        s = {{c.x, InputSpec::Transposed}};
        break;
      case ShapeClass::Broadcast: {  // one image expanded over the batch
        s = {{c.x, InputSpec::Expanded, with_batch(c.x, 1)}};
        break;
      }
    }
    s.push_back({c.w});
    if (c.bias) s.push_back({{c.transposed ? c.w[1] * c.groups : c.w[0]}});
    return s;
  };
}

Tensor call_conv(const Case& c, const std::vector<Tensor>& x) {
  const Tensor b = c.bias ? x[2] : Tensor();
  if (c.same) return conv_nd(int(c.x.size()) - 2, x[0], x[1], b, c.stride, "same", c.dilation, c.groups);
  return convolution(x[0], x[1], b, c.stride, c.padding, c.dilation, c.transposed, c.output_padding,
                     c.groups);
}

Entry conv_entry(const Case& c) {
  Entry e;
  e.op = "convolution";
  e.dtypes = kFloats;
  e.lo = -2;
  e.hi = 2;
  e.shapes = conv_shapes(c);
  e.call = [c](const std::vector<Tensor>& x) { return call_conv(c, x); };
  e.oracle = [c](const Inputs& in, const Tensor&) {
    const Shape os = out_shape(c, in.shapes[0][0]);
    int64_t n = 1;
    for (int64_t s : os) n *= s;
    std::vector<double> y(size_t(n), 0.0);
    const int64_t inner = n == 0 ? 0 : n / (os[0] * os[1]);
    if (c.bias)
      for (size_t i = 0; i < y.size(); ++i) y[i] = in.values[2][size_t(int64_t(i) / inner % os[1])];
    visit(c, in.shapes[0], os,
          [&](size_t o, size_t xi, size_t wi) { y[o] += in.values[0][xi] * in.values[1][wi]; });
    return y;
  };
  // Sums of up to ~50 products of values in [-2, 2].
  e.ulps = 16;
  e.floor = 64;
  return e;
}

// convolution_backward_weight: inputs x and grad_output.
Entry backward_weight_entry(const Case& c) {
  Entry e;
  e.op = "convolution_backward_weight";
  e.dtypes = kFloats;
  e.lo = -2;
  e.hi = 2;
  e.shapes = [c](ShapeClass k) -> std::vector<InputSpec> {
    switch (k) {
      case ShapeClass::Empty:
        return {{with_batch(c.x, 0)}, {out_shape(c, 0)}};
      case ShapeClass::Odd:
        return {{c.x}, {out_shape(c, c.x[0])}};
      case ShapeClass::NonContiguous:
        return {{c.x, InputSpec::Transposed}, {out_shape(c, c.x[0]), InputSpec::Transposed}};
      default:
        return {};
    }
  };
  e.call = [c](const std::vector<Tensor>& x) {
    return convolution_backward_weight(x[0], x[1], c.w, c.stride, c.padding, c.dilation, c.transposed,
                                       c.output_padding, c.groups);
  };
  e.oracle = [c](const Inputs& in, const Tensor&) {
    int64_t n = 1;
    for (int64_t s : c.w) n *= s;
    std::vector<double> gw(size_t(n), 0.0);
    visit(c, in.shapes[0], in.shapes[1],
          [&](size_t o, size_t xi, size_t wi) { gw[wi] += in.values[1][o] * in.values[0][xi]; });
    return gw;
  };
  e.ulps = 16;
  e.floor = 64;
  return e;
}

const Case kCases[] = {
    {"conv1d strided dilated grouped", {2, 4, 9}, {6, 2, 3}, true, {2}, {1}, {2}, {0}, false, 2},
    {"conv2d", {2, 3, 7, 6}, {4, 3, 3, 2}, true, {2, 1}, {1, 0}, {1, 2}},
    {"conv2d depthwise", {1, 3, 5, 5}, {6, 1, 3, 3}, false, {1}, {1}, {1}, {0}, false, 3},
    {"conv2d 1x1", {2, 3, 4, 5}, {2, 3, 1, 1}, true},
    {"conv2d same", {2, 3, 5, 6}, {2, 3, 4, 3}, true, {1}, {0}, {1, 2}, {0}, false, 1, true},
    {"conv3d", {2, 2, 4, 5, 5}, {2, 1, 2, 3, 2}, true, {1, 2, 1}, {1, 1, 0}, {1, 1, 2}, {0}, false, 2},
    {"conv_transpose1d", {2, 4, 5}, {4, 3, 3}, true, {3}, {1}, {1}, {2}, true, 2},
    {"conv_transpose2d", {2, 2, 3, 4}, {2, 3, 3, 2}, true, {2, 1}, {1, 0}, {1, 2}, {1, 0}, true},
    {"conv_transpose2d op < dilation", {1, 2, 3, 3}, {2, 2, 2, 2}, false, {1}, {0}, {2}, {1}, true},
    {"conv_transpose3d", {1, 2, 2, 3, 2}, {2, 2, 2, 2, 3}, true, {2}, {0}, {1}, {1, 0, 1}, true},
};

std::vector<Entry> conv_entries() {
  std::vector<Entry> es;
  for (const Case& c : kCases) {
    es.push_back(conv_entry(c));
    if (!c.same) es.push_back(backward_weight_entry(c));
  }
  return es;
}

KILN_OP_TABLE(conv_entries());

}  // namespace
}  // namespace op_table
