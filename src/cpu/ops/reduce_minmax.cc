// CPU kernels of max, min, amax, amin, argmax, argmin (ops/registry/reduce.h).
// NaN wins (and its first index is returned); among equal values the first
// occurrence wins.
#include <cmath>
#include <limits>

#include "core/cast.h"
#include "cpu/ops/reduce_engine.h"
#include "cpu/ops/reduce_register.h"
#include "cpu/reduce.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

constexpr DTypeSet kOrdered = kBoolSet | kIntSet | kFloatSet;

template <typename C>
inline bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
  else return false;
}

// Tracks the best value and the linear reduced index it was seen at.
template <typename T, bool kMax>
struct ExtremumReducer {
  using C = compute_t<T>;
  struct State {
    C v;
    int64_t i;
  };
  T* values;         // may be null
  int64_t* indices;  // may be null

  // True when v replaces the current best b (b not NaN; v NaN or strictly better).
  static bool better(C v, C b) {
    if (is_nan(b)) return false;
    if (is_nan(v)) return true;
    return kMax ? v > b : v < b;
  }
  State init() const { return {C(0), -1}; }
  void step(State& s, T x, int64_t idx) const {
    const C v = C(x);
    if (s.i < 0 || better(v, s.v)) s = {v, idx};
  }
  void run(State& s, const T* x, int64_t stride, int64_t n, int64_t i0) const {
    if (n == 0) return;
    if (s.i < 0) s = {C(x[0]), i0};
    // Fast scan on the value; NaN (v != v) always takes over and then sticks.
    C best = s.v;
    int64_t bi = s.i;
    if (is_nan(best)) return;
    if constexpr (std::is_same_v<T, float>) {
      if (indices == nullptr && stride == 1) {  // values only: the Highway kernel (cpu/reduce.h)
        const float v = kMax ? max_f32(x, n) : min_f32(x, n);
        return void(s.v = (v != v || better(v, best)) ? v : best);
      }
    }
    if (indices == nullptr && stride == 1) {
      // Values only: eight independent lanes (branch-free selects the compiler
      // can keep in registers); a NaN anywhere is the answer.
      C lane[8];
      bool nan = false;
      for (C& l : lane) l = best;
      int64_t k = 0;
      for (; k + 8 <= n; k += 8) {
        for (int j = 0; j < 8; ++j) {
          const C v = C(x[k + j]);
          lane[j] = (kMax ? v > lane[j] : v < lane[j]) ? v : lane[j];
          nan |= is_nan(v);
        }
      }
      for (; k < n; ++k) {
        const C v = C(x[k]);
        lane[0] = (kMax ? v > lane[0] : v < lane[0]) ? v : lane[0];
        nan |= is_nan(v);
      }
      if (nan) return void(s.v = C(NAN));
      for (const C l : lane) best = (kMax ? l > best : l < best) ? l : best;
      return void(s.v = best);
    }
    for (int64_t k = 0; k < n; ++k) {
      const C v = C(x[k * stride]);
      if (kMax ? v > best : v < best) {
        best = v;
        bi = i0 + k;
      } else if (is_nan(v)) {
        best = v;
        bi = i0 + k;
        break;
      }
    }
    s = {best, bi};
  }
  void combine(State& a, const State& b) const {
    if (b.i >= 0 && (a.i < 0 || better(b.v, a.v))) a = b;
  }
  void write(const State& s, int64_t o) const {
    if (values) values[o] = cast<T>(s.v);
    if (indices) indices[o] = s.i;
  }
};

// Runs the extremum reduction; values/indices are written when defined.
template <bool kMax>
void extremum(const Tensor& x, const std::vector<bool>& mask, const Tensor& values, const Tensor& indices) {
  const char* op = kMax ? "max" : "min";
  const ReducePlan p = make_reduce_plan(x, mask, indices.defined());
  dispatch<kOrdered>(x.dtype(), op, [&]<typename T>() {
    run_reduce<T>(p, ExtremumReducer<T, kMax>{values.defined() ? values.data<T>() : nullptr,
                                              indices.defined() ? indices.data<int64_t>() : nullptr});
  });
}

}  // namespace

void register_reduce_minmax_kernels() {
  constexpr DeviceKind kCpu = DeviceKind::CPU;
  ops::max.set_kernel(kCpu, extremum<true>);
  ops::min.set_kernel(kCpu, extremum<false>);
  ops::amax.set_kernel(kCpu, extremum<true>);
  ops::amin.set_kernel(kCpu, extremum<false>);
  ops::argmax.set_kernel(kCpu, extremum<true>);
  ops::argmin.set_kernel(kCpu, extremum<false>);
}

}  // namespace kiln::cpu
