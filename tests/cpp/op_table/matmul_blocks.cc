// Op table entries of dequantize_blocks, block_scales_finite and block_linear
// (ops/registry/matmul.h) for Q8_0 and Q4_1 blocks drawn as random bytes,
// decoded here from ggml's layouts: {f16 d; int8 q[32]} and
// {f16 d; f16 m; u8 nibbles[16]} (byte j: element j low, j + 16 high). Every
// block type is checked bit for bit in block_linear_test.cc.
#include <cmath>

#include "kiln/block_quant.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

double f16_value(double lo, double hi) {
  const int h = int(lo) | int(hi) << 8;
  const int e = (h >> 10) & 31, m = h & 1023;
  const double v = e == 0    ? std::ldexp(m, -24)
                   : e == 31 ? (m ? NAN : INFINITY)
                             : std::ldexp(1024 + m, e - 25);
  return h & 0x8000 ? -v : v;
}

double as_f32(double v) { return std::isfinite(v) ? double(float(v)) : v; }

// Row r's K elements of W from its bytes (values of a uint8 input).
std::vector<double> decode(BlockType t, const std::vector<double>& bytes, int64_t rows) {
  const int64_t nb = int64_t(bytes.size()) / std::max<int64_t>(1, rows);
  std::vector<double> w;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < nb; b += block_type_info(t).block_bytes) {
      const double* p = bytes.data() + r * nb + b;
      const double d = f16_value(p[0], p[1]);
      if (t == BlockType::Q8_0) {
        for (int j = 0; j < 32; ++j) w.push_back(as_f32(d * (p[2 + j] >= 128 ? p[2 + j] - 256 : p[2 + j])));
      } else {
        const double m = f16_value(p[2], p[3]);
        for (int j = 0; j < 32; ++j) {
          const int byte = int(p[4 + j % 16]);
          w.push_back(as_f32(d * (j < 16 ? byte & 15 : byte >> 4) + m));
        }
      }
    }
  return w;
}

int64_t row_bytes(BlockType t, int64_t blocks) { return blocks * block_type_info(t).block_bytes; }

InputSpec bytes_spec(Shape s) {
  return {s, InputSpec::Contiguous, {}, InputSpec::Ints{DType::UInt8, 0, 256}};
}

Entry dequantize_entry(BlockType t) {
  Entry e;
  e.op = "dequantize_blocks";
  e.dtypes = {DType::Float32};
  e.shapes = [t](ShapeClass c) -> std::vector<InputSpec> {
    if (c == ShapeClass::Empty) return {bytes_spec({0, row_bytes(t, 2)})};
    if (c == ShapeClass::Odd) return {bytes_spec({5, row_bytes(t, 3)})};
    return {};
  };
  e.call = [t](const std::vector<Tensor>& in) { return dequantize_blocks(in[0], t); };
  e.oracle = [t](const Inputs& in, const Tensor&) { return decode(t, in.values[0], in.shapes[0][0]); };
  e.ulps = 0;
  return e;
}

Entry scales_entry(BlockType t) {
  Entry e;
  e.op = "block_scales_finite";
  e.dtypes = {DType::Float32};
  e.shapes = [t](ShapeClass c) -> std::vector<InputSpec> {
    if (c == ShapeClass::Empty) return {bytes_spec({0, row_bytes(t, 2)})};
    if (c == ShapeClass::Odd) return {bytes_spec({3, row_bytes(t, 1)})};  // 3 or 6 scales: often finite
    return {};
  };
  e.call = [t](const std::vector<Tensor>& in) {
    return full({}, block_scales_finite(in[0], t) ? 1.0 : 0.0, DType::Float32, in[0].device());
  };
  e.oracle = [t](const Inputs& in, const Tensor&) {
    bool finite = true;
    for (double v : decode(t, in.values[0], in.shapes[0][0])) finite &= std::isfinite(v) || v == 0;
    const std::vector<double>& b = in.values[0];
    const int64_t bb = block_type_info(t).block_bytes;
    for (size_t i = 0; i < b.size(); i += size_t(bb))  // the scales themselves (a q of 0 hides inf * 0)
      for (int s = 0; s < (t == BlockType::Q4_1 ? 2 : 1); ++s)
        finite &= std::isfinite(f16_value(b[i + 2 * s], b[i + 2 * s + 1]));
    return std::vector<double>{finite ? 1.0 : 0.0};
  };
  e.ulps = 0;
  return e;
}

// Scales kept below 2 in magnitude (bit 6 of their high byte cleared), so
// the sums stay finite and the tolerance can be absolute.
Tensor tame_scales(const Tensor& bytes, BlockType t) {
  const int64_t bb = block_type_info(t).block_bytes;
  std::vector<double> mask(size_t(bytes.size(1)), 255.0);
  for (int64_t i = 0; i < bytes.size(1); i += bb)
    for (int s = 0; s < (t == BlockType::Q4_1 ? 2 : 1); ++s) mask[size_t(i + 2 * s + 1)] = 255 - 64;
  const Tensor m = from_buffer_copy(mask.data(), {bytes.size(1)}, DType::Float64).to(DType::UInt8);
  return bitwise_and(bytes, m.to(bytes.device()));
}

Entry linear_entry(BlockType t) {
  Entry e;
  e.op = "block_linear";
  e.dtypes = {DType::Float32, DType::BFloat16, DType::Float16};
  e.shapes = [t](ShapeClass c) -> std::vector<InputSpec> {
    switch (c) {
      case ShapeClass::Empty:
        return {{{0, 64}}, bytes_spec({3, row_bytes(t, 2)})};
      case ShapeClass::Odd:
        return {{{3, 96}}, bytes_spec({7, row_bytes(t, 3)})};  // the matrix-vector kernel
      case ShapeClass::Broadcast:
        return {{{2, 5, 64}}, bytes_spec({5, row_bytes(t, 2)})};  // 10 rows: the GEMM
      case ShapeClass::NonContiguous:
        return {{{4, 64}, InputSpec::Transposed}, bytes_spec({5, row_bytes(t, 2)})};
      default:
        return {};
    }
  };
  e.call = [t](const std::vector<Tensor>& in) { return block_linear(in[0], tame_scales(in[1], t), t); };
  e.oracle = [t](const Inputs& in, const Tensor&) {
    std::vector<double> bytes = in.values[1];
    const int64_t bb = block_type_info(t).block_bytes, nb = in.shapes[1][1];
    for (size_t i = 0; i < bytes.size(); ++i) {
      const int64_t off = int64_t(i) % nb % bb;
      if (off == 1 || (t == BlockType::Q4_1 && off == 3)) bytes[i] = double(int(bytes[i]) & (255 - 64));
    }
    const int64_t N = in.shapes[1][0];
    const std::vector<double> w = decode(t, bytes, N);
    const int64_t K = in.shapes[0].back(), M = K ? int64_t(in.values[0].size()) / K : 0;
    std::vector<double> y;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += w[size_t(n * K + k)] * in.values[0][size_t(m * K + k)];
        y.push_back(s);
      }
    return y;
  };
  e.floor = 2000;  // |w| < 2 * 127 and |x| <= 4: terms up to ~1000, summed in float32
  e.ulps = 64;
  return e;
}

std::vector<Entry> all() {
  std::vector<Entry> es;
  for (BlockType t : {BlockType::Q8_0, BlockType::Q4_1}) {
    es.push_back(dequantize_entry(t));
    es.push_back(scales_entry(t));
    es.push_back(linear_entry(t));
  }
  return es;
}

KILN_OP_TABLE(all());

}  // namespace
}  // namespace op_table
