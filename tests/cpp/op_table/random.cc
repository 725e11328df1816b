// Op table entries of rand, randn and randint (core/random_ops.h). The input
// tensor only names the output's shape and dtype. The oracle re-derives
// element i from (seed, offset + i) with its own Philox4x32-10 (checked below
// against the published known answer) and the distribution's formula, in
// float64; the draw starts just below counter 2^32, so the counter's high word
// is walked too.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>

#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

constexpr uint64_t kSeed = 0x243F6A8885A308D3ull;  // both key words non-zero
constexpr uint64_t kSkip = (uint64_t(1) << 32) - 5000;

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11): counter (lo, hi, 0, 0) of `counter`, key (lo, hi) of `key`.
std::array<uint32_t, 4> philox4x32_10(uint64_t counter, uint64_t key) {
  std::array<uint32_t, 4> c = {uint32_t(counter), uint32_t(counter >> 32), 0, 0};
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {  // the key schedule: Weyl increments between rounds
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k1, uint32_t(p0)};
  }
  return c;
}

TEST(OpTableRandom, PhiloxOracleMatchesTheKnownAnswer) {
  // Random123's kat_vectors: philox4x32 10, counter 0, key 0.
  const std::array<uint32_t, 4> want = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
  EXPECT_EQ(philox4x32_10(0, 0), want);
}

// The 53-bit uniform in [0, 1) of two words (high word first).
double u53(uint32_t a, uint32_t b) { return std::ldexp(double(((uint64_t(a) << 32) | b) >> 11), -53); }

// The output shape: the input's; [131, 129] crosses a parallel chunk.
std::vector<InputSpec> draw_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{0, 5}}};
    case ShapeClass::Scalar:
      return {{{}}};
    case ShapeClass::Odd:
      return {{{131, 129}}};
    default:
      return {};  // no out= form: the output is always a new contiguous tensor
  }
}


bool is_float_dtype(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::BFloat16 || d == DType::Float16;
}

// f(philox words of element i) for every element of the output.
template <typename F>
std::vector<double> per_element(const Inputs& in, F f) {
  std::vector<double> y(in.values[0].size());
  for (size_t i = 0; i < y.size(); ++i) y[i] = f(philox4x32_10(kSkip + i, kSeed));
  return y;
}

Entry draw_entry(const char* op, std::function<Tensor(const Shape&, DType, Generator*, Device)> draw) {
  Entry e;
  e.op = op;
  e.dtypes = kFloatsAndInts;
  e.shapes = draw_shapes;
  e.call = [draw](const std::vector<Tensor>& x) {
    Generator g(kSeed);
    g.advance(kSkip);
    return draw(x[0].sizes(), x[0].dtype(), &g, x[0].device());
  };
  e.ulps = 0;
  return e;
}

Entry rand_entry() {
  Entry e = draw_entry("rand", [](const Shape& s, DType d, Generator* g, Device dev) { return rand(s, d, g, dev); });
  e.oracle = [](const Inputs& in, const Tensor&) {
    const DType d = in.tensors[0].dtype();
    if (!is_float_dtype(d)) throw raises<TypeError>("TypeError");
    // k / 2^bits from the top bits of the first word(s): as many bits as the
    // dtype's significand has (53 from two words for float64).
    const int bits = d == DType::Float32 ? 24 : d == DType::BFloat16 ? 8 : 11;
    return per_element(in, [&](const std::array<uint32_t, 4>& w) {
      return d == DType::Float64 ? u53(w[0], w[1]) : std::ldexp(double(w[0] >> (32 - bits)), -bits);
    });
  };
  return e;
}

Entry randn_entry() {
  Entry e = draw_entry("randn", [](const Shape& s, DType d, Generator* g, Device dev) { return randn(s, d, g, dev); });
  e.oracle = [](const Inputs& in, const Tensor&) {
    const DType d = in.tensors[0].dtype();
    if (!is_float_dtype(d)) throw raises<TypeError>("TypeError");
    // Box-Muller: sqrt(-2 ln u1) cos(2 pi u2), u1 in (0, 1], u2 in [0, 1), in
    // long double: in float64, 2 pi u2 is rounded by up to 4e-16, which moves
    // the cosine by several of its ulps.
    return per_element(in, [](const std::array<uint32_t, 4>& w) {
      const long double u1 = 1.0L - u53(w[0], w[1]), u2 = u53(w[2], w[3]);
      constexpr long double kTwoPi = 6.283185307179586476925286766559L;
      return double(std::sqrt(-2.0L * std::log(u1)) * std::cos(kTwoPi * u2));
    });
  };
  // The kernel's float64 log and cos are each within about an ulp (measured
  // up to 2 ulps on the product), and the result is rounded once to the dtype.
  e.ulps = 3;
  return e;
}

// randint(low, high): low + (the first two words as 64 bits) mod (high - low).
Entry randint_entry(int64_t low, int64_t high, std::vector<DType> dtypes) {
  Entry e = draw_entry(
      "randint", [low, high](const Shape& s, DType d, Generator* g, Device dev) {
        return randint(low, high, s, d, g, dev);
      });
  e.dtypes = std::move(dtypes);
  e.oracle = [low, high](const Inputs& in, const Tensor&) {
    const DType d = in.tensors[0].dtype();
    if (d == DType::Bool) throw raises<TypeError>("TypeError");
    const unsigned __int128 range = (__int128)high - low;
    return per_element(in, [&](const std::array<uint32_t, 4>& w) {
      const uint64_t bits = (uint64_t(w[0]) << 32) | w[1];
      return int_as(int64_t((__int128)low + (__int128)(bits % range)), d);
    });
  };
  return e;
}

KILN_OP_TABLE({
    rand_entry(),
    randn_entry(),
    randint_entry(-100, 100, kFloatsAndInts),
    // A 2^53-wide range: every draw exact in float64.
    randint_entry(-(int64_t(1) << 52), (int64_t(1) << 52) + 12345, {DType::Int64, DType::Float64}),
});

}  // namespace
}  // namespace op_table
