#include "kiln/random.h"

#include "core/empty_on.h"
#include "core/random_ops.h"

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

// Validates the dtype, allocates the output on `device` and reserves its
// counters: (seed, offset) of element 0; element i uses offset + i.
struct Draw {
  Tensor out;
  uint64_t seed, offset;
};
Draw draw(const Shape& shape, DType dtype, Generator* gen, Device device, DTypeSet allowed, const char* op) {
  if (!(allowed & bit(dtype))) throw TypeError(std::string("[") + op + "] unsupported dtype " + name(dtype));
  Tensor t = empty_on(shape, dtype, device, op);
  Generator& g = gen ? *gen : default_generator();
  const uint64_t base = g.advance(uint64_t(t.numel()));
  return {std::move(t), g.initial_seed(), base};
}

}  // namespace

Tensor rand(const Shape& shape, DType dtype, Generator* gen, Device device) {
  Draw d = draw(shape, dtype, gen, device, kFloatSet, "rand");
  ops::rand(d.out.device(), d.out, d.seed, d.offset);
  return std::move(d.out);
}

Tensor randn(const Shape& shape, DType dtype, Generator* gen, Device device) {
  Draw d = draw(shape, dtype, gen, device, kFloatSet, "randn");
  ops::randn(d.out.device(), d.out, d.seed, d.offset);
  return std::move(d.out);
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype, Generator* gen, Device device) {
  if (high <= low)
    throw ValueError("[randint] random_ expects 'from' to be less than 'to', but got from=" + std::to_string(low) +
                     " >= to=" + std::to_string(high));
  Draw d = draw(shape, dtype, gen, device, kIntSet | kFloatSet, "randint");
  ops::randint(d.out.device(), d.out, d.seed, d.offset, low, high);
  return std::move(d.out);
}

}  // namespace kiln
