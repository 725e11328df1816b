// sum, mean, prod, all, any, count_nonzero.
#include <complex>
#include <string>

#include "core/cast.h"
#include "cpu/reduce.h"
#include "ops/reduce_acc.h"
#include "ops/reduce_engine.h"

namespace kiln {
namespace {

// Pairwise sum of a strided run: error grows with log(n), not n.
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
      if (stride == 1) return void(s += cpu::sum_f32(x, n));
    } else if constexpr (std::is_same_v<T, bfloat16>) {
      if (stride == 1) return void(s += cpu::sum_bf16(reinterpret_cast<const uint16_t*>(x), n));
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

DType natural_sum_dtype(DType d) { return is_integral(d, true) ? DType::Int64 : d; }

// sum (mean = false) or mean over x's natural accumulation; dtype casts first.
Tensor sum_mean(const char* op, const Tensor& x_in, const DimList& dim, bool keepdim,
                std::optional<DType> dtype, bool mean) {
  reject_fp8(x_in, op);
  if (dtype) {
    if (is_fp8(*dtype)) throw TypeError(std::string("[") + op + "] unsupported dtype " + name(*dtype));
    if (mean && !(is_floating(*dtype) || is_complex(*dtype)))
      throw TypeError(std::string("[") + op + "] could not infer output dtype: dtype must be floating point or complex, got " +
                      name(*dtype));
  } else if (mean && !(is_floating(x_in.dtype()) || is_complex(x_in.dtype()))) {
    throw TypeError(std::string("[") + op + "] could not infer output dtype: input dtype must be floating point or complex, got " +
                    name(x_in.dtype()) + "; pass dtype=");
  }
  const Tensor x = dtype ? x_in.to(*dtype) : x_in;
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), op);
  Tensor out = empty(reduced_shape(x.shape(), mask, keepdim), natural_sum_dtype(x.dtype()));
  const ReducePlan p = make_reduce_plan(x, mask, false);
  dispatch<kNoFp8>(x.dtype(), op, [&]<typename T>() {
    using Out = sum_out_t<T>;
    const double scale = mean ? 1.0 / double(p.n_red) : 1.0;  // n_red = 0 gives inf * 0 = NaN
    run_reduce<T>(p, SumReducer<T>{out.data<Out>(), mean && p.n_red == 0 ? NAN : scale});
  });
  if (dtype && out.dtype() != *dtype) out = out.to(*dtype);
  return out;
}

}  // namespace

Tensor sum(const Tensor& x, const DimList& dim, bool keepdim, std::optional<DType> dtype) {
  return sum_mean("sum", x, dim, keepdim, dtype, false);
}

Tensor mean(const Tensor& x, const DimList& dim, bool keepdim, std::optional<DType> dtype) {
  return sum_mean("mean", x, dim, keepdim, dtype, true);
}

Tensor prod(const Tensor& x_in, const DimList& dim, bool keepdim, std::optional<DType> dtype) {
  reject_fp8(x_in, "prod");
  if (dtype && is_fp8(*dtype)) throw TypeError(std::string("[prod] unsupported dtype ") + name(*dtype));
  const Tensor x = dtype ? x_in.to(*dtype) : x_in;
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), "prod");
  Tensor out = empty(reduced_shape(x.shape(), mask, keepdim), natural_sum_dtype(x.dtype()));
  const ReducePlan p = make_reduce_plan(x, mask, false);
  dispatch<kNoFp8>(x.dtype(), "prod", [&]<typename T>() {
    run_reduce<T>(p, ProdReducer<T>{out.data<sum_out_t<T>>()});
  });
  if (dtype && out.dtype() != *dtype) out = out.to(*dtype);
  return out;
}

namespace {
template <bool kAll>
Tensor logical(const char* op, const Tensor& x, const DimList& dim, bool keepdim) {
  reject_fp8(x, op);
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), op);
  // torch keeps uint8 for uint8 inputs (a legacy of uint8 masks).
  const DType od = x.dtype() == DType::UInt8 ? DType::UInt8 : DType::Bool;
  Tensor out = empty(reduced_shape(x.shape(), mask, keepdim), od);
  const ReducePlan p = make_reduce_plan(x, mask, false);
  dispatch<kNoFp8>(x.dtype(), op, [&]<typename T>() {
    if (od == DType::UInt8) run_reduce<T>(p, LogicalReducer<T, uint8_t, kAll>{out.data<uint8_t>()});
    else run_reduce<T>(p, LogicalReducer<T, bool, kAll>{out.data<bool>()});
  });
  return out;
}
}  // namespace

Tensor all(const Tensor& x, const DimList& dim, bool keepdim) { return logical<true>("all", x, dim, keepdim); }
Tensor any(const Tensor& x, const DimList& dim, bool keepdim) { return logical<false>("any", x, dim, keepdim); }

Tensor count_nonzero(const Tensor& x, const DimList& dim) {
  reject_fp8(x, "count_nonzero");
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), "count_nonzero");
  Tensor out = empty(reduced_shape(x.shape(), mask, false), DType::Int64);
  const ReducePlan p = make_reduce_plan(x, mask, false);
  dispatch<kNoFp8>(x.dtype(), "count_nonzero", [&]<typename T>() {
    run_reduce<T>(p, CountNonzeroReducer<T>{out.data<int64_t>()});
  });
  return out;
}

}  // namespace kiln
