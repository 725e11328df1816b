// Op table entries of fft_c2c, fft_r2c and fft_c2r (ops/registry/fft.h),
// through kiln::fft's functions (cutting, zero-padding, norm= scales), against
// the DFT summed from its definition in complex double, one dim at a time.
#include "kiln/fft.h"

#include <cmath>
#include <numbers>

#include "kiln/complex.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

// A row-major array and its shape.
struct Array {
  std::vector<cdouble> v;
  Shape shape;
};

int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t m : s) n *= m;
  return n;
}

// Visits every line along dim d: f(first element's index, stride).
template <typename F>
void lines(const Shape& shape, int d, F f) {
  int64_t inner = 1;
  for (size_t i = size_t(d) + 1; i < shape.size(); ++i) inner *= shape[i];
  const int64_t outer = count(shape) / (shape[size_t(d)] * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) f(o * shape[size_t(d)] * inner + i, inner);
}

// a cut or zero-padded along dim d to n entries.
Array resized(const Array& a, int d, int64_t n) {
  Array r{{}, a.shape};
  r.shape[size_t(d)] = n;
  r.v.assign(size_t(count(r.shape)), cdouble(0));
  const int64_t m = a.shape[size_t(d)], k = std::min(m, n);
  std::vector<int64_t> src, dst;
  lines(a.shape, d, [&](int64_t first, int64_t) { src.push_back(first); });
  lines(r.shape, d, [&](int64_t first, int64_t) { dst.push_back(first); });
  int64_t inner = 1;
  for (size_t i = size_t(d) + 1; i < a.shape.size(); ++i) inner *= a.shape[i];
  for (size_t l = 0; l < src.size(); ++l)
    for (int64_t j = 0; j < k; ++j) r.v[size_t(dst[l] + j * inner)] = a.v[size_t(src[l] + j * inner)];
  return r;
}

// The DFT along dim d: out[k] = sum_j a[j] e^(sign 2 pi i j k / n).
Array dft(const Array& a, int d, int sign) {
  Array r = a;
  const int64_t n = a.shape[size_t(d)];
  lines(a.shape, d, [&](int64_t first, int64_t stride) {
    for (int64_t k = 0; k < n; ++k) {
      cdouble s = 0;
      for (int64_t j = 0; j < n; ++j)
        s += a.v[size_t(first + j * stride)] *
             std::polar(1.0, sign * 2 * std::numbers::pi * double((j * k) % n) / double(n));
      r.v[size_t(first + k * stride)] = s;
    }
  });
  return r;
}

Array scaled(Array a, double s) {
  for (cdouble& z : a.v) z *= s;
  return a;
}

// The real signal of size n whose half spectrum is a's dim d: sum over k of
// c_k Re(a_k e^(2 pi i j k / n)), c_k = 2 but 1 for k = 0 and k = n / 2.
Array hermitian_inverse(const Array& a, int d, int64_t n) {
  Array r{{}, a.shape};
  r.shape[size_t(d)] = n;
  r.v.assign(size_t(count(r.shape)), cdouble(0));
  const int64_t m = a.shape[size_t(d)];
  std::vector<int64_t> src, dst;
  lines(a.shape, d, [&](int64_t first, int64_t) { src.push_back(first); });
  lines(r.shape, d, [&](int64_t first, int64_t) { dst.push_back(first); });
  int64_t inner = 1;
  for (size_t i = size_t(d) + 1; i < a.shape.size(); ++i) inner *= a.shape[i];
  for (size_t l = 0; l < src.size(); ++l)
    for (int64_t j = 0; j < n; ++j) {
      double y = 0;
      for (int64_t k = 0; k < m; ++k) {
        const double c = (k == 0 || 2 * k == n) ? 1.0 : 2.0;
        y += c * (a.v[size_t(src[l] + k * inner)] *
                  std::polar(1.0, 2 * std::numbers::pi * double((j * k) % n) / double(n)))
                     .real();
      }
      r.v[size_t(dst[l] + j * inner)] = y;
    }
  return r;
}

std::vector<double> real_parts(const Array& a) {
  std::vector<double> r;
  for (cdouble z : a.v) r.push_back(z.real());
  return r;
}
std::vector<double> imag_parts(const Array& a) {
  std::vector<double> r;
  for (cdouble z : a.v) r.push_back(z.imag());
  return r;
}

Array input(const Inputs& in, bool complex) {
  Array a{{}, in.shapes[0]};
  if (complex)
    a.v = in.cvalues[0];
  else
    for (double v : in.values[0]) a.v.push_back(v);
  return a;
}

// [0, 6] (an empty batch), [1], [3, 5, 6] (2 of 3 dims, cut and padded),
// [5, 6] transposed, [4, 6] expanded from [1, 6].
std::vector<InputSpec> signal_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{0, 6}}};
    case ShapeClass::Scalar:
      return {{{1}}};
    case ShapeClass::Odd:
      return {{{3, 5, 6}}};
    case ShapeClass::NonContiguous:
      return {{{5, 6}, InputSpec::Transposed}};
    case ShapeClass::Broadcast:
      return {{{4, 6}, InputSpec::Expanded, {1, 6}}};
  }
  return {};
}

// Forward: fft over the last dim, and for the 3-d case fftn over dims (0, 2)
// cut/padded to (4, 5) with norm "ortho". Inverse: ifft ("backward"
// divides by n) over the last dim and ifftn over (0, 2) with s (2, 7),
// "forward" (no scale).
Entry c2c_entry(bool forward) {
  Entry e;
  e.op = "fft_c2c";
  e.dtypes = kComplex;
  e.shapes = signal_shapes;
  e.call = [forward](const std::vector<Tensor>& x) {
    if (x[0].dim() == 3)
      return forward ? fft::fftn(x[0], std::vector<int64_t>{4, 5}, std::vector<int>{0, 2}, "ortho")
                     : fft::ifftn(x[0], std::vector<int64_t>{2, 7}, std::vector<int>{0, 2}, "forward");
    return forward ? fft::fft(x[0]) : fft::ifft(x[0]);
  };
  e.complex_oracle = [forward](const Inputs& in, const Tensor&) {
    Array a = input(in, true);
    if (a.shape.size() == 3) {
      const std::vector<int64_t> s = forward ? std::vector<int64_t>{4, 5} : std::vector<int64_t>{2, 7};
      a = resized(resized(a, 0, s[0]), 2, s[1]);
      a = dft(dft(a, 0, forward ? -1 : 1), 2, forward ? -1 : 1);
      return (forward ? scaled(a, 1.0 / std::sqrt(20.0)) : a).v;
    }
    const int last = int(a.shape.size()) - 1;
    if (forward) return dft(a, last, -1).v;
    return scaled(dft(a, last, 1), 1.0 / double(a.shape[size_t(last)])).v;
  };
  e.ulps = 32;
  e.floor = 16;
  return e;
}

// rfft over the last dim (its real part), and for the 3-d case rfftn over
// dims (0, 2) cut/padded to (4, 7) with norm "forward" (its imaginary part).
Entry r2c_entry(bool imag) {
  Entry e;
  e.op = "fft_r2c";
  e.dtypes = {DType::Float32, DType::Float64};
  e.shapes = signal_shapes;
  e.call = [imag](const std::vector<Tensor>& x) {
    const Tensor y = x[0].dim() == 3
                         ? fft::rfftn(x[0], std::vector<int64_t>{4, 7}, std::vector<int>{0, 2}, "forward")
                         : fft::rfft(x[0]);
    return imag ? kiln::imag(y) : kiln::real(y);
  };
  e.oracle = [imag](const Inputs& in, const Tensor&) {
    Array a = input(in, false);
    const int last = int(a.shape.size()) - 1;
    if (a.shape.size() == 3) {
      a = resized(resized(a, 0, 4), 2, 7);
      a = scaled(dft(dft(a, 0, -1), 2, -1), 1.0 / 28.0);
    } else {
      a = dft(a, last, -1);
    }
    a = resized(a, last, a.shape[size_t(last)] / 2 + 1);
    return imag ? imag_parts(a) : real_parts(a);
  };
  e.ulps = 32;
  e.floor = 16;
  return e;
}

// irfft over the last dim (n = 2 (m - 1), or 1 for the one-element input;
// n = 11 with norm "forward" for the expanded input, whose first dim is 4),
// and for the 3-d case irfftn over dims (0, 2) with s (3, 9), "ortho".
Entry c2r_entry() {
  Entry e;
  e.op = "fft_c2r";
  e.dtypes = kComplex;
  e.shapes = signal_shapes;
  e.call = [](const std::vector<Tensor>& x) {
    if (x[0].dim() == 3)
      return fft::irfftn(x[0], std::vector<int64_t>{3, 9}, std::vector<int>{0, 2}, "ortho");
    if (x[0].dim() == 1) return fft::irfft(x[0], 1);
    if (x[0].size(0) == 4) return fft::irfft(x[0], 11, -1, "forward");
    return fft::irfft(x[0]);
  };
  e.complex_oracle = [](const Inputs& in, const Tensor&) {
    Array a = input(in, true);
    if (a.shape.size() == 3)  // the last dim cut from 6 to 9 / 2 + 1 = 5
      return scaled(hermitian_inverse(dft(resized(a, 2, 5), 0, 1), 2, 9), 1.0 / std::sqrt(27.0)).v;
    if (a.shape.size() == 1) return hermitian_inverse(a, 0, 1).v;
    if (a.shape[0] == 4) return hermitian_inverse(a, 1, 11).v;
    const int64_t n = 2 * (a.shape[1] - 1);
    return scaled(hermitian_inverse(a, 1, n), 1.0 / double(n)).v;
  };
  e.ulps = 32;
  e.floor = 16;
  return e;
}

KILN_OP_TABLE({c2c_entry(true), c2c_entry(false), r2c_entry(false), r2c_entry(true), c2r_entry()});

}  // namespace
}  // namespace op_table
