// The transforms' front-ends (ops/fft_ops.h): output allocation on the input's
// device, the kernel, and the derivatives. With F the unnormalized transform,
// each op is y = scale * F x, so its adjoint is scale * F^H:
//   c2c: the transform the other way round, same scale;
//   r2c: the gradient zero-padded back to n entries, the backward c2c, its
//        real part (x was real);
//   c2r: the forward r2c of the gradient, with the entries that stand for two
//        (all but the first and, for even n, the last) counted twice.
// All three are written with these ops, so they differentiate again.
#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/complex.h"
#include "kiln/pad.h"
#include "ops/fft_ops.h"
#include "ops/registry/all.h"

namespace kiln::fft_detail {
namespace {

DType complex_of(DType real) { return real == DType::Float64 ? DType::Complex128 : DType::Complex64; }
DType real_of(DType cpx) { return cpx == DType::Complex128 ? DType::Float64 : DType::Float32; }

// x with dim `d` zero-padded at its end to `size` entries.
Tensor pad_end(const Tensor& x, int d, int64_t size) {
  std::vector<int64_t> p(size_t(2 * (x.dim() - d)), 0);
  p[p.size() - 1] = size - x.size(d);
  return pad(x, p);
}

// [m] weights 1, 2, ..., 2, and 1 last when n is even: how many spectrum
// entries each half-spectrum entry stands for; shaped to broadcast along d.
Tensor hermitian_weights(const Tensor& like, int d, int64_t m, int64_t n) {
  Shape shape(size_t(like.dim()), 1);
  shape[size_t(d)] = m;
  Tensor w = full(shape, Scalar(2.0), like.dtype(), like.device());
  w.narrow(d, 0, 1).fill_(Scalar(1.0));
  if (n % 2 == 0 && m > 1) w.narrow(d, m - 1, 1).fill_(Scalar(1.0));
  return w;
}

}  // namespace

Tensor c2c(const Tensor& x, const std::vector<int>& dims, bool forward, double scale) {
  autograd::Record rec("fft_c2c", {&x});
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  ops::fft_c2c(common_device("fft_c2c", {&x, &out}), x, dims, forward, scale, out);
  if (rec)
    rec.finish("FftC2CBackward0", {&out}, {}, [dims, forward, scale](autograd::FnNode&, autograd::Grads& g) {
      return autograd::Grads{c2c(g[0], dims, !forward, scale)};
    });
  return out;
}

Tensor r2c(const Tensor& x, const std::vector<int>& dims, double scale) {
  autograd::Record rec("fft_r2c", {&x});
  const int last = dims.back();
  const int64_t n = x.size(last);
  Shape shape = x.sizes();
  shape[size_t(last)] = n / 2 + 1;
  Tensor out = empty(shape, complex_of(x.dtype()), x.device());
  ops::fft_r2c(common_device("fft_r2c", {&x, &out}), x, dims, scale, out);
  if (rec)
    rec.finish("FftR2CBackward0", {&out}, {}, [dims, n, scale](autograd::FnNode&, autograd::Grads& g) {
      return autograd::Grads{real(c2c(pad_end(g[0], dims.back(), n), dims, false, scale))};
    });
  return out;
}

Tensor c2r(const Tensor& x, const std::vector<int>& dims, int64_t n, double scale) {
  autograd::Record rec("fft_c2r", {&x});
  const int last = dims.back();
  Shape shape = x.sizes();
  shape[size_t(last)] = n;
  Tensor out = empty(shape, real_of(x.dtype()), x.device());
  ops::fft_c2r(common_device("fft_c2r", {&x, &out}), x, dims, scale, out);
  if (rec)
    rec.finish("FftC2RBackward0", {&out}, {}, [dims, n, scale](autograd::FnNode&, autograd::Grads& g) {
      const int d = dims.back();
      const Tensor half = r2c(g[0], dims, scale);
      return autograd::Grads{mul(half, hermitian_weights(g[0], d, half.size(d), n))};
    });
  return out;
}

}  // namespace kiln::fft_detail
