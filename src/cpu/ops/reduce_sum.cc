// CPU kernels of sum, mean, nansum, nanmean, prod, all, any and count_nonzero
// (ops/registry/reduce.h): reducers over the reduction engine; contiguous
// float32/bfloat16 runs of sum/mean go to the SIMD sums of cpu/reduce.cc.
#include <cmath>
#include <complex>

#include "core/cast.h"
#include "cpu/ops/reduce_acc.h"
#include "cpu/ops/reduce_engine.h"
#include "cpu/ops/reduce_register.h"
#include "cpu/reduce.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

template <typename T>
acc_t<T> pairwise_sum(const T* x, int64_t stride, int64_t n) {
  using A = acc_t<T>;
  if (n <= 256) {
    A a0 = A(0), a1 = A(0), a2 = A(0), a3 = A(0);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      a0 += to_acc(x[i * stride]);
      a1 += to_acc(x[(i + 1) * stride]);
      a2 += to_acc(x[(i + 2) * stride]);
      a3 += to_acc(x[(i + 3) * stride]);
    }
    for (; i < n; ++i) a0 += to_acc(x[i * stride]);
    return (a0 + a1) + (a2 + a3);
  }
  const int64_t h = (n / 2 + 255) / 256 * 256;
  return pairwise_sum(x, stride, h) + pairwise_sum(x + h * stride, stride, n - h);
}

template <typename T>
struct SumReducer {
  using State = acc_t<T>;
  using Out = sum_out_t<T>;
  Out* out;
  double scale;  // 1 for sum, 1/N for mean
  State init() const { return State(0); }
  void step(State& s, T v, int64_t) const { s += to_acc(v); }
  void run(State& s, const T* x, int64_t stride, int64_t n, int64_t) const {
    if constexpr (std::is_same_v<T, float>) {
      if (stride == 1) return void(s += sum_f32(x, n));
    } else if constexpr (std::is_same_v<T, bfloat16>) {
      if (stride == 1) return void(s += sum_bf16(reinterpret_cast<const uint16_t*>(x), n));
    }
    if constexpr (is_float_v<T> || is_complex_v<T>) {
      s += pairwise_sum(x, stride, n);
    } else {
      State a = 0;
      for (int64_t i = 0; i < n; ++i) a += to_acc(x[i * stride]);
      s += a;
    }
  }
  void combine(State& a, const State& b) const { a += b; }
  void write(const State& s, int64_t o) const {
    if constexpr (is_float_v<T> || is_complex_v<T>) out[o] = from_acc<Out>(scale == 1.0 ? s : s * scale);
    else out[o] = from_acc<Out>(s);
  }
};

// nansum / nanmean over floating T: the sum of the non-NaN values and their
// count (mean divides by the count: 0 / 0 = NaN when every value is NaN).
template <typename T>
struct NanSumReducer {
  struct State {
    double sum = 0;
    int64_t count = 0;
  };
  T* out;
  bool mean;
  State init() const { return {}; }
  void step(State& s, T v, int64_t) const {
    const double d = double(compute_t<T>(v));
    if (d == d) {
      s.sum += d;
      ++s.count;
    }
  }
  void run(State& s, const T* x, int64_t stride, int64_t n, int64_t i0) const {
    if constexpr (std::is_same_v<T, float>) {
      if (stride == 1) {  // nansum needs no count
        int64_t c = 0;
        s.sum += nansum_f32(x, n, mean ? &c : nullptr);
        s.count += c;
        return;
      }
    }
    step_run(*this, s, x, stride, n, i0);
  }
  void combine(State& a, const State& b) const {
    a.sum += b.sum;
    a.count += b.count;
  }
  void write(const State& s, int64_t o) const { out[o] = cast<T>(mean ? s.sum / double(s.count) : s.sum); }
};

template <typename T>
struct ProdReducer {
  using State = acc_t<T>;
  using Out = sum_out_t<T>;
  Out* out;
  State init() const { return State(1); }
  void step(State& s, T v, int64_t) const { s *= to_acc(v); }
  void run(State& s, const T* x, int64_t stride, int64_t n, int64_t i0) const { step_run(*this, s, x, stride, n, i0); }
  void combine(State& a, const State& b) const { a *= b; }
  void write(const State& s, int64_t o) const { out[o] = from_acc<Out>(s); }
};

// all (kAll) / any: short-circuits within a run once the answer is known.
template <typename T, typename Out, bool kAll>
struct LogicalReducer {
  using State = bool;
  Out* out;
  State init() const { return kAll; }
  void step(State& s, T v, int64_t) const { s = kAll ? (s && cast<bool>(v)) : (s || cast<bool>(v)); }
  void run(State& s, const T* x, int64_t stride, int64_t n, int64_t) const {
    if (s != kAll) return;
    for (int64_t i = 0; i < n; ++i)
      if (cast<bool>(x[i * stride]) != kAll) return void(s = !kAll);
  }
  void combine(State& a, const State& b) const { a = kAll ? (a && b) : (a || b); }
  void write(const State& s, int64_t o) const { out[o] = Out(s); }
};

template <typename T>
struct CountNonzeroReducer {
  using State = int64_t;
  int64_t* out;
  State init() const { return 0; }
  void step(State& s, T v, int64_t) const { s += cast<bool>(v) ? 1 : 0; }
  void run(State& s, const T* x, int64_t stride, int64_t n, int64_t i0) const { step_run(*this, s, x, stride, n, i0); }
  void combine(State& a, const State& b) const { a += b; }
  void write(const State& s, int64_t o) const { out[o] = s; }
};

// sum (mean = false) or mean; out: x's natural sum dtype.
template <bool kMean>
void sum_mean(const Tensor& x, const std::vector<bool>& mask, const Tensor& out) {
  const char* op = kMean ? "mean" : "sum";
  const ReducePlan p = make_reduce_plan(x, mask, false);
  dispatch<kNoFp8>(x.dtype(), op, [&]<typename T>() {
    using Out = sum_out_t<T>;
    const double scale = kMean ? 1.0 / double(p.n_red) : 1.0;  // n_red = 0 gives inf * 0 = NaN
    run_reduce<T>(p, SumReducer<T>{out.data<Out>(), kMean && p.n_red == 0 ? NAN : scale});
  });
}

// nansum (mean = false) or nanmean; x floating, out: x's dtype.
template <bool kMean>
void nansum_mean(const Tensor& x, const std::vector<bool>& mask, const Tensor& out) {
  const ReducePlan p = make_reduce_plan(x, mask, false);
  dispatch<kFloatSet>(x.dtype(), kMean ? "nanmean" : "nansum", [&]<typename T>() {
    run_reduce<T>(p, NanSumReducer<T>{out.data<T>(), kMean});
  });
}

void prod(const Tensor& x, const std::vector<bool>& mask, const Tensor& out) {
  const ReducePlan p = make_reduce_plan(x, mask, false);
  dispatch<kNoFp8>(x.dtype(), "prod", [&]<typename T>() {
    run_reduce<T>(p, ProdReducer<T>{out.data<sum_out_t<T>>()});
  });
}

// all (kAll) / any; out: bool, or uint8 for a uint8 x.
template <bool kAll>
void logical(const Tensor& x, const std::vector<bool>& mask, const Tensor& out) {
  const char* op = kAll ? "all" : "any";
  const ReducePlan p = make_reduce_plan(x, mask, false);
  dispatch<kNoFp8>(x.dtype(), op, [&]<typename T>() {
    if (out.dtype() == DType::UInt8) run_reduce<T>(p, LogicalReducer<T, uint8_t, kAll>{out.data<uint8_t>()});
    else run_reduce<T>(p, LogicalReducer<T, bool, kAll>{out.data<bool>()});
  });
}

void count_nonzero(const Tensor& x, const std::vector<bool>& mask, const Tensor& out) {
  const ReducePlan p = make_reduce_plan(x, mask, false);
  dispatch<kNoFp8>(x.dtype(), "count_nonzero", [&]<typename T>() {
    run_reduce<T>(p, CountNonzeroReducer<T>{out.data<int64_t>()});
  });
}

}  // namespace

void register_reduce_sum_kernels() {
  constexpr DeviceKind kCpu = DeviceKind::CPU;
  ops::sum.set_kernel(kCpu, sum_mean<false>);
  ops::mean.set_kernel(kCpu, sum_mean<true>);
  ops::nansum.set_kernel(kCpu, nansum_mean<false>);
  ops::nanmean.set_kernel(kCpu, nansum_mean<true>);
  ops::prod.set_kernel(kCpu, prod);
  ops::all.set_kernel(kCpu, logical<true>);
  ops::any.set_kernel(kCpu, logical<false>);
  ops::count_nonzero.set_kernel(kCpu, count_nonzero);
}

}  // namespace kiln::cpu
