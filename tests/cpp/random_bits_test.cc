// Pins the bits of the random and range factories: the same seed gives the
// same numbers, for every dtype and thread count. The expected hashes were
// recorded from the implementation as it stood before the kernels moved
// behind the op registry; a change in any bit fails here.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace {

using namespace kiln;

// FNV-1a over the tensors' bytes, their shapes included.
uint64_t fnv(const std::vector<Tensor>& ts) {
  uint64_t h = 1469598103934665603ull;
  auto feed = [&h](const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  for (const Tensor& t : ts) {
    const Tensor c = t.contiguous();
    const Shape shape = c.sizes();
    feed(shape.data(), shape.size() * sizeof(int64_t));
    feed(c.data_ptr(), c.nbytes());
  }
  return h;
}

// Recorded from the implementation before the kernels moved to src/cpu/ops;
// randn float64 since its Box-Muller moved to SIMD lanes (its own log and cos,
// within a few float64 ulps of libm's; the narrower dtypes kept their bits).
const std::map<std::string, uint64_t> kPinned = {
    {"rand float32", 0xf270e22cfe38417full},
    {"randn float32", 0x669ed403e8ebd4a4ull},
    {"rand float64", 0xdab9cb69eb51536bull},
    {"randn float64", 0x1f7230a88be499e0ull},  // since randn's SIMD Box-Muller
    {"rand bfloat16", 0x8dacadf898d3ff64ull},
    {"randn bfloat16", 0x4eb63c15f3f393a3ull},
    {"rand float16", 0x54c7d737c4cd0d7bull},
    {"randn float16", 0x3aa88264bf06ab77ull},
    {"randint int64", 0x3f40bb943d5dbb62ull},
    {"randint int32", 0xd0b167dd684bf7d6ull},
    {"randint int16", 0x10f21ed1e5268fdcull},
    {"randint int8", 0x3a8c0c5456791f33ull},
    {"randint uint8", 0x3a8c0c5456791f33ull},
    {"randint float32", 0x80d973cb71f6c342ull},
    {"randint float64", 0x1b4da69c24796becull},
    {"randint bfloat16", 0xf84df647fea99e2aull},
    {"randint float16", 0xa479d238809bc0f7ull},
    {"randint wide range", 0x346d5348a43de34eull},
    {"randint int8 extremes", 0x5f83f7951cb9fd9aull},
    {"rand default generator", 0x27b3832e4388aef8ull},
    {"eye", 0x3d584781e1baee20ull},
    {"arange float32", 0x82ea05b4068a5bb0ull},
    {"linspace float32", 0xdc522da1246bbf93ull},
    {"logspace float32", 0x046324e35727d420ull},
    {"arange float64", 0x3e13360805424235ull},
    {"linspace float64", 0x41923fdc694e2509ull},
    {"logspace float64", 0xe30205bc044c8ec6ull},
    {"arange bfloat16", 0xb66742cea7fcf4ecull},
    {"linspace bfloat16", 0x06ccaef7fee0d175ull},
    {"logspace bfloat16", 0x4c2bc9e48e5e20d4ull},
    {"arange float16", 0xa810952e5125f1a4ull},
    {"linspace float16", 0xaba437ec4cdb1065ull},
    {"logspace float16", 0x5f3bfca1c6120d95ull},
    {"arange int64", 0x58591d6b8946037cull},
    {"linspace int64", 0xba18063ebb2f9bf4ull},
    {"logspace int64", 0x1df7f9ac8c205ffbull},
    {"arange int32", 0x97ac06bc721a820cull},
    {"linspace int32", 0x44cf22ac863736d8ull},
    {"logspace int32", 0x8c56a6bbe85f1eebull},
    {"arange uint8", 0xf91f80e1cd84fecbull},
    {"linspace uint8", 0xd15bdda0ba4ec053ull},
    {"logspace uint8", 0x76c631bf80f49711ull},
    {"arange complex64", 0x33f60bb6601b8030ull},
    {"linspace complex64", 0x7b83980c256fc1b3ull},
    {"logspace complex64", 0xa8b02da90c234570ull},
};

struct Case {
  std::string name;
  std::function<std::vector<Tensor>()> make;
};

// Two draws from one generator: the second starts at offset n.
std::vector<Tensor> two_draws(const std::function<Tensor(Generator*)>& draw) {
  Generator g(20240607);
  Tensor a = draw(&g);
  return {a, draw(&g)};
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  const DType floats[] = {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16};
  for (int k = 0; k < 4; ++k) {
    const DType d = floats[k];
    cs.push_back({std::string("rand ") + name(d), [d] {
                    return two_draws([d](Generator* g) { return rand({3, 7001}, d, g); });
                  }});
    cs.push_back({std::string("randn ") + name(d), [d] {
                    return two_draws([d](Generator* g) { return randn({3, 7001}, d, g); });
                  }});
  }
  const DType ints[] = {DType::Int64,   DType::Int32,   DType::Int16,    DType::Int8,   DType::UInt8,
                        DType::Float32, DType::Float64, DType::BFloat16, DType::Float16};
  for (int k = 0; k < 9; ++k) {
    const DType d = ints[k];
    cs.push_back({std::string("randint ") + name(d), [d] {
                    return two_draws([d](Generator* g) { return randint(-7, 100, {5, 4001}, d, g); });
                  }});
  }
  cs.push_back({"randint wide range", [] {
                  return two_draws([](Generator* g) {
                    return randint(INT64_MIN / 2, INT64_MAX / 3, {999}, DType::Int64, g);
                  });
                }});
  cs.push_back({"randint int8 extremes", [] {
                  return two_draws([](Generator* g) { return randint(-128, 128, {20001}, DType::Int8, g); });
                }});
  cs.push_back({"rand default generator", [] {
                  manual_seed(5);
                  Tensor a = rand({77}, DType::Float32);
                  return std::vector<Tensor>{a, rand({77}, DType::Float32)};
                }});
  cs.push_back({"eye", [] {
                  return std::vector<Tensor>{eye(5, 7, DType::Float32), eye(4, -1, DType::Int64),
                                             eye(300, 200, DType::BFloat16), eye(0, 3, DType::Float64)};
                }});
  // Range factories.
  const DType all[] = {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16,
                       DType::Int64,   DType::Int32,   DType::UInt8,    DType::Complex64};
  for (int k = 0; k < 8; ++k) {
    const DType d = all[k];
    cs.push_back({std::string("arange ") + name(d), [d] {
                    return std::vector<Tensor>{
                        arange(Scalar(int64_t(-3)), Scalar(int64_t(40000)), Scalar(int64_t(1)), d),
                        arange(Scalar(int64_t(9)), Scalar(int64_t(-40000)), Scalar(int64_t(-3)), d),
                        arange(Scalar(0.25), Scalar(14000.0), Scalar(0.37), d)};
                  }});
    cs.push_back({std::string("linspace ") + name(d), [d] {
                    return std::vector<Tensor>{linspace(-3.3, 251.7, 40001, d), linspace(2.0, 2.0, 1, d)};
                  }});
    cs.push_back(
        {std::string("logspace ") + name(d), [d] {
           return std::vector<Tensor>{logspace(-2.1, 2.3, 40001, 3.0, d), logspace(0.5, 0.5, 1, 2.0, d)};
         }});
  }
  return cs;
}

TEST(RandomBits, SameSeedSameBitsAtAnyThreadCount) {
  const int before = num_threads();
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    for (const Case& c : cases()) {
      ASSERT_TRUE(kPinned.count(c.name)) << c.name;
      EXPECT_EQ(fnv(c.make()), kPinned.at(c.name)) << c.name << " with " << threads << " threads";
    }
  }
  set_num_threads(before);
}

// A few values in the clear: three draws in a row from one generator.
TEST(RandomBits, FirstValuesOfSeed42) {
  Generator g(42);
  const Tensor a = rand({3}, DType::Float64, &g);
  const Tensor b = randn({3}, DType::Float32, &g);
  const Tensor c = randint(-1000, 1000, {3}, DType::Int64, &g);
  const double want_a[] = {0x1.39d5e0a6efea9p-1, 0x1.f9b6424ea774dp-1, 0x1.a6d8044b510ebp-1};
  const float want_b[] = {-0x1.6281b2p+0f, -0x1.91bb98p-2f, 0x1.a5e1b4p-1f};
  const int64_t want_c[] = {-558, -419, 659};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(a.data<double>()[i], want_a[i]) << i;
    EXPECT_EQ(b.data<float>()[i], want_b[i]) << i;
    EXPECT_EQ(c.data<int64_t>()[i], want_c[i]) << i;
  }
}

}  // namespace
