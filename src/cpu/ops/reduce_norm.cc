// CPU kernels of logsumexp and the vector p-norm (ops/registry/reduce.h),
// computed in float64.
#include <cmath>
#include <complex>
#include <limits>

#include "core/cast.h"
#include "cpu/ops/reduce_engine.h"
#include "cpu/ops/reduce_register.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Online log-sum-exp: State (m, s) stands for m + log(s), s summed relative to
// the running maximum m.
template <typename T>
struct LogSumExpReducer {
  struct State {
    double m = -kInf;
    double s = 0;
  };
  T* out;
  // s * exp(mi - m) where m >= mi; exact when equal (covers +-inf).
  static double rescale(double s, double mi, double m) { return mi == m ? s : s * std::exp(mi - m); }
  State init() const { return {}; }
  void step(State& st, T x, int64_t) const {
    const double v = double(compute_t<T>(x));
    if (std::isnan(st.m)) return;
    if (std::isnan(v)) {
      st.m = v;
      return;
    }
    if (v == -kInf) return;
    if (v > st.m) {
      st.s = rescale(st.s, st.m, v) + 1;
      st.m = v;
    } else {
      st.s += v == st.m ? 1.0 : std::exp(v - st.m);
    }
  }
  void run(State& st, const T* x, int64_t stride, int64_t n, int64_t i0) const { step_run(*this, st, x, stride, n, i0); }
  void combine(State& a, const State& b) const {
    if (std::isnan(a.m) || std::isnan(b.m)) {
      a.m = NAN;
      return;
    }
    const double m = std::max(a.m, b.m);
    if (m == -kInf) return;
    a.s = rescale(a.s, a.m, m) + rescale(b.s, b.m, m);
    a.m = m;
  }
  void write(const State& st, int64_t o) const {
    double r;
    if (std::isnan(st.m) || st.m == -kInf || st.m == kInf) r = st.m;
    else r = st.m + std::log(st.s);
    out[o] = cast<T>(r);
  }
};

enum class NormKind { Zero, One, Two, Inf, NegInf, General };

template <typename T>
inline double abs_of(T x) {
  if constexpr (is_complex_v<T>) return std::abs(complex128(x));
  else return std::fabs(double(compute_t<T>(x)));
}

template <typename T>
using real_out_t = std::conditional_t<std::is_same_v<T, complex64>, float,
                                      std::conditional_t<std::is_same_v<T, complex128>, double, T>>;

template <typename T, NormKind K>
struct NormReducer {
  using State = double;
  real_out_t<T>* out;
  double p;
  State init() const { return K == NormKind::NegInf ? kInf : 0.0; }
  void step(State& s, T x, int64_t) const {
    const double a = abs_of(x);
    if constexpr (K == NormKind::Zero) s += a != 0 ? 1.0 : 0.0;
    else if constexpr (K == NormKind::One) s += a;
    else if constexpr (K == NormKind::Two) s += a * a;
    else if constexpr (K == NormKind::General) s += std::pow(a, p);
    else step_value(s, a);
  }
  void run(State& s, const T* x, int64_t stride, int64_t n, int64_t i0) const { step_run(*this, s, x, stride, n, i0); }
  void combine(State& a, const State& b) const {
    if constexpr (K == NormKind::Inf || K == NormKind::NegInf) step_value(a, b);
    else a += b;
  }
  void step_value(State& a, double b) const {
    if (std::isnan(a)) return;
    if (std::isnan(b) || (K == NormKind::Inf ? b > a : b < a)) a = b;
  }
  void write(const State& s, int64_t o) const {
    double r = s;
    if constexpr (K == NormKind::Two) r = std::sqrt(s);
    else if constexpr (K == NormKind::General) r = std::pow(s, 1.0 / p);
    out[o] = cast<real_out_t<T>>(r);
  }
};

// x: a float dtype (the front-end casts bool and integers to float32).
void logsumexp(const Tensor& x, const std::vector<bool>& mask, const Tensor& out) {
  const ReducePlan p = make_reduce_plan(x, mask, false);
  dispatch<kFloatSet>(x.dtype(), "logsumexp", [&]<typename T>() {
    run_reduce<T>(p, LogSumExpReducer<T>{out.data<T>()});
  });
}

void norm(const Tensor& x, const std::vector<bool>& mask, double p, const Tensor& out) {
  const ReducePlan plan = make_reduce_plan(x, mask, false);
  const NormKind kind = p == 0     ? NormKind::Zero
                        : p == 1   ? NormKind::One
                        : p == 2   ? NormKind::Two
                        : p == kInf ? NormKind::Inf
                        : p == -kInf ? NormKind::NegInf
                                    : NormKind::General;
  dispatch<kFloatSet | kComplexSet>(x.dtype(), "norm", [&]<typename T>() {
    real_out_t<T>* o = out.data<real_out_t<T>>();
    switch (kind) {
      case NormKind::Zero: run_reduce<T>(plan, NormReducer<T, NormKind::Zero>{o, p}); break;
      case NormKind::One: run_reduce<T>(plan, NormReducer<T, NormKind::One>{o, p}); break;
      case NormKind::Two: run_reduce<T>(plan, NormReducer<T, NormKind::Two>{o, p}); break;
      case NormKind::Inf: run_reduce<T>(plan, NormReducer<T, NormKind::Inf>{o, p}); break;
      case NormKind::NegInf: run_reduce<T>(plan, NormReducer<T, NormKind::NegInf>{o, p}); break;
      case NormKind::General: run_reduce<T>(plan, NormReducer<T, NormKind::General>{o, p}); break;
    }
  });
}

}  // namespace

void register_reduce_norm_kernels() {
  ops::logsumexp.set_kernel(DeviceKind::CPU, logsumexp);
  ops::norm.set_kernel(DeviceKind::CPU, norm);
}

}  // namespace kiln::cpu
