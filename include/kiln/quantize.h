// FP8 weight quantization: w ~ w_fp8 * scale, with the scale per tensor, per
// row (output feature) or per 128x128 block, saturating at the format's max.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

enum class QuantGranularity { Tensor, Row, Block };
// "tensor" | "row" | "block"; ValueError otherwise.
QuantGranularity granularity_from_name(const std::string& name);

// w: [..., N, K] floating. Returns (w_fp8 of `dtype`, float32 scale) with
// scale = amax / fp8_max over each group (1 for an all-zero group) and
// w_fp8 = saturate(w / scale). Scale shapes: tensor: [] ; row: [..., N, 1];
// block: [..., ceil(N/128), ceil(K/128)]. NaN or inf in w raise ValueError
// (an FP8 weight must hold no NaN; the decode kernels rely on it). w / scale
// is computed in float32 (a float64 w is rounded to float32 first) and then
// rounded to FP8: by design, as every op computing into a narrow type.
std::pair<Tensor, Tensor> quantize_fp8(const Tensor& w, QuantGranularity granularity,
                                       DType dtype = DType::Float8_e4m3fn);

// The same into existing tensors: q contiguous, w's shape, its FP8 dtype the
// format; scale contiguous float32 of the granularity's shape. Loaders use it
// to quantize a checkpoint tensor chunk by chunk straight into its place.
void quantize_fp8_into(const Tensor& w, QuantGranularity granularity, const Tensor& q, const Tensor& scale);

// q * scale as `out_dtype`, the scale's layout read from its shape as above
// (a row scale may also be [..., N]).
Tensor dequantize(const Tensor& q, const Tensor& scale, DType out_dtype = DType::Float32);

// The largest finite value of an FP8 dtype (448 or 57344).
float fp8_max(DType dtype);

// What a caller knows of an FP8 weight's codes. float8_e4m3fn's S.1111.111 is
// NaN; the matrix-vector kernels widen codes with integer ops that read it as a
// finite number, so by default they also test every step of codes for it (a
// row that holds one comes out NaN, as in torch). A caller that keeps a weight
// for many calls (a model) can scan it once with fp8_has_nan_code and pass
// NoNan: the kernels then skip the test, 10-20% of an e4m3 matrix-vector
// product wherever widening, not memory, is the limit. NoNan on a weight that
// does hold a NaN code gives finite, wrong rows instead of NaN ones.
enum class Fp8Codes : uint8_t { Unchecked, NoNan };

// True when w is float8_e4m3fn and holds a NaN code; false for every other
// dtype (float8_e5m2's NaN codes widen to NaN exactly). One read of w.
bool fp8_has_nan_code(const Tensor& w);

// Where a float8_e4m3fn weight's subnormal codes (exponent field 0, mantissa
// not 0) lie. Intel cores take ~70x longer for a float32 FMA on a denormal
// operand, which is what the e4m3 kernels' integer widening makes of those
// codes, so by default the kernels there test every step of codes for them.
// A caller that keeps a weight for many calls can find them once
// (fp8_find_subnormals) and pass the result with it: the kernels then run
// with denormal inputs read as zero (MXCSR.DAZ) and no per-step test, and add
// the listed codes' terms exactly afterwards. A list made from another weight
// gives wrong results.
// A weight [E..., N, K] is listed as E matrices of N rows, one after another.
struct Fp8Subnormals {
  int64_t matrices = 0, rows = 0, cols = 0;  // E (1 for a 2-D weight), N, K
  // [E * N + 1]: the codes of row n of matrix e are entries
  // row_start[e * N + n] .. row_start[e * N + n + 1].
  std::vector<int64_t> row_start;
  std::vector<int32_t> col;   // each entry's column, ascending within a row
  std::vector<int32_t> row;   // its row within its matrix (n)
  std::vector<uint8_t> code;  // its code: the kernels read the list, not W
};
// w: float8_e4m3fn [E..., N, K], at least 2-D, N and K < 2^31. One read of w.
Fp8Subnormals fp8_find_subnormals(const Tensor& w);

}  // namespace kiln
