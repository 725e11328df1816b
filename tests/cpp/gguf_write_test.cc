// Writing GGUF: every metadata value type and tensor layout read back by
// kiln's own parser, and the block encoders' round trip through the decoders
// against a double-precision bound per type.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kiln/io/gguf.h"
#include "kiln/io/gguf_quantize.h"
#include "kiln/io/gguf_writer.h"
#include "kiln/kiln.h"

using namespace kiln;
using namespace kiln::io;

namespace {

GGUFValue scalar(GGUFType t, int64_t i, uint64_t u = 0) {
  GGUFValue v;
  v.type = t;
  v.i = i;
  v.u = u;
  return v;
}

std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> x(n);
  for (float& v : x) v = dist(gen);
  return x;
}

}  // namespace

TEST(GgufWrite, MetadataAndTensorsReadBack) {
  std::vector<std::pair<std::string, GGUFValue>> md;
  md.emplace_back("u8", scalar(GGUFType::UInt8, 200, 200));
  md.emplace_back("i8", scalar(GGUFType::Int8, -100));
  md.emplace_back("u16", scalar(GGUFType::UInt16, 60000, 60000));
  md.emplace_back("i32", scalar(GGUFType::Int32, -7));
  md.emplace_back("u64", scalar(GGUFType::UInt64, 0, ~uint64_t(0)));
  GGUFValue f;
  f.type = GGUFType::Float32;
  f.f = 0.25;
  md.emplace_back("f32", f);
  GGUFValue b;
  b.type = GGUFType::Bool;
  b.b = true;
  md.emplace_back("flag", b);
  GGUFValue s;
  s.type = GGUFType::String;
  s.s = "kiln \xc3\xbc";
  md.emplace_back("general.architecture", s);
  GGUFValue ints;
  ints.type = GGUFType::Array;
  ints.elem_type = GGUFType::Int16;
  ints.ints = {-3, 4, 32767};
  md.emplace_back("ints", ints);
  GGUFValue strs;
  strs.type = GGUFType::Array;
  strs.elem_type = GGUFType::String;
  strs.strings = {"a", "", "bc"};
  md.emplace_back("strs", strs);

  const std::vector<float> w = gaussian(2 * 64, 1);
  std::vector<GGUFWriteTensor> tensors = {{"w.f32", GGMLType::F32, {64, 2}},
                                          {"w.q8", GGMLType::Q8_0, {64, 2}}};
  const std::string path = testing::TempDir() + "kiln_gguf_write_test.gguf";
  write_gguf(path, md, tensors, 64,
             [&](size_t k, uint8_t* dst) { quantize_row(tensors[k].type, w.data(), dst, 128); });
  {
    const GGUFFile g = GGUFFile::open(path);
    EXPECT_EQ(g.version(), 3u);
    EXPECT_EQ(g.alignment(), 64u);  // general.alignment added: the reader would assume 32
    EXPECT_EQ(*g.get_int("general.alignment"), 64);
    EXPECT_EQ(*g.get_int("u8"), 200);
    EXPECT_EQ(*g.get_int("i8"), -100);
    EXPECT_EQ(*g.get_int("u16"), 60000);
    EXPECT_EQ(*g.get_int("i32"), -7);
    EXPECT_EQ(g.find("u64")->u, ~uint64_t(0));
    EXPECT_EQ(*g.get_float("f32"), 0.25);
    EXPECT_EQ(*g.get_bool("flag"), true);
    EXPECT_EQ(g.architecture(), "kiln \xc3\xbc");
    EXPECT_EQ(*g.get_int_array("ints"), (std::vector<int64_t>{-3, 4, 32767}));
    EXPECT_EQ(g.find("ints")->elem_type, GGUFType::Int16);
    EXPECT_EQ(*g.get_string_array("strs"), (std::vector<std::string>{"a", "", "bc"}));
    Tensor f32 = g.tensor("w.f32");
    EXPECT_EQ(f32.sizes(), (Shape{2, 64}));
    for (int k = 0; k < 128; ++k) EXPECT_EQ(f32.data<float>()[k], w[size_t(k)]);
    Tensor q8 = g.dequantize("w.q8");
    for (int k = 0; k < 128; ++k) EXPECT_NEAR(q8.data<float>()[k], w[size_t(k)], 0.02);
  }
  std::remove(path.c_str());
}

TEST(GgufWrite, AlignmentKeyMustAgree) {
  std::vector<std::pair<std::string, GGUFValue>> md;
  md.emplace_back("general.alignment", scalar(GGUFType::UInt32, 32, 32));
  const std::string path = testing::TempDir() + "kiln_gguf_align_test.gguf";
  EXPECT_THROW(write_gguf(path, md, {}, 64, [](size_t, uint8_t*) {}), ValueError);
  write_gguf(path, md, {}, 32, [](size_t, uint8_t*) {});
  EXPECT_EQ(GGUFFile::open(path).alignment(), 32u);
  std::remove(path.c_str());
}

TEST(GgufWrite, FailedFillLeavesNothing) {
  const std::string path = testing::TempDir() + "kiln_gguf_fail_test.gguf";
  std::vector<GGUFWriteTensor> tensors = {{"w", GGMLType::F32, {4}}};
  EXPECT_THROW(write_gguf(path, {}, tensors, 32, [](size_t, uint8_t*) { throw ValueError("boom"); }),
               ValueError);
  EXPECT_EQ(std::fopen((path + ".tmp").c_str(), "rb"), nullptr);
  EXPECT_EQ(std::fopen(path.c_str(), "rb"), nullptr);
  EXPECT_THROW(ggml_tensor_bytes(GGMLType::Q4_K, {128}), ValueError);  // not a whole super-block
}

// Encode then decode: each element within the bound its format allows, as a
// fraction of its block's largest magnitude (Q4_0/Q5_0 map the largest to the
// grid's lower end, so its negation is clipped a whole step), and the RMS
// error, which the K types' fit minimises, within each format's usual figure.
TEST(GgufWrite, EncodersRoundTripThroughDecoders) {
  struct Case {
    GGMLType t;
    double max_step;  // max |error| / block absmax
    double rms;       // RMS error / RMS of the input, Gaussian rows
  };
  const Case cases[] = {
      {GGMLType::Q8_0, 0.5 / 127 + 1e-3, 0.006},
      {GGMLType::Q4_0, 1.0 / 8 + 1e-3, 0.12},
      {GGMLType::Q4_1, 0.5 * 2 / 15 + 1e-3, 0.11},
      {GGMLType::Q5_0, 1.0 / 16 + 1e-3, 0.06},
      {GGMLType::Q5_1, 0.5 * 2 / 31 + 1e-3, 0.055},
      {GGMLType::Q4_K, 0.2, 0.095},
      {GGMLType::Q5_K, 0.1, 0.047},
      {GGMLType::Q6_K, 0.05, 0.024},
      {GGMLType::Q2_K, 0.4, 0.31},
      {GGMLType::Q3_K, 0.22, 0.18},
      {GGMLType::IQ4_NL, 0.12, 0.09},
      {GGMLType::IQ4_XS, 0.12, 0.09},
      {GGMLType::F16, 1e-3, 1e-3},
      {GGMLType::BF16, 4e-3, 4e-3},
      {GGMLType::F32, 0, 0},
  };
  const int64_t n = 256 * 5;
  std::vector<float> x = gaussian(static_cast<size_t>(n), 7);
  for (int k = 256; k < 512; ++k) x[size_t(k)] *= 1e-3f;  // a small super-block
  for (int k = 512; k < 768; ++k) x[size_t(k)] = 0;       // an empty one
  for (const Case& c : cases) {
    const GGMLTypeInfo* info = ggml_type_info(uint32_t(c.t));
    SCOPED_TRACE(info->name);
    ASSERT_TRUE(ggml_quantizable(c.t));
    std::vector<uint8_t> q(static_cast<size_t>(n / info->block_size * info->type_size));
    std::vector<float> y(static_cast<size_t>(n));
    quantize_row(c.t, x.data(), q.data(), n);
    dequantize_row(c.t, q.data(), y.data(), n);
    for (int64_t b0 = 0; b0 < n; b0 += 256) {
      double amax = 0, ss = 0, es = 0, emax = 0;
      for (int64_t k = b0; k < b0 + 256; ++k) {
        amax = std::max(amax, std::fabs(double(x[size_t(k)])));
        ss += double(x[size_t(k)]) * x[size_t(k)];
        const double e = double(y[size_t(k)]) - x[size_t(k)];
        es += e * e;
        emax = std::max(emax, std::fabs(e));
      }
      if (amax == 0) {
        EXPECT_EQ(emax, 0.0) << "block at " << b0;
        continue;
      }
      EXPECT_LE(emax, c.max_step * amax) << "block at " << b0;
      EXPECT_LE(std::sqrt(es / ss), c.rms) << "block at " << b0;
    }
  }
  std::vector<uint8_t> q(200);
  EXPECT_THROW(quantize_row(GGMLType::Q4_0, x.data(), q.data(), 33), ValueError);
  EXPECT_THROW(quantize_row(GGMLType::Q8_K, x.data(), q.data(), 256), NotImplementedError);
}
