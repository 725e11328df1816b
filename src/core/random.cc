#include "kiln/random.h"

#include <cmath>

#include "core/cast.h"
#include "kiln/thread_pool.h"

namespace kiln {

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  seed_ = seed;
  offset_ = 0;
}

uint64_t Generator::advance(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t base = offset_;
  offset_ += n;
  return base;
}

Generator& default_generator() {
  static Generator* g = new Generator();
  return *g;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

void philox(uint64_t counter, uint64_t key, uint32_t out[4]) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = uint64_t(kM0) * c0, p1 = uint64_t(kM1) * c2;
    const uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0, n1 = uint32_t(p1);
    const uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1, n3 = uint32_t(p0);
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += kW0;
    k1 += kW1;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

namespace {

// Uniform in [0, 1) with 24 (float) or 53 (double) random bits.
inline float u01f(uint32_t x) { return float(x >> 8) * (1.0f / 16777216.0f); }
inline double u01d(uint32_t a, uint32_t b) {
  return double(((uint64_t(a) << 32) | b) >> 11) * (1.0 / 9007199254740992.0);
}

template <typename Fn>
Tensor generate(const Shape& shape, DType dtype, Generator* gen, DTypeSet allowed, const char* op, Fn fn) {
  if (!(allowed & bit(dtype))) throw TypeError(std::string("[") + op + "] unsupported dtype " + name(dtype));
  Tensor t = empty(shape, dtype);
  Generator& g = gen ? *gen : default_generator();
  const int64_t n = t.numel();
  const uint64_t base = g.advance(uint64_t(n));
  const uint64_t key = g.initial_seed();
  dispatch<kIntSet | kFloatSet>(dtype, op, [&]<typename T>() {
    T* p = static_cast<T*>(t.data_ptr());
    parallel_for(0, n, 1 << 14, [&](int64_t b, int64_t e) {
      uint32_t w[4];
      for (int64_t i = b; i < e; ++i) {
        philox(base + uint64_t(i), key, w);
        p[i] = fn.template operator()<T>(w);
      }
    });
  });
  return t;
}

}  // namespace

Tensor rand(const Shape& shape, DType dtype, Generator* gen) {
  return generate(shape, dtype, gen, kFloatSet, "rand", []<typename T>(const uint32_t* w) -> T {
    if constexpr (std::is_same_v<T, double>) return u01d(w[0], w[1]);
    else if constexpr (std::is_same_v<T, float>) return u01f(w[0]);
    else if constexpr (is_float_v<T>) {
      // Narrow floats: k / 2^bits with as many bits as the format has (8 for
      // bf16, 11 for f16), so every draw is exact and never rounds up to 1.
      constexpr int kBits = std::is_same_v<T, bfloat16> ? 8 : 11;
      return T(float(w[0] >> (32 - kBits)) * (1.0f / float(1u << kBits)));
    } else {
      return T(0);
    }
  });
}

Tensor randn(const Shape& shape, DType dtype, Generator* gen) {
  return generate(shape, dtype, gen, kFloatSet, "randn", []<typename T>(const uint32_t* w) -> T {
    if constexpr (is_float_v<T>) {
      // Box-Muller on two 53-bit uniforms; (0, 1] for the log.
      const double u1 = 1.0 - u01d(w[0], w[1]);
      const double u2 = u01d(w[2], w[3]);
      const double r = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
      return cast<T>(r);
    } else {
      return T(0);
    }
  });
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype, Generator* gen) {
  if (high <= low)
    throw ValueError("[randint] random_ expects 'from' to be less than 'to', but got from=" + std::to_string(low) +
                     " >= to=" + std::to_string(high));
  const uint64_t range = uint64_t(high) - uint64_t(low);
  return generate(shape, dtype, gen, kIntSet | kFloatSet, "randint", [=]<typename T>(const uint32_t* w) -> T {
    // 64 random bits mod range: bias below 2^-32 for ranges under 2^32.
    const uint64_t r = ((uint64_t(w[0]) << 32) | w[1]) % range;
    return cast<T>(int64_t(uint64_t(low) + r));
  });
}

}  // namespace kiln
