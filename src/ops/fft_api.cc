// torch.fft's functions (include/kiln/fft.h) over the three transforms of
// ops/fft_ops.h, with torch's argument rules (cf. torch/_refs/fft.py): the
// dims and signal sizes, the input cut or zero-padded to them, the dtype
// promotion, and the norm= scale handed to the transform.
#include <cmath>
#include <string>

#include "kiln/binary.h"
#include "kiln/complex.h"
#include "kiln/error.h"
#include "kiln/fft.h"
#include "kiln/pad.h"
#include "kiln/shape.h"
#include "ops/fft_ops.h"

namespace kiln::fft {
namespace {

namespace D = fft_detail;

enum class Norm { Backward, Forward, Ortho };

Norm parse_norm(std::string_view norm, const char* op) {
  if (norm.empty() || norm == "backward") return Norm::Backward;
  if (norm == "forward") return Norm::Forward;
  if (norm == "ortho") return Norm::Ortho;
  throw ValueError(std::string("[") + op + "] Invalid normalization mode: \"" + std::string(norm) +
                   "\" (expected \"backward\", \"forward\" or \"ortho\")");
}

// The factor a transform in direction `forward` over `n` points is scaled by.
double scale_of(Norm norm, int64_t n, bool forward) {
  if (norm == Norm::Ortho) return 1.0 / std::sqrt(double(n));
  const bool divide = forward ? norm == Norm::Forward : norm == Norm::Backward;
  return divide ? 1.0 / double(n) : 1.0;
}

// float32/float64 stay, integers and bool become float32; complex inputs stay
// (require_complex: real ones become complex of their precision).
Tensor promote(const Tensor& x, bool require_complex, const char* op) {
  const DType d = x.dtype();
  KILN_CHECK(
      d != DType::Float16 && d != DType::BFloat16 && !is_fp8(d), TypeError,
      "[" << op << "] Unsupported dtype " << name(d) << " (kiln.fft takes float32, float64 and complex)");
  if (is_complex(d)) return x;
  const DType real = d == DType::Float64 ? DType::Float64 : DType::Float32;
  if (require_complex) return x.to(real == DType::Float64 ? DType::Complex128 : DType::Complex64);
  return d == real ? x : x.to(real);
}

int wrap(int dim, const Tensor& x, const char* op) {
  KILN_CHECK(x.dim() > 0, IndexError,
             "[" << op << "] Dimension specified as " << dim << " but tensor has no dimensions");
  return wrap_dim(dim, x.dim(), op);
}

struct ShapeAndDims {
  std::vector<int64_t> shape;
  std::vector<int> dims;
};

// torch's _canonicalize_fft_shape_and_dim_args: the dims and signal sizes.
ShapeAndDims shape_and_dims(const Tensor& x, const OptSizes& s, const OptDims& dim, const char* op) {
  ShapeAndDims r;
  if (dim) {
    for (int d : *dim) r.dims.push_back(wrap(d, x, op));
    for (size_t i = 0; i < r.dims.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        KILN_CHECK(r.dims[i] != r.dims[j], ValueError, "[" << op << "] FFT dims must be unique");
  }
  if (s) {
    KILN_CHECK(!dim || dim->size() == s->size(), ValueError,
               "[" << op << "] When given, dim and shape arguments must have the same length");
    KILN_CHECK(int64_t(s->size()) <= x.dim(), ValueError,
               "[" << op << "] Got shape with " << s->size() << " values but input tensor only has "
                   << x.dim() << " dimensions.");
    if (!dim)
      for (int d = x.dim() - int(s->size()); d < x.dim(); ++d) r.dims.push_back(d);
    for (size_t i = 0; i < s->size(); ++i) r.shape.push_back((*s)[i] == -1 ? x.size(r.dims[i]) : (*s)[i]);
  } else {
    if (!dim)
      for (int d = 0; d < x.dim(); ++d) r.dims.push_back(d);
    for (int d : r.dims) r.shape.push_back(x.size(d));
  }
  for (int64_t n : r.shape)
    KILN_CHECK(n > 0, ValueError, "[" << op << "] Invalid number of data points (" << n << ") specified");
  return r;
}

// x cut (a view) or zero-padded along each of dims to `sizes`.
Tensor resize(const Tensor& x, const std::vector<int>& dims, const std::vector<int64_t>& sizes) {
  Tensor r = x;
  std::vector<int64_t> padding;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int d = dims[i];
    if (r.size(d) > sizes[i]) r = r.narrow(d, 0, sizes[i]);
    if (r.size(d) < sizes[i]) {
      // F.pad's list runs from the last dim backwards, (left, right) each.
      if (padding.empty()) padding.assign(size_t(2 * r.dim()), 0);
      padding[size_t(2 * (r.dim() - 1 - d) + 1)] = sizes[i] - r.size(d);
    }
  }
  return padding.empty() ? r : pad(r, padding);
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t n : v) p *= n;
  return p;
}

// fftn / ifftn (and fft / ifft): complex in, complex out over all dims.
Tensor c2c_n(const char* op, const Tensor& x_in, const OptSizes& s, const OptDims& dim,
             std::string_view norm_s, bool forward) {
  const Norm norm = parse_norm(norm_s, op);
  const Tensor x = promote(x_in, true, op);
  const ShapeAndDims sd = shape_and_dims(x, s, dim, op);
  if (sd.dims.empty()) return x.clone();
  return D::c2c(resize(x, sd.dims, sd.shape), sd.dims, forward, scale_of(norm, product(sd.shape), forward));
}

// rfftn (forward) and ihfftn (backward: the conjugate of the forward half).
Tensor r2c_n(const char* op, const Tensor& x_in, const OptSizes& s, const OptDims& dim,
             std::string_view norm_s, bool forward) {
  const Norm norm = parse_norm(norm_s, op);
  KILN_CHECK(!is_complex(x_in.dtype()), TypeError,
             "[" << op << "] expects a real input tensor, but got " << name(x_in.dtype()));
  const Tensor x = promote(x_in, false, op);
  const ShapeAndDims sd = shape_and_dims(x, s, dim, op);
  KILN_CHECK(!sd.dims.empty(), ValueError, "[" << op << "] must transform at least one axis");
  const Tensor r = resize(x, sd.dims, sd.shape);
  const double scale = scale_of(norm, product(sd.shape), forward);
  if (forward) return D::r2c(r, sd.dims, scale);
  // ihfftn: the backward transform of a real signal is the conjugate of the
  // forward one: the half along the last dim, conjugated, then the other
  // dims' backward transform.
  const Tensor half = conj(D::r2c(r, {sd.dims.back()}, 1.0));
  if (sd.dims.size() == 1) return scale == 1.0 ? half : mul(half, Scalar(scale));
  return D::c2c(half, std::vector<int>(sd.dims.begin(), sd.dims.end() - 1), false, scale);
}

// irfftn (backward) and hfftn (forward: the transform of the conjugate).
Tensor c2r_n(const char* op, const Tensor& x_in, const OptSizes& s, const OptDims& dim,
             std::string_view norm_s, bool forward) {
  const Norm norm = parse_norm(norm_s, op);
  const Tensor x = promote(x_in, true, op);
  ShapeAndDims sd = shape_and_dims(x, s, dim, op);
  KILN_CHECK(!sd.dims.empty(), ValueError, "[" << op << "] must transform at least one axis");
  // torch's _canonicalize_fft_c2r_shape_and_dim_args: the real size of the
  // last dim, and the half spectrum it reads.
  const int64_t n = (!s || s->back() == -1) ? 2 * (x.size(sd.dims.back()) - 1) : sd.shape.back();
  KILN_CHECK(n >= 1, ValueError, "[" << op << "] Invalid number of data points (" << n << ") specified");
  sd.shape.back() = n / 2 + 1;
  Tensor r = resize(x, sd.dims, sd.shape);
  std::vector<int64_t> signal = sd.shape;
  signal.back() = n;
  const double scale = scale_of(norm, product(signal), forward);
  if (forward) r = conj(r);
  return D::c2r(r, sd.dims, n, scale);
}

OptSizes one_size(OptSize n) { return n ? OptSizes(std::vector<int64_t>{*n}) : std::nullopt; }

}  // namespace

Tensor fft(const Tensor& x, OptSize n, int dim, std::string_view norm) {
  return c2c_n("fft.fft", x, one_size(n), std::vector<int>{dim}, norm, true);
}
Tensor ifft(const Tensor& x, OptSize n, int dim, std::string_view norm) {
  return c2c_n("fft.ifft", x, one_size(n), std::vector<int>{dim}, norm, false);
}
Tensor rfft(const Tensor& x, OptSize n, int dim, std::string_view norm) {
  return r2c_n("fft.rfft", x, one_size(n), std::vector<int>{dim}, norm, true);
}
Tensor irfft(const Tensor& x, OptSize n, int dim, std::string_view norm) {
  return c2r_n("fft.irfft", x, one_size(n), std::vector<int>{dim}, norm, false);
}
Tensor hfft(const Tensor& x, OptSize n, int dim, std::string_view norm) {
  return c2r_n("fft.hfft", x, one_size(n), std::vector<int>{dim}, norm, true);
}
Tensor ihfft(const Tensor& x, OptSize n, int dim, std::string_view norm) {
  return r2c_n("fft.ihfft", x, one_size(n), std::vector<int>{dim}, norm, false);
}

Tensor fft2(const Tensor& x, OptSizes s, std::vector<int> dim, std::string_view norm) {
  return c2c_n("fft.fft2", x, s, dim, norm, true);
}
Tensor ifft2(const Tensor& x, OptSizes s, std::vector<int> dim, std::string_view norm) {
  return c2c_n("fft.ifft2", x, s, dim, norm, false);
}
Tensor rfft2(const Tensor& x, OptSizes s, std::vector<int> dim, std::string_view norm) {
  return r2c_n("fft.rfft2", x, s, dim, norm, true);
}
Tensor irfft2(const Tensor& x, OptSizes s, std::vector<int> dim, std::string_view norm) {
  return c2r_n("fft.irfft2", x, s, dim, norm, false);
}
Tensor hfft2(const Tensor& x, OptSizes s, std::vector<int> dim, std::string_view norm) {
  return c2r_n("fft.hfft2", x, s, dim, norm, true);
}
Tensor ihfft2(const Tensor& x, OptSizes s, std::vector<int> dim, std::string_view norm) {
  return r2c_n("fft.ihfft2", x, s, dim, norm, false);
}
Tensor fftn(const Tensor& x, OptSizes s, OptDims dim, std::string_view norm) {
  return c2c_n("fft.fftn", x, s, dim, norm, true);
}
Tensor ifftn(const Tensor& x, OptSizes s, OptDims dim, std::string_view norm) {
  return c2c_n("fft.ifftn", x, s, dim, norm, false);
}
Tensor rfftn(const Tensor& x, OptSizes s, OptDims dim, std::string_view norm) {
  return r2c_n("fft.rfftn", x, s, dim, norm, true);
}
Tensor irfftn(const Tensor& x, OptSizes s, OptDims dim, std::string_view norm) {
  return c2r_n("fft.irfftn", x, s, dim, norm, false);
}
Tensor hfftn(const Tensor& x, OptSizes s, OptDims dim, std::string_view norm) {
  return c2r_n("fft.hfftn", x, s, dim, norm, true);
}
Tensor ihfftn(const Tensor& x, OptSizes s, OptDims dim, std::string_view norm) {
  return r2c_n("fft.ihfftn", x, s, dim, norm, false);
}

namespace {

// i / (d n) for i in [0, count), minus n / (d n) = 1 / d past `wrap_at`.
Tensor frequencies(const char* op, int64_t n, int64_t count, int64_t wrap_at, double d, DType dtype,
                   Device device) {
  KILN_CHECK(n >= 0, ValueError, "[" << op << "] n must be non-negative, got " << n);
  KILN_CHECK(is_floating(dtype) || is_complex(dtype), TypeError,
             "[" << op << "] expects a floating point or complex dtype, got " << name(dtype));
  // In float64 first, so the wrap and the division round once.
  Tensor i = arange(Scalar(int64_t(0)), Scalar(count), Scalar(int64_t(1)), DType::Float64, device);
  if (wrap_at < count) {
    Tensor tail = i.narrow(0, wrap_at, count - wrap_at);
    tail.copy_(sub(tail, Scalar(double(n))));
  }
  return div(i, Scalar(d * double(n))).to(dtype);
}

}  // namespace

Tensor fftfreq(int64_t n, double d, DType dtype, Device device) {
  return frequencies("fft.fftfreq", n, n, (n + 1) / 2, d, dtype, device);
}
Tensor rfftfreq(int64_t n, double d, DType dtype, Device device) {
  return frequencies("fft.rfftfreq", n, n < 0 ? 0 : n / 2 + 1, n / 2 + 1, d, dtype, device);
}

namespace {

Tensor shift(const char* op, const Tensor& x, const OptDims& dim, bool inverse) {
  std::vector<int> dims;
  if (dim)
    for (int d : *dim) dims.push_back(wrap(d, x, op));
  else
    for (int d = 0; d < x.dim(); ++d) dims.push_back(d);
  if (dims.empty()) return x.clone();
  std::vector<int64_t> shifts;
  for (int d : dims) shifts.push_back(inverse ? -(x.size(d) / 2) : x.size(d) / 2);
  return roll(x, shifts, dims);
}

}  // namespace

Tensor fftshift(const Tensor& x, OptDims dim) { return shift("fft.fftshift", x, dim, false); }
Tensor ifftshift(const Tensor& x, OptDims dim) { return shift("fft.ifftshift", x, dim, true); }

}  // namespace kiln::fft
