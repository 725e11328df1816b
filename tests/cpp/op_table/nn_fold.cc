// Op table entries of im2col and col2im (ops/registry/fold.h), through
// unfold / fold: float64 loops over the sliding blocks written from the
// definition (column (c, ki, kj), block (oy, ox) reads pixel
// (oy*sh - ph + ki*dh, ox*sw - pw + kj*dw)).
#include "kiln/fold.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

// kernel (2, 3), dilation (2, 1), padding (1, 0), stride (2, 1) over a 7 x 6
// image: 4 x 4 blocks.
constexpr Size2 kK{2, 3}, kD{2, 1}, kP{1, 0}, kS{2, 1}, kHW{7, 6};
constexpr int64_t kOH = 4, kOW = 4;

// Visits every (plane, column row, block, pixel) of an N x C stack of H x W
// planes: f(col_index, pixel_index) for the pixels inside the image.
template <typename F>
void blocks(int64_t NC, int64_t H, int64_t W, Size2 k, Size2 d, Size2 p, Size2 s, int64_t oh, int64_t ow,
            F f) {
  for (int64_t pl = 0; pl < NC; ++pl)
    for (int64_t ki = 0; ki < k[0]; ++ki)
      for (int64_t kj = 0; kj < k[1]; ++kj)
        for (int64_t oy = 0; oy < oh; ++oy)
          for (int64_t ox = 0; ox < ow; ++ox) {
            const int64_t y = oy * s[0] - p[0] + ki * d[0], x = ox * s[1] - p[1] + kj * d[1];
            const int64_t col = ((pl * k[0] + ki) * k[1] + kj) * oh * ow + oy * ow + ox;
            f(col, y >= 0 && y < H && x >= 0 && x < W ? (pl * H + y) * W + x : -1);
          }
}

std::vector<InputSpec> image_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{0, 3, 7, 6}}};
    case ShapeClass::Scalar:  // one unbatched pixel, a 1 x 1 kernel
      return {{{1, 1, 1}}};
    case ShapeClass::Odd:
      return {{{2, 3, 7, 6}}};
    case ShapeClass::NonContiguous:
      return {{{2, 3, 7, 6}, InputSpec::Transposed}};
    case ShapeClass::Broadcast:
      return {{{2, 3, 7, 6}, InputSpec::Expanded, {1, 3, 7, 6}}};
  }
  return {};
}

std::vector<InputSpec> column_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{0, 18, 16}}};
    case ShapeClass::Scalar:
      return {{{1, 1}}};
    case ShapeClass::Odd:
      return {{{2, 18, 16}}};
    case ShapeClass::NonContiguous:
      return {{{2, 18, 16}, InputSpec::Transposed}};
    case ShapeClass::Broadcast:
      return {{{2, 18, 16}, InputSpec::Expanded, {2, 18, 1}}};
  }
  return {};
}

Entry im2col_entry() {
  Entry e;
  e.op = "im2col";
  e.dtypes = kFloats;
  e.shapes = image_shapes;
  e.call = [](const std::vector<Tensor>& x) {
    if (x[0].dim() == 3) return unfold(x[0], {1, 1});
    return unfold(x[0], kK, kD, kP, kS);
  };
  e.oracle = [](const Inputs& in, const Tensor&) {
    const Shape& s = in.shapes[0];
    if (s.size() == 3) return in.values[0];
    std::vector<double> out(size_t(s[0] * s[1] * kK[0] * kK[1] * kOH * kOW), 0.0);
    blocks(s[0] * s[1], 7, 6, kK, kD, kP, kS, kOH, kOW, [&](int64_t col, int64_t pix) {
      if (pix >= 0) out[size_t(col)] = in.values[0][size_t(pix)];
    });
    return out;
  };
  e.ulps = 0;
  return e;
}

Entry col2im_entry() {
  Entry e;
  e.op = "col2im";
  e.dtypes = kFloats;
  e.shapes = column_shapes;
  e.call = [](const std::vector<Tensor>& x) {
    if (x[0].dim() == 2) return fold(x[0], {1, 1}, {1, 1});
    return fold(x[0], kHW, kK, kD, kP, kS);
  };
  e.oracle = [](const Inputs& in, const Tensor&) {
    const Shape& s = in.shapes[0];
    if (s.size() == 2) return in.values[0];
    const int64_t C = s[1] / (kK[0] * kK[1]);
    std::vector<double> out(size_t(s[0] * C * kHW[0] * kHW[1]), 0.0);
    blocks(s[0] * C, kHW[0], kHW[1], kK, kD, kP, kS, kOH, kOW, [&](int64_t col, int64_t pix) {
      if (pix >= 0) out[size_t(pix)] += in.values[0][size_t(col)];
    });
    return out;
  };
  e.ulps = 8;
  e.floor = 4;
  return e;
}

KILN_OP_TABLE({im2col_entry(), col2im_entry()});

}  // namespace
}  // namespace op_table
