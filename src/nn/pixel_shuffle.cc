// pixel_shuffle / pixel_unshuffle (include/kiln/pad.h): a reshape, a permute
// and one copy, so their gradients are the view derivatives' (no op of their
// own).
#include <vector>

#include "kiln/error.h"
#include "kiln/pad.h"

namespace kiln {
namespace {

// x: [*, C, H, W] -> (batch sizes, C, H, W), after torch's checks.
void split_chw(const char* op, const Tensor& x, int64_t factor, const char* what, Shape& batch, int64_t& C,
               int64_t& H, int64_t& W) {
  KILN_CHECK(x.dim() >= 3, ValueError,
             "[" << op << "] expects an input of at least 3 dims [*, C, H, W], got " << x.shape_str());
  KILN_CHECK(factor > 0, ValueError, "[" << op << "] expects a positive " << what << ", got " << factor);
  const Shape s = x.sizes();  // by value: one copy for both iterators
  batch.assign(s.begin(), s.end() - 3);
  C = x.size(-3);
  H = x.size(-2);
  W = x.size(-1);
}

// The permuted view as a new tensor (a copy even when the permutation is the
// identity, as torch gives).
Tensor fresh(const Tensor& v, const Tensor& x, const Shape& shape) {
  Tensor out = v.reshape(shape);
  return out.storage() == x.storage() ? out.clone() : out;
}

}  // namespace

Tensor pixel_shuffle(const Tensor& x, int64_t upscale_factor) {
  Shape batch;
  int64_t C = 0, H = 0, W = 0;
  split_chw("pixel_shuffle", x, upscale_factor, "upscale_factor", batch, C, H, W);
  const int64_t r = upscale_factor;
  KILN_CHECK(C % (r * r) == 0, ValueError,
             "[pixel_shuffle] the channel dim of input "
                 << x.shape_str() << " (" << C << ") must be divisible by upscale_factor^2 = " << r * r);
  const int b = int(batch.size());
  // [*, C/r^2, r, r, H, W] -> [*, C/r^2, H, r, W, r] -> [*, C/r^2, H*r, W*r]
  Shape split = batch;
  split.insert(split.end(), {C / (r * r), r, r, H, W});
  std::vector<int> perm;
  for (int i = 0; i < b; ++i) perm.push_back(i);
  perm.insert(perm.end(), {b, b + 3, b + 1, b + 4, b + 2});
  Shape shape = batch;
  shape.insert(shape.end(), {C / (r * r), H * r, W * r});
  return fresh(x.reshape(split).permute(perm), x, shape);
}

Tensor pixel_unshuffle(const Tensor& x, int64_t downscale_factor) {
  Shape batch;
  int64_t C = 0, H = 0, W = 0;
  split_chw("pixel_unshuffle", x, downscale_factor, "downscale_factor", batch, C, H, W);
  const int64_t r = downscale_factor;
  KILN_CHECK(H % r == 0 && W % r == 0, ValueError,
             "[pixel_unshuffle] height " << H << " and width " << W << " of input " << x.shape_str()
                                         << " must be divisible by downscale_factor " << r);
  const int b = int(batch.size());
  // [*, C, H/r, r, W/r, r] -> [*, C, r, r, H/r, W/r] -> [*, C*r^2, H/r, W/r]
  Shape split = batch;
  split.insert(split.end(), {C, H / r, r, W / r, r});
  std::vector<int> perm;
  for (int i = 0; i < b; ++i) perm.push_back(i);
  perm.insert(perm.end(), {b, b + 2, b + 4, b + 1, b + 3});
  Shape shape = batch;
  shape.insert(shape.end(), {C * r * r, H / r, W / r});
  return fresh(x.reshape(split).permute(perm), x, shape);
}

}  // namespace kiln
