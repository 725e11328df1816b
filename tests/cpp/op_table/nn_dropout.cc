// Op table entries of dropout and dropout_backward (ops/registry/dropout.h):
// the oracle draws each keep decision from kiln's public philox() (the
// reference RNG) by the rule kiln/dropout.h states, and applies torch's
// formulas in float64. Every call makes a fresh Generator of a fixed seed, so
// the gradcheck's many calls see one mask.
#include <cmath>

#include "kiln/dropout.h"
#include "kiln/random.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

constexpr uint64_t kSeed = 0x5eed0037;
constexpr uint64_t kSkip = 5;  // counters the generator spends before the draw
constexpr double kAlpha = 1.7580993408473766;

// Draw j keeps its elements when word j % 4 of philox(offset + j / 4, seed),
// read as a fraction of 2^32, is at least p.
bool kept(double p, uint64_t seed, uint64_t offset, int64_t j) {
  uint32_t w[4];
  philox(offset + uint64_t(j) / 4, seed, w);
  return double(w[j % 4]) / 4294967296.0 >= p;
}

// [0, 3, 4], -, [3, 5, 7], a transposed [3, 5, 7], [3, 5, 7] expanded from [1, 5, 7].
std::vector<InputSpec> feature_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{0, 3, 4}}};
    case ShapeClass::Scalar:
      return {};
    case ShapeClass::Odd:
      return {{{3, 5, 7}}};
    case ShapeClass::NonContiguous:
      return {{{3, 5, 7}, InputSpec::Transposed}};
    case ShapeClass::Broadcast:
      return {{{3, 5, 7}, InputSpec::Expanded, {1, 5, 7}}};
  }
  return {};
}

// Elements per draw: 1, or the product of the dims after the channel dim 1.
int64_t group_of(const Shape& s, bool feature) {
  int64_t g = 1;
  if (feature)
    for (size_t d = 2; d < s.size(); ++d) g *= s[d];
  return g;
}

// out = x * (kept ? scale : 0) [+ alpha terms]; backward: the multiplier alone.
std::vector<double> reference(const Inputs& in, double p, bool alpha, bool feature, bool backward) {
  const std::vector<double>& x = in.values[0];
  const int64_t group = group_of(in.shapes[0], feature);
  const double a = 1.0 / std::sqrt((kAlpha * kAlpha * p + 1.0) * (1.0 - p));
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const bool k = kept(p, kSeed, kSkip, int64_t(i) / group);
    const double mul = k ? (alpha ? a : 1.0 / (1.0 - p)) : 0.0;
    y[i] = x[i] * mul;
    if (alpha && !backward) y[i] += k ? kAlpha * a * p : -kAlpha * a * (1.0 - p);
  }
  return y;
}

Tensor forward(const Tensor& x, double p, bool alpha, bool feature) {
  Generator g(kSeed);
  g.advance(kSkip);
  if (feature) return alpha ? feature_alpha_dropout(x, p, true, false, &g) : dropout2d(x, p, true, false, &g);
  return alpha ? alpha_dropout(x, p, true, false, &g) : dropout(x, p, true, false, &g);
}

Entry forward_entry(double p, bool alpha, bool feature) {
  Entry e;
  e.op = "dropout";
  e.dtypes = kFloats;
  e.shapes = feature ? feature_shapes : unary_shapes;
  e.call = [=](const std::vector<Tensor>& x) { return forward(x[0], p, alpha, feature); };
  e.oracle = [=](const Inputs& in, const Tensor&) { return reference(in, p, alpha, feature, false); };
  e.ulps = 8;
  e.perf_shapes = {{{64, 4096}}};
  return e;
}

Entry backward_entry(double p, bool alpha, bool feature) {
  Entry e;
  e.op = "dropout_backward";
  e.dtypes = kFloats;
  e.shapes = feature ? feature_shapes : unary_shapes;
  e.call = [=](const std::vector<Tensor>& x) {
    DropoutMask m;
    m.p = p;
    m.alpha = alpha;
    m.group = group_of(x[0].sizes(), feature);
    m.seed = kSeed;
    m.offset = kSkip;
    return dropout_backward(x[0], m);
  };
  e.oracle = [=](const Inputs& in, const Tensor&) { return reference(in, p, alpha, feature, true); };
  e.ulps = 4;
  e.perf_shapes = {{{64, 4096}}};
  return e;
}

KILN_OP_TABLE({forward_entry(0.3, false, false), forward_entry(0.4, false, true),
               forward_entry(0.2, true, false), forward_entry(0.5, true, true),
               backward_entry(0.3, false, false), backward_entry(0.6, true, true)});

}  // namespace
}  // namespace op_table
