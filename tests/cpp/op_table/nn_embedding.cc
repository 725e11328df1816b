// Op table entries of embedding (ops/registry/nn.h): rows of a [7, 37] table
// gathered at indices (the first input truncated to int64), plain and as an
// FP8 table scaled per row, against a float64 gather.
#include <cmath>

#include "kiln/nn.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

constexpr int64_t kRows = 7, kCols = 37;

// indices over the classes, then the [7, 37] table (transposed in the
// non-contiguous class), then a [7] row scale.
std::vector<InputSpec> embedding_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{0}}, {{kRows, kCols}}, {{kRows}}};
    case ShapeClass::Scalar:
      return {{{}}, {{kRows, kCols}}, {{kRows}}};
    case ShapeClass::Odd:
      return {{{5, 3}}, {{kRows, kCols}}, {{kRows}}};
    case ShapeClass::NonContiguous:
      return {{{5, 3}, InputSpec::Transposed}, {{kRows, kCols}, InputSpec::Transposed}, {{kRows}}};
    case ShapeClass::Broadcast:
      return {{{5, 3}, InputSpec::Expanded, {1, 3}}, {{kRows, kCols}}, {{kRows}}};
  }
  return {};
}

// v rounded to float8_e4m3fn (3 mantissa bits, subnormals below 2^-6 in steps
// of 2^-9; |v| < 448 here), ties to even.
double e4m3(double v) {
  if (v == 0.0) return v;
  int e = 0;
  std::frexp(v, &e);                      // |v| in [2^(e-1), 2^e)
  const int q = std::max(e - 1, -6) - 3;  // the spacing's exponent
  return std::ldexp(std::nearbyint(std::ldexp(v, -q)), q);
}

// out[..., j] = scale(table[trunc(idx)][j]) * row_scale.
std::vector<double> gather(const Inputs& in, bool fp8) {
  std::vector<double> y;
  for (double iv : in.values[0]) {
    const int64_t r = int64_t(std::trunc(iv));
    for (int64_t j = 0; j < kCols; ++j) {
      const double w = in.values[1][size_t(r * kCols + j)];
      const double q = is_fp8(in.tensors[1].dtype()) ? w : e4m3(w);  // a float32 table is made e4m3
      y.push_back(fp8 ? double(float(q) * float(in.values[2][size_t(r)])) : w);
    }
  }
  return y;
}

Entry embedding_entry(bool fp8) {
  Entry e;
  e.op = "embedding";
  // Indices are the first input truncated: [0, 6.9] stays below 7 rows in
  // every dtype.
  e.lo = 0;
  e.hi = 6.9;
  e.dtypes = fp8 ? std::vector<DType>{DType::Float32} : kFloats;
  e.shapes = embedding_shapes;
  e.call = [fp8](const std::vector<Tensor>& x) {
    const Tensor idx = x[0].to(DType::Int64);
    if (!fp8) return embedding(idx, x[1]);
    return embedding(idx, x[1].to(DType::Float8_e4m3fn), x[2]);
  };
  e.oracle = [fp8](const Inputs& in, const Tensor&) { return gather(in, fp8); };
  e.ulps = 1;
  e.perf_shapes = {{{512}}, {{kRows, 4096}}, {{kRows}}};
  return e;
}

// The FP8 table drawn by the walk (e4m3fn and e5m2 codes as they are), the
// indices and row scales float32.
Entry embedding_fp8_walk() {
  Entry e = embedding_entry(true);
  e.dtypes = kFp8;
  e.shapes = [](ShapeClass c) {
    std::vector<InputSpec> s = embedding_shapes(c);
    s[0].held = s[2].held = DType::Float32;
    return s;
  };
  e.call = [](const std::vector<Tensor>& x) { return embedding(x[0].to(DType::Int64), x[1], x[2]); };
  return e;
}

KILN_OP_TABLE({
    embedding_entry(false),
    embedding_entry(true),
    embedding_fp8_walk(),
});

}  // namespace
}  // namespace op_table
