// Op table entries of sample, sample_row and logits_max (ops/registry/nn.h).
// Random draws
// have no float64 oracle, so every entry takes a path whose outcome the
// parameters fix, and the oracle is the first index of the row's maximum
// (after the penalties, computed here as float32, as the sampler does):
// greedy (temperature 0), top_k = 1, top_p tiny (the nucleus is the top
// token), min_p = 1 and top_k = 3 with min_p = 1 (only the maximum passes;
// float32 inputs only, where a tie has no chance), and greedy after
// repetition/presence/frequency penalties over previous tokens. The
// distribution of the random paths is tested in sampling_test.cc.
#include <algorithm>
#include <cmath>

#include "kiln/sampling.h"
#include "nn/sampling.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

enum class Path { Greedy, TopK1, TinyTopP, MinP1, TopKMinP1, Penalties };

SamplingParams params_of(Path path) {
  SamplingParams p;
  switch (path) {
    case Path::Greedy:
      p.temperature = 0;
      break;
    case Path::TopK1:
      p.top_k = 1;
      break;
    case Path::TinyTopP:
      p.top_p = 1e-9;
      break;
    case Path::MinP1:
      p.min_p = 1.0;
      break;
    case Path::TopKMinP1:
      p.top_k = 3;
      p.min_p = 1.0;
      break;
    case Path::Penalties:
      p.temperature = 0;
      p.repetition_penalty = 1.3;
      p.presence_penalty = 0.5;
      p.frequency_penalty = 0.25;
      break;
  }
  return p;
}

// Token 0 seen once, token 2 twice.
const int64_t kPrev[] = {2, 0, 2};

// The first index of each row's maximum, after the penalties.
std::vector<double> argmax_rows(const Inputs& in, Path path) {
  const std::vector<double>& x = in.values[0];
  const int64_t V = in.shapes[0].empty() ? 1 : in.shapes[0].back();
  std::vector<double> out;
  for (size_t r = 0; r * size_t(V) < x.size(); ++r) {
    std::vector<float> row(x.begin() + long(r * size_t(V)), x.begin() + long((r + 1) * size_t(V)));
    if (path == Path::Penalties) {
      const SamplingParams p = params_of(path);
      for (int64_t t : {int64_t(0), int64_t(2)}) {
        if (t >= V) continue;
        const double n = t == 2 ? 2 : 1;
        float v = row[size_t(t)];
        v = v > 0 ? float(v / p.repetition_penalty) : float(v * p.repetition_penalty);
        row[size_t(t)] = float(v - p.presence_penalty - p.frequency_penalty * n);
      }
    }
    size_t best = 0;
    for (size_t i = 1; i < row.size(); ++i)
      if (row[i] > row[best]) best = i;
    out.push_back(double(best));
  }
  return out;
}

std::vector<InputSpec> logits_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:  // no rows
      return {{{0, 37}}};
    case ShapeClass::Scalar:  // one logit
      return {{{1}}};
    case ShapeClass::Odd:
      return {{{5, 37}}};
    case ShapeClass::NonContiguous:
      return {{{5, 37}, InputSpec::Transposed}};
    case ShapeClass::Broadcast:
      return {{{5, 37}, InputSpec::Expanded, {1, 37}}};
  }
  return {};
}

Entry sample_entry(Path path) {
  Entry e;
  e.op = "sample";
  const bool ties_matter = path == Path::MinP1 || path == Path::TopKMinP1;
  e.dtypes = ties_matter ? std::vector<DType>{DType::Float32}
                         : std::vector<DType>{DType::Float32, DType::BFloat16, DType::Float16};
  e.shapes = logits_shapes;
  e.call = [path](const std::vector<Tensor>& x) {
    Generator g(7);
    if (path != Path::Penalties) return sample(x[0], params_of(path), Tensor(), &g);
    const Tensor prev = from_buffer_copy(kPrev, {3}, DType::Int64).to(x[0].device());
    // Previous tokens outside a one-logit row would be out of range.
    if (x[0].size(-1) < 3) return sample(x[0], params_of(path), Tensor(), &g);
    return sample(x[0], params_of(path), prev, &g);
  };
  e.oracle = [path](const Inputs& in, const Tensor&) {
    const int64_t V = in.shapes[0].empty() ? 1 : in.shapes[0].back();
    return argmax_rows(in, V < 3 ? Path::Greedy : path);
  };
  e.ulps = 0;
  e.perf_shapes = {{{1, 151936}}};
  return e;
}

// sample_row_ on a float32 copy of one row [V].
Entry sample_row_entry(Path path) {
  Entry e;
  e.op = "sample_row";
  e.dtypes = {DType::Float32, DType::BFloat16, DType::Float16};
  e.shapes = [](ShapeClass c) -> std::vector<InputSpec> {
    if (c == ShapeClass::Scalar) return {{{1}}};
    if (c == ShapeClass::Odd) return {{{37}}};
    if (c == ShapeClass::NonContiguous) return {{{37}, InputSpec::Strided}};
    if (c == ShapeClass::Broadcast) return {{{37}, InputSpec::Expanded, {1}}};
    return {};
  };
  e.call = [path](const std::vector<Tensor>& x) {
    Generator g(7);
    const Tensor row = x[0].to(DType::Float32).contiguous().clone();
    const int64_t V = row.numel();
    const int64_t nprev = path == Path::Penalties && V >= 3 ? 3 : 0;
    const int64_t t = sample_row_(row.data<float>(), V, params_of(path), kPrev, nprev, g);
    return from_buffer_copy(&t, {}, DType::Int64);
  };
  e.host_only = true;
  e.oracle = [path](const Inputs& in, const Tensor&) {
    return argmax_rows(in, in.shapes[0].back() < 3 ? Path::Greedy : path);
  };
  e.ulps = 0;
  return e;
}

// logits_max_ on one float32 row [V]: the max, NaN if any entry is
// NaN, -inf for an empty row; with specials +-inf and NaN among the entries.
Entry logits_max_entry(std::vector<double> specials) {
  Entry e;
  e.op = "logits_max";
  e.dtypes = {DType::Float32};
  e.specials = std::move(specials);
  e.shapes = [](ShapeClass c) -> std::vector<InputSpec> {
    switch (c) {
      case ShapeClass::Empty:
        return {{{0}}};
      case ShapeClass::Scalar:
        return {{{1}}};
      case ShapeClass::Odd:
        return {{{37}}};
      case ShapeClass::NonContiguous:
        return {{{37}, InputSpec::Strided}};
      case ShapeClass::Broadcast:
        return {{{37}, InputSpec::Expanded, {1}}};
    }
    return {};
  };
  e.call = [](const std::vector<Tensor>& x) {
    const Tensor row = x[0].contiguous();
    const float m = logits_max_(row.data<float>(), row.numel());
    return from_buffer_copy(&m, {}, DType::Float32);
  };
  e.host_only = true;
  e.oracle = [](const Inputs& in, const Tensor&) {
    double m = -INFINITY;
    for (double v : in.values[0]) m = std::isnan(v) || std::isnan(m) ? NAN : std::max(m, v);
    return std::vector<double>{m};
  };
  e.ulps = 0;
  e.perf_shapes = {{{151936}}};
  return e;
}

KILN_OP_TABLE({
    sample_entry(Path::Greedy),
    sample_entry(Path::TopK1),
    sample_entry(Path::TinyTopP),
    sample_entry(Path::MinP1),
    sample_entry(Path::TopKMinP1),
    sample_entry(Path::Penalties),
    sample_row_entry(Path::Greedy),
    sample_row_entry(Path::Penalties),
    logits_max_entry({}),
    logits_max_entry({INFINITY, -INFINITY}),
    logits_max_entry({NAN}),
});

}  // namespace
}  // namespace op_table
