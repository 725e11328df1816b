// Op table entries of matmul, mm and bmm (ops/registry/matmul.h): float and
// integer operands, 1-D promotion, broadcast batch dims and the shared right
// operand, against a naive float64 product.
#include <cmath>

#include "kiln/matmul.h"
#include "op_table/matmul_ref.h"

namespace op_table {
namespace {

using namespace kiln;

// torch.matmul in float64 for the logical shapes sa, sb (1-D operands
// promoted, batch dims broadcast). Integers wrap to the output's width.
std::vector<double> matmul_ref(const Inputs& in, const Tensor& out) {
  Shape sa = in.shapes[0], sb = in.shapes[1];
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  const int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  const size_t ba = sa.size() - 2, bb = sb.size() - 2, nb = std::max(ba, bb);
  Shape batch(nb, 1);
  for (size_t i = 0; i < nb; ++i) {
    const int64_t x = i + ba >= nb ? sa[i + ba - nb] : 1, y = i + bb >= nb ? sb[i + bb - nb] : 1;
    batch[i] = x == 1 ? y : x;
  }
  int64_t B = 1;
  for (int64_t s : batch) B *= s;
  // The flat offset of batch index b (row-major over `batch`) in an operand with
  // batch dims `own` (right-aligned, size-1 dims broadcast).
  auto offset = [&](int64_t b, const Shape& s, size_t own) {
    int64_t off = 0, stride = s[own] * s[own + 1];
    for (size_t i = nb; i-- > 0;) {
      const int64_t idx = b % batch[i];
      b /= batch[i];
      if (i + own >= nb) {
        const size_t d = i + own - nb;
        if (s[d] != 1) off += idx * stride;
        stride *= s[d];
      }
    }
    return off;
  };
  std::vector<double> y(static_cast<size_t>(B * M * N));
  for (int64_t b = 0; b < B; ++b) {
    const double* pa = in.values[0].data() + offset(b, sa, ba);
    const double* pb = in.values[1].data() + offset(b, sb, bb);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += pa[m * K + k] * pb[k * N + n];
        if (out.dtype() == DType::UInt8) s = std::fmod(std::fmod(s, 256.0) + 256.0, 256.0);
        y[size_t((b * M + m) * N + n)] = s;
      }
  }
  return y;
}

const std::vector<DType> kWide = {DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::UInt8};
const std::vector<DType> kNarrow = {DType::BFloat16, DType::Float16};

// One entry per dtype group: float32/float64 accumulate K products (error
// grows with K), bfloat16/float16 round once from float32.
std::vector<Entry> entries_of(const char* op, Tensor (*fn)(const Tensor&, const Tensor&),
                              std::function<std::vector<InputSpec>(ShapeClass)> shapes) {
  std::vector<Entry> es;
  for (int narrow = 0; narrow < 2; ++narrow) {
    Entry e;
    e.op = op;
    e.dtypes = narrow ? kNarrow : kWide;
    e.lo = -2;
    e.hi = 2;
    e.shapes = shapes;
    e.call = [fn](const std::vector<Tensor>& t) { return fn(t[0], t[1]); };
    e.oracle = matmul_ref;
    e.ulps = narrow ? 2 : 64;
    e.floor = narrow ? 1 : 4;
    e.perf_shapes = {{{256, 512}}, {{512, 256}}};
    es.push_back(std::move(e));
  }
  return es;
}

std::vector<InputSpec> matmul_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{0, 5}}, {{5, 3}}};
    case ShapeClass::Scalar:  // 1-D x 1-D: a 0-d dot
      return {{{37}}, {{37}}};
    case ShapeClass::Odd:  // batch dims [3] and [2, 1] broadcast
      return {{{3, 5, 37}}, {{2, 1, 37, 7}}};
    case ShapeClass::NonContiguous:
      return {{{5, 37}, InputSpec::Transposed}, {{37, 7}, InputSpec::Strided}};
    case ShapeClass::Broadcast:  // the shared right operand folded into the rows
      return {{{2, 3, 5, 7}, InputSpec::Expanded, {3, 1, 7}}, {{7, 4}}};
  }
  return {};
}

std::vector<InputSpec> vector_matrix_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Odd:
      return {{{37}}, {{2, 37, 7}}};
    case ShapeClass::NonContiguous:
      return {{{3, 5, 37}, InputSpec::Transposed}, {{37}}};
    default:
      return {};
  }
}

std::vector<InputSpec> mm_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{4, 0}}, {{0, 3}}};
    case ShapeClass::Odd:
      return {{{9, 37}}, {{37, 7}}};
    case ShapeClass::NonContiguous:
      return {{{9, 37}, InputSpec::Strided}, {{37, 7}, InputSpec::Transposed}};
    case ShapeClass::Broadcast:
      return {{{5, 37}, InputSpec::Expanded, {1, 37}}, {{37, 7}, InputSpec::Expanded, {37, 1}}};
    default:
      return {};
  }
}

std::vector<InputSpec> bmm_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{2, 0, 5}}, {{2, 5, 3}}};
    case ShapeClass::Odd:
      return {{{3, 5, 37}}, {{3, 37, 7}}};
    case ShapeClass::NonContiguous:
      return {{{3, 5, 37}, InputSpec::Transposed}, {{3, 37, 7}, InputSpec::Strided}};
    case ShapeClass::Broadcast:
      return {{{3, 5, 7}, InputSpec::Expanded, {1, 5, 7}}, {{3, 7, 4}}};
    default:
      return {};
  }
}

Tensor matmul_fn(const Tensor& a, const Tensor& b) { return kiln::matmul(a, b); }
Tensor mm_fn(const Tensor& a, const Tensor& b) { return kiln::mm(a, b); }
Tensor bmm_fn(const Tensor& a, const Tensor& b) { return kiln::bmm(a, b); }

std::vector<Entry> all() {
  std::vector<Entry> es;
  for (auto* v : {&matmul_shapes, &vector_matrix_shapes})
    for (Entry& e : entries_of("matmul", matmul_fn, *v)) es.push_back(std::move(e));
  for (Entry& e : entries_of("mm", mm_fn, mm_shapes)) es.push_back(std::move(e));
  for (Entry& e : entries_of("bmm", bmm_fn, bmm_shapes)) es.push_back(std::move(e));
  return es;
}

KILN_OP_TABLE(all());

}  // namespace
}  // namespace op_table
