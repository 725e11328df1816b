// CPU kernels of var, std, var_mean, std_mean (ops/registry/reduce.h): a
// two-pass over short blocks of each run (the float32 contiguous case in SIMD),
// blocks and threads merged with Chan's formula, Welford's update for the
// strided column case. All in float64.
#include <cmath>
#include <complex>

#include "core/cast.h"
#include "cpu/ops/reduce_engine.h"
#include "cpu/ops/reduce_register.h"
#include "cpu/reduce.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

template <typename T>
using mean_t = std::conditional_t<is_complex_v<T>, complex128, double>;
// Storage type of the (real) variance of T.
template <typename T>
using real_out_t = std::conditional_t<std::is_same_v<T, complex64>, float,
                                      std::conditional_t<std::is_same_v<T, complex128>, double, T>>;

template <typename T>
inline mean_t<T> widen(T v) {
  if constexpr (is_complex_v<T>) return complex128(v);
  else return double(compute_t<T>(v));
}
inline double abs2(double d) { return d * d; }
inline double abs2(complex128 d) { return d.real() * d.real() + d.imag() * d.imag(); }

template <typename T>
struct MomentsReducer {
  using M = mean_t<T>;
  struct State {
    double n = 0;
    M mean = M(0);
    double m2 = 0;
  };
  real_out_t<T>* var;  // may be null
  T* mean;             // may be null
  double correction;
  bool take_sqrt;

  State init() const { return {}; }
  void step(State& s, T x, int64_t) const {
    const M v = widen(x);
    s.n += 1;
    const M delta = v - s.mean;
    s.mean += delta / s.n;
    if constexpr (is_complex_v<T>) s.m2 += (std::conj(delta) * (v - s.mean)).real();
    else s.m2 += delta * (v - s.mean);
  }
  void merge(State& a, double nb, M mb, double m2b) const {
    if (nb == 0) return;
    if (a.n == 0) {
      a = {nb, mb, m2b};
      return;
    }
    const double n = a.n + nb;
    const M delta = mb - a.mean;
    a.mean += delta * (nb / n);
    a.m2 += m2b + abs2(delta) * (a.n * nb / n);
    a.n = n;
  }
  void run(State& s, const T* x, int64_t stride, int64_t n, int64_t) const {
    if constexpr (std::is_same_v<T, float>) {
      if (stride == 1) {
        double mb, m2b;
        var_mean_f32(x, n, &mb, &m2b);
        return merge(s, double(n), mb, m2b);
      }
    }
    constexpr int64_t kBlock = 2048;
    for (int64_t b = 0; b < n; b += kBlock) {
      const int64_t m = std::min(kBlock, n - b);
      const T* p = x + b * stride;
      M sum = M(0);
      for (int64_t i = 0; i < m; ++i) sum += widen(p[i * stride]);
      const M mb = sum / double(m);
      M sd = M(0);
      double sq = 0;
      for (int64_t i = 0; i < m; ++i) {
        const M d = widen(p[i * stride]) - mb;
        sd += d;
        sq += abs2(d);
      }
      double m2b = sq - abs2(sd) / double(m);
      if (m2b < 0) m2b = 0;  // rounding; NaN passes through
      merge(s, double(m), mb + sd / double(m), m2b);
    }
  }
  void combine(State& a, const State& b) const { merge(a, b.n, b.mean, b.m2); }
  void write(const State& s, int64_t o) const {
    if (var) {
      const double v = s.m2 / std::max(0.0, s.n - correction);
      var[o] = cast<real_out_t<T>>(take_sqrt ? std::sqrt(v) : v);
    }
    // The mean of nothing is 0/0: NaN in every part (complex: nan+nanj, as mean).
    M empty = M(NAN);
    if constexpr (is_complex_v<T>) empty = M(NAN, NAN);
    if (mean) mean[o] = cast<T>(s.n == 0 ? empty : s.mean);
  }
};

// The variance (or std, kSqrt) into var and, when defined, the mean into mean.
template <bool kSqrt>
void moments(const Tensor& x, const std::vector<bool>& mask, double correction, const Tensor& var,
             const Tensor& mean) {
  const ReducePlan p = make_reduce_plan(x, mask, false);
  dispatch<kFloatSet | kComplexSet>(x.dtype(), kSqrt ? "std" : "var", [&]<typename T>() {
    run_reduce<T>(p, MomentsReducer<T>{var.data<real_out_t<T>>(), mean.defined() ? mean.data<T>() : nullptr,
                                       correction, kSqrt});
  });
}

}  // namespace

void register_reduce_moments_kernels() {
  constexpr DeviceKind kCpu = DeviceKind::CPU;
  ops::var.set_kernel(kCpu, moments<false>);
  ops::std.set_kernel(kCpu, moments<true>);
  ops::var_mean.set_kernel(kCpu, moments<false>);
  ops::std_mean.set_kernel(kCpu, moments<true>);
}

}  // namespace kiln::cpu
