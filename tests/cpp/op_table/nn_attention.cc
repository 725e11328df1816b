// Op table entries of scaled_dot_product_attention (ops/registry/nn.h): a
// naive float64 softmax(Q K^T * scale + mask) V per (batch, head), with
// broadcast batch dims, GQA, causal limits (top-left and shifted), additive
// and bool masks, and dropout_p = 1 (everything dropped).
#include <cmath>
#include <limits>

#include "kiln/attention.h"
#include "kiln/binary.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

enum class Mode { Plain, Causal, CausalOffset, Gqa, AdditiveMask, BoolMask, DropAll };

// q [.., Hq, L, E], k [.., Hkv, S, E], v [.., Hkv, S, Ev], all with the same
// batch dims here (broadcast ones are expanded by the input recipe); an
// optional fourth input is a mask [L, S]. Output [.., Hq, L, Ev].
std::vector<double> attention_ref(const Inputs& in, Mode mode) {
  const Shape &qs = in.shapes[0], &ks = in.shapes[1], &vs = in.shapes[2];
  const int nd = int(qs.size());
  const int64_t L = qs[nd - 2], E = qs[nd - 1], S = ks[nd - 2], Ev = vs[nd - 1];
  const int64_t Hq = nd >= 3 ? qs[nd - 3] : 1, Hkv = nd >= 3 ? ks[nd - 3] : 1;
  int64_t B = 1;
  for (int d = 0; d < nd - 3; ++d) B *= qs[size_t(d)];
  const double scale = 1.0 / std::sqrt(double(E));
  const double ninf = -std::numeric_limits<double>::infinity();
  std::vector<double> out(size_t(B * Hq * L * Ev), 0.0);
  if (mode == Mode::DropAll) return out;
  const int64_t off = mode == Mode::CausalOffset ? S - L : 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t hk = h / (Hq / Hkv);
      const double* q = in.values[0].data() + (b * Hq + h) * L * E;
      const double* k = in.values[1].data() + (b * Hkv + hk) * S * E;
      const double* v = in.values[2].data() + (b * Hkv + hk) * S * Ev;
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> s(static_cast<size_t>(S));
        double m = ninf;
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < E; ++e) dot += q[i * E + e] * k[j * E + e];
          double x = dot * scale;
          if ((mode == Mode::Causal || mode == Mode::CausalOffset) && j > i + off) x = ninf;
          if (mode == Mode::AdditiveMask) x += in.values[3][size_t(i * S + j)];
          if (mode == Mode::BoolMask && !(in.values[3][size_t(i * S + j)] > 0)) x = ninf;
          s[size_t(j)] = x;
          m = std::max(m, x);
        }
        if (m == ninf) continue;  // every key masked: zeros
        double sum = 0;
        for (double& x : s) sum += x = std::exp(x - m);
        double* o = out.data() + ((b * Hq + h) * L + i) * Ev;
        for (int64_t j = 0; j < S; ++j)
          for (int64_t c = 0; c < Ev; ++c) o[c] += s[size_t(j)] / sum * v[j * Ev + c];
      }
    }
  return out;
}

std::function<std::vector<InputSpec>(ShapeClass)> attention_shapes(Mode mode) {
  return [mode](ShapeClass c) -> std::vector<InputSpec> {
    const bool masked = mode == Mode::AdditiveMask || mode == Mode::BoolMask;
    const int64_t Hq = 4, Hkv = mode == Mode::Gqa ? 2 : 4;
    std::vector<InputSpec> s;
    switch (c) {
      case ShapeClass::Empty:  // no query rows
        s = {{{2, Hq, 0, 8}}, {{2, Hkv, 5, 8}}, {{2, Hkv, 5, 8}}};
        if (masked) s.push_back({{0, 5}});
        return s;
      case ShapeClass::Scalar:  // 2-D: one query, one key of one element
        if (mode == Mode::Gqa) return {};
        s = {{{1, 1}}, {{1, 1}}, {{1, 1}}};
        if (masked) s.push_back({{1, 1}});
        return s;
      case ShapeClass::Odd:
        s = {{{2, Hq, 5, 17}}, {{2, Hkv, 7, 17}}, {{2, Hkv, 7, 9}}};
        break;
      case ShapeClass::NonContiguous:
        s = {{{2, Hq, 5, 17}, InputSpec::Transposed},
             {{2, Hkv, 7, 17}, InputSpec::Transposed},
             {{2, Hkv, 7, 9}, InputSpec::Strided}};
        break;
      case ShapeClass::Broadcast:
        s = {{{2, Hq, 5, 17}},
             {{2, Hkv, 7, 17}, InputSpec::Expanded, {1, Hkv, 7, 17}},
             {{2, Hkv, 7, 9}, InputSpec::Expanded, {1, Hkv, 7, 9}}};
        break;
    }
    if (masked)
      s.push_back({{5, 7}, c == ShapeClass::Broadcast ? InputSpec::Expanded : InputSpec::Contiguous, {5, 1}});
    return s;
  };
}

Entry attention_entry(Mode mode, std::vector<DType> dtypes, double ulps) {
  Entry e;
  e.op = "scaled_dot_product_attention";
  e.dtypes = std::move(dtypes);
  // Scores stay within a few units, so float32's rounding of them stays small.
  e.lo = -1;
  e.hi = 1;
  e.shapes = attention_shapes(mode);
  e.call = [mode](const std::vector<Tensor>& x) {
    switch (mode) {
      case Mode::Plain:
        return scaled_dot_product_attention(x[0], x[1], x[2]);
      case Mode::Causal:
        return scaled_dot_product_attention(x[0], x[1], x[2], Tensor(), 0.0, true);
      case Mode::CausalOffset: {  // the runtime's form: into out, bottom-right causal
        AttentionOptions opt;
        opt.is_causal = true;
        opt.causal_offset = x[1].size(-2) - x[0].size(-2);
        Shape s = x[0].sizes();
        s.back() = x[2].size(-1);
        const Tensor out = empty(s, x[0].dtype(), x[0].device());
        scaled_dot_product_attention_out(x[0], x[1], x[2], opt, out);
        return out;
      }
      case Mode::Gqa:
        return scaled_dot_product_attention(x[0], x[1], x[2], Tensor(), 0.0, false, std::nullopt, true);
      case Mode::AdditiveMask:
        return scaled_dot_product_attention(x[0], x[1], x[2], x[3]);
      case Mode::BoolMask:
        return scaled_dot_product_attention(x[0], x[1], x[2], gt(x[3], Scalar(0.0)));
      case Mode::DropAll:
        return scaled_dot_product_attention(x[0], x[1], x[2], Tensor(), 1.0);
    }
    return Tensor();
  };
  e.oracle = [mode](const Inputs& in, const Tensor&) { return attention_ref(in, mode); };
  e.ulps = ulps;
  e.perf_shapes = {{{1, 32, 1, 128}}, {{1, 8, 2048, 128}}, {{1, 8, 2048, 128}}};
  return e;
}

// float32 accumulates over the keys in float32: a looser tolerance in its own
// ulps than the narrow dtypes, whose rounding dominates.
const std::vector<DType> kF32 = {DType::Float32};
const std::vector<DType> kNarrow = {DType::BFloat16, DType::Float16};

KILN_OP_TABLE({
    attention_entry(Mode::Plain, kF32, 64),
    attention_entry(Mode::Plain, kNarrow, 4),
    attention_entry(Mode::Causal, kF32, 64),
    attention_entry(Mode::Causal, kNarrow, 4),
    attention_entry(Mode::CausalOffset, kF32, 64),
    attention_entry(Mode::Gqa, kF32, 64),
    attention_entry(Mode::Gqa, kNarrow, 4),
    attention_entry(Mode::AdditiveMask, kF32, 64),
    attention_entry(Mode::BoolMask, kF32, 64),
    attention_entry(Mode::BoolMask, kNarrow, 4),
    attention_entry(Mode::DropAll, kF32, 0),
});

}  // namespace
}  // namespace op_table
