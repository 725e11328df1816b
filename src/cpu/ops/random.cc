// CPU kernels of rand, randn and randint (core/random_ops.h): element i is a
// function of philox(offset + i, seed) alone, computed in parallel chunks, so
// the bits do not depend on the thread count.
#include "kiln/random.h"

#include <cmath>
#include <type_traits>

#include "core/cast.h"
#include "core/random_ops.h"
#include "cpu/ops/register.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {
namespace {

// Uniform in [0, 1) with 24 (float) or 53 (double) random bits.
inline float u01f(uint32_t x) { return float(x >> 8) * (1.0f / 16777216.0f); }
inline double u01d(uint32_t a, uint32_t b) {
  return double(((uint64_t(a) << 32) | b) >> 11) * (1.0 / 9007199254740992.0);
}

// out[i] = fn<T>(philox(offset + i, seed)) over the dtypes in `Set`.
template <DTypeSet Set, typename Fn>
void generate(const Tensor& out, uint64_t seed, uint64_t offset, const char* op, Fn fn) {
  const int64_t n = out.numel();
  dispatch<Set>(out.dtype(), op, [&]<typename T>() {
    T* p = static_cast<T*>(out.data_ptr());
    parallel_for(0, n, 1 << 14, [&](int64_t b, int64_t e) {
      uint32_t w[4];
      for (int64_t i = b; i < e; ++i) {
        philox(offset + uint64_t(i), seed, w);
        p[i] = fn.template operator()<T>(w);
      }
    });
  });
}

void rand(const Tensor& out, uint64_t seed, uint64_t offset) {
  generate<kFloatSet>(out, seed, offset, "rand", []<typename T>(const uint32_t* w) -> T {
    if constexpr (std::is_same_v<T, double>) {
      return u01d(w[0], w[1]);
    } else if constexpr (std::is_same_v<T, float>) {
      return u01f(w[0]);
    } else {
      // Narrow floats: k / 2^bits with as many bits as the format has (8 for
      // bf16, 11 for f16), so every draw is exact and never rounds up to 1.
      constexpr int kBits = std::is_same_v<T, bfloat16> ? 8 : 11;
      return T(float(w[0] >> (32 - kBits)) * (1.0f / float(1u << kBits)));
    }
  });
}

void randn(const Tensor& out, uint64_t seed, uint64_t offset) {
  generate<kFloatSet>(out, seed, offset, "randn", []<typename T>(const uint32_t* w) -> T {
    // Box-Muller on two 53-bit uniforms; (0, 1] for the log.
    const double u1 = 1.0 - u01d(w[0], w[1]);
    const double u2 = u01d(w[2], w[3]);
    const double r = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    return cast<T>(r);
  });
}

void randint(const Tensor& out, uint64_t seed, uint64_t offset, int64_t low, int64_t high) {
  const uint64_t range = uint64_t(high) - uint64_t(low);
  generate<kIntSet | kFloatSet>(out, seed, offset, "randint", [=]<typename T>(const uint32_t* w) -> T {
    // 64 random bits mod range: bias below 2^-32 for ranges under 2^32.
    const uint64_t r = ((uint64_t(w[0]) << 32) | w[1]) % range;
    return cast<T>(int64_t(uint64_t(low) + r));
  });
}

}  // namespace

void register_random_kernels() {
  ops::rand.set_kernel(DeviceKind::CPU, rand);
  ops::randn.set_kernel(DeviceKind::CPU, randn);
  ops::randint.set_kernel(DeviceKind::CPU, randint);
}

}  // namespace kiln::cpu
