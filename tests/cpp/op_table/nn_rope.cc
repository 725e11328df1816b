// Op table entries of the rotary-embedding ops (ops/registry/nn.h):
// rope_inv_freq under each scaling rule, the cos/sin tables (from positions,
// from a start, into out) and the rotation (half-split and interleaved, partial
// rotary dims, functional and in place on a strided view), in float64.
#include <cmath>
#include <numbers>

#include "kiln/nn.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

// ---- rope_inv_freq: the input only gives the size: [h] -> rotary_dim 2h ----

double inv_freq_ref(int64_t i, int64_t dim, double theta, const RopeScaling& sc) {
  const double f = 1.0 / std::pow(theta, double(2 * i) / double(dim));
  if (sc.kind == RopeScaling::Kind::Linear) return f / sc.factor;
  if (sc.kind == RopeScaling::Kind::None) return f;
  const double old_len = double(sc.original_max_position_embeddings);
  const double wl = 2 * std::numbers::pi / f;
  if (wl > old_len / sc.low_freq_factor) return f / sc.factor;
  if (wl < old_len / sc.high_freq_factor) return f;
  const double smooth = (old_len / wl - sc.low_freq_factor) / (sc.high_freq_factor - sc.low_freq_factor);
  return (1 - smooth) * f / sc.factor + smooth * f;
}

Entry inv_freq_entry(RopeScaling sc, double theta) {
  Entry e;
  e.op = "rope_inv_freq";
  e.dtypes = {DType::Float32};
  e.shapes = [](ShapeClass c) -> std::vector<InputSpec> {
    if (c == ShapeClass::Scalar) return {{{1}}};
    if (c == ShapeClass::Odd) return {{{37}}};
    if (c == ShapeClass::Broadcast) return {{{64}}};  // rotary_dim 128: llama3's blend band
    return {};
  };
  // A factory (no tensor argument): made on the CPU, moved to where the walk runs.
  e.call = [sc, theta](const std::vector<Tensor>& x) {
    return rope_inv_freq(2 * x[0].size(0), theta, sc).to(x[0].device());
  };
  e.oracle = [sc, theta](const Inputs& in, const Tensor&) {
    const int64_t h = in.shapes[0][0];
    std::vector<double> y(static_cast<size_t>(h));
    for (int64_t i = 0; i < h; ++i) y[size_t(i)] = inv_freq_ref(i, 2 * h, theta, sc);
    return y;
  };
  e.ulps = 8;  // kiln raises theta to the power in float32, as Hugging Face
  return e;
}

RopeScaling scaling(RopeScaling::Kind kind, double factor) {
  RopeScaling s;
  s.kind = kind;
  s.factor = factor;
  return s;
}

// ---- rope_cos_sin: inputs positions [T] (truncated to int64), inv_freq [h] ----

std::vector<InputSpec> cos_sin_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{0}}, {{5}}};
    case ShapeClass::Scalar:
      return {{{1}}, {{1}}};
    case ShapeClass::Odd:
      return {{{5}}, {{37}}};
    case ShapeClass::NonContiguous:
      return {{{5}, InputSpec::Strided}, {{37}, InputSpec::Strided}};
    case ShapeClass::Broadcast:
      return {{{5}, InputSpec::Expanded, {1}}, {{37}}};
  }
  return {};
}

enum class CosSinForm { Positions, Start, Out };

Entry cos_sin_entry(CosSinForm form, bool want_sin) {
  Entry e;
  e.op = "rope_cos_sin";
  e.dtypes = kFloats;
  e.lo = -40;
  e.hi = 40;
  e.shapes = cos_sin_shapes;
  constexpr int64_t kStart = 3;
  e.call = [form, want_sin](const std::vector<Tensor>& x) {
    const int64_t T = x[0].size(0), h = x[1].size(0);
    if (form == CosSinForm::Positions) {
      const RopeTables t = rope_cos_sin(x[0].to(DType::Int64), x[1]);
      return want_sin ? t.sin : t.cos;
    }
    if (form == CosSinForm::Start) {
      const RopeTables t = rope_cos_sin(kStart, T, x[1]);
      return want_sin ? t.sin : t.cos;
    }
    const Tensor c = empty({T, h}, DType::Float32, x[1].device()), s = empty({T, h}, DType::Float32, x[1].device());
    rope_cos_sin_out(kStart, x[1].to(DType::Float32).contiguous(), c, s);
    return want_sin ? s : c;
  };
  e.oracle = [form, want_sin](const Inputs& in, const Tensor&) {
    std::vector<double> y;
    const std::vector<double>& pos = in.values[0];
    for (size_t t = 0; t < pos.size(); ++t) {
      const double p = form == CosSinForm::Positions ? std::trunc(pos[t]) : double(kStart + int64_t(t));
      for (double f : in.values[1]) {
        const double a = p * double(float(f));  // inv_freq is float32
        y.push_back(want_sin ? std::sin(a) : std::cos(a));
      }
    }
    return y;
  };
  e.ulps = 1;
  e.floor = 1;
  return e;
}

// ---- apply_rotary_emb: x [T, H, D] (or [T, D]), cos/sin [T, half] ----

std::vector<InputSpec> rotary_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{0, 2, 8}}, {{0, 3}}, {{0, 3}}};
    case ShapeClass::Scalar:
      return {{{1, 2}}, {{1, 1}}, {{1, 1}}};
    case ShapeClass::Odd:  // half 4: rotary_dim 8 of D = 10
      return {{{5, 3, 10}}, {{5, 4}}, {{5, 4}}};
    case ShapeClass::NonContiguous:
      return {
          {{5, 3, 10}, InputSpec::Transposed}, {{5, 4}, InputSpec::Transposed}, {{5, 4}, InputSpec::Strided}};
    case ShapeClass::Broadcast:
      return {{{5, 3, 10}, InputSpec::Expanded, {1, 3, 10}},
              {{5, 4}, InputSpec::Expanded, {1, 4}},
              {{5, 4}, InputSpec::Expanded, {5, 1}}};
  }
  return {};
}

std::vector<double> rotary_ref(const Inputs& in, bool interleaved) {
  std::vector<double> y = in.values[0];
  const Shape& xs = in.shapes[0];
  const int64_t T = xs[0], D = xs.back(), half = in.shapes[1][1];
  const int64_t per_t = T ? int64_t(y.size()) / T : 0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t v = 0; v < per_t / D; ++v) {
      double* x = y.data() + t * per_t + v * D;
      for (int64_t i = 0; i < half; ++i) {
        const double c = double(float(in.values[1][size_t(t * half + i)]));  // float32 tables
        const double s = double(float(in.values[2][size_t(t * half + i)]));
        const int64_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + half;
        const double xa = x[a], xb = x[b];
        x[a] = xa * c - xb * s;
        x[b] = xb * c + xa * s;
      }
    }
  return y;
}

Entry rotary_entry(bool interleaved, bool in_place_strided) {
  Entry e;
  e.op = "apply_rotary_emb";
  e.dtypes = kFloats;
  e.lo = -2;
  e.hi = 2;
  e.shapes = rotary_shapes;
  e.call = [interleaved, in_place_strided](const std::vector<Tensor>& x) {
    if (!in_place_strided || x[0].dim() != 3) return apply_rotary_emb(x[0], x[1], x[2], interleaved);
    // In place on a [T, H, D] view of an [H, T, D] buffer (unit-stride rows).
    const Tensor buf = empty({x[0].size(1), x[0].size(0), x[0].size(2)}, x[0].dtype(), x[0].device());
    Tensor y = buf.transpose(0, 1);
    y.copy_(x[0]);
    apply_rotary_emb_(y, x[1], x[2], interleaved);
    return y;
  };
  e.oracle = [interleaved](const Inputs& in, const Tensor&) { return rotary_ref(in, interleaved); };
  // Products of terms up to 4 that may cancel: tolerance relative to 8.
  e.ulps = 4;
  e.floor = 8;
  return e;
}

KILN_OP_TABLE({
    inv_freq_entry(RopeScaling{}, 10000.0),
    inv_freq_entry(scaling(RopeScaling::Kind::Linear, 4.0), 10000.0),
    inv_freq_entry(scaling(RopeScaling::Kind::Llama3, 8.0), 500000.0),
    cos_sin_entry(CosSinForm::Positions, false),
    cos_sin_entry(CosSinForm::Positions, true),
    cos_sin_entry(CosSinForm::Start, false),
    cos_sin_entry(CosSinForm::Out, true),
    rotary_entry(false, false),
    rotary_entry(true, false),
    rotary_entry(false, true),
    rotary_entry(true, true),
});

}  // namespace
}  // namespace op_table
