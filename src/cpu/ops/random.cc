// CPU kernels of rand, randn and randint (core/random_ops.h): element i is a
// function of philox(offset + i, seed) alone, computed in parallel chunks, so
// the bits do not depend on the thread count.
#include "kiln/random.h"

#include <algorithm>
#include <type_traits>

#include "core/cast.h"
#include "core/random_ops.h"
#include "cpu/ops/register.h"
#include "cpu/philox_block.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {
namespace {

// Uniform in [0, 1) with 24 (float) or 53 (double) random bits.
inline float u01f(uint32_t x) { return float(x >> 8) * (1.0f / 16777216.0f); }
inline double u01d(uint32_t a, uint32_t b) {
  return double(((uint64_t(a) << 32) | b) >> 11) * (1.0 / 9007199254740992.0);
}

// out[i] = a function of philox(offset + i, seed) over the dtypes in `Set`:
// fn<T>(words, p, m) writes p[k], k < m <= kPhiloxBlock, from words[4k, 4k + 4),
// the draw of p[k]'s counter. The counters of a chunk are drawn a block at a
// time in SIMD lanes (cpu/philox_block.h), the same bits as kiln::philox's.
template <DTypeSet Set, typename Fn>
void generate(const Tensor& out, uint64_t seed, uint64_t offset, const char* op, Fn fn) {
  const int64_t n = out.numel();
  dispatch<Set>(out.dtype(), op, [&]<typename T>() {
    T* p = static_cast<T*>(out.data_ptr());
    parallel_for(0, n, 1 << 14, [&](int64_t b, int64_t e) {
      alignas(64) uint32_t w[4 * kPhiloxBlock];
      for (int64_t i = b; i < e; i += kPhiloxBlock) {
        philox_block(offset + uint64_t(i), seed, w);
        fn.template operator()<T>(w, p + i, int(std::min<int64_t>(kPhiloxBlock, e - i)));
      }
    });
  });
}

void rand(const Tensor& out, uint64_t seed, uint64_t offset) {
  generate<kFloatSet>(out, seed, offset, "rand", []<typename T>(const uint32_t* w, T* p, int m) {
    for (int k = 0; k < m; ++k) {
      const uint32_t* wk = w + 4 * k;
      if constexpr (std::is_same_v<T, double>) {
        p[k] = u01d(wk[0], wk[1]);
      } else if constexpr (std::is_same_v<T, float>) {
        p[k] = u01f(wk[0]);
      } else {
        // Narrow floats: k / 2^bits with as many bits as the format has (8 for
        // bf16, 11 for f16), so every draw is exact and never rounds up to 1.
        constexpr int kBits = std::is_same_v<T, bfloat16> ? 8 : 11;
        p[k] = T(float(wk[0] >> (32 - kBits)) * (1.0f / float(1u << kBits)));
      }
    }
  });
}

void randn(const Tensor& out, uint64_t seed, uint64_t offset) {
  generate<kFloatSet>(out, seed, offset, "randn", []<typename T>(const uint32_t* w, T* p, int m) {
    // Box-Muller on two 53-bit uniforms, in float64, rounded once to T.
    alignas(64) double r[kPhiloxBlock];
    box_muller_block(w, r);
    for (int k = 0; k < m; ++k) p[k] = cast<T>(r[k]);
  });
}

void randint(const Tensor& out, uint64_t seed, uint64_t offset, int64_t low, int64_t high) {
  const uint64_t range = uint64_t(high) - uint64_t(low);
  generate<kIntSet | kFloatSet>(out, seed, offset, "randint",
                                [=]<typename T>(const uint32_t* w, T* p, int m) {
                                  // 64 random bits mod range: bias below 2^-32 for ranges under 2^32.
                                  for (int k = 0; k < m; ++k) {
                                    const uint64_t r = ((uint64_t(w[4 * k]) << 32) | w[4 * k + 1]) % range;
                                    p[k] = cast<T>(int64_t(uint64_t(low) + r));
                                  }
                                });
}

}  // namespace

void register_random_kernels() {
  ops::rand.set_kernel(DeviceKind::CPU, rand);
  ops::randn.set_kernel(DeviceKind::CPU, randn);
  ops::randint.set_kernel(DeviceKind::CPU, randint);
}

}  // namespace kiln::cpu
