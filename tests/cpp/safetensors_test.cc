// safetensors: serialize -> parse round trip (bit-exact, every dtype), zero-copy
// views that keep the mapping alive, and malformed headers refused.
#include "kiln/io/safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "kiln/kiln.h"

using namespace kiln;
using namespace kiln::io;

namespace {

Tensor iota_bytes(const Shape& shape, DType dt) {
  Tensor t = empty(shape, dt);
  auto* p = static_cast<uint8_t*>(t.data_ptr());
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = uint8_t(i * 37 + 11);
  if (dt == DType::Bool)
    for (size_t i = 0; i < t.nbytes(); ++i) p[i] &= 1;
  return t;
}

std::string header_file(const std::string& header, size_t data_bytes) {
  std::string h = header;
  std::string out(8, '\0');
  uint64_t n = h.size();
  std::memcpy(out.data(), &n, 8);
  return out + h + std::string(data_bytes, '\0');
}

}  // namespace

TEST(Safetensors, RoundTripEveryDtype) {
  std::vector<std::pair<std::string, Tensor>> ts;
  for (DType d : {DType::Bool, DType::UInt8, DType::Int8, DType::UInt16, DType::Int16, DType::UInt32,
                  DType::Int32, DType::UInt64, DType::Int64, DType::Float16, DType::BFloat16, DType::Float32,
                  DType::Float64, DType::Float8_e4m3fn, DType::Float8_e5m2, DType::Complex64})
    ts.emplace_back(std::string("t_") + name(d), iota_bytes({3, 5}, d));
  ts.emplace_back("empty", empty({0, 3}, DType::Float32));
  ts.emplace_back("scalar", full({}, 2.5, DType::Float32));
  const std::string bytes = serialize_safetensors(ts, {{"format", "pt"}});
  auto f = SafetensorsFile::from_file(MappedFile::from_bytes(bytes));
  ASSERT_EQ(f.tensors().size(), ts.size());
  EXPECT_EQ(f.metadata(), (Metadata{{"format", "pt"}}));
  EXPECT_EQ(f.header().data_start % 8, 0u);
  for (const auto& [n, t] : ts) {
    Tensor back = f.tensor(n);
    EXPECT_EQ(back.dtype(), t.dtype()) << n;
    EXPECT_EQ(back.sizes(), t.sizes()) << n;
    EXPECT_EQ(std::memcmp(back.data_ptr(), t.data_ptr(), t.nbytes()), 0) << n;
    // Every tensor is aligned to its itemsize, so none needed a copy.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(back.data_ptr()) % back.itemsize(), 0u) << n;
  }
  EXPECT_THROW(f.tensor("nope"), IndexError);
}

TEST(Safetensors, ViewKeepsFileAlive) {
  const std::string path = ::testing::TempDir() + "kiln_st_alive.safetensors";
  Tensor a = arange(0, 1000, 1, DType::Float32);
  save_safetensors(path, {{"a", a}});
  Tensor v;
  {
    auto f = SafetensorsFile::open(path);
    v = f.tensor("a");
  }
  std::remove(path.c_str());  // the mapping outlives both the object and the name
  for (int i = 0; i < 1000; i += 97) EXPECT_EQ(v.data<float>()[i], float(i));
  v.fill_(1.0);  // copy-on-write pages: writable
  EXPECT_EQ(v.data<float>()[5], 1.0f);
}

TEST(Safetensors, NonContiguousWrittenContiguous) {
  Tensor a = arange(0, 12, 1, DType::Int32).view({3, 4});
  Tensor t = a.t();
  auto f = SafetensorsFile::from_file(MappedFile::from_bytes(serialize_safetensors({{"t", t}})));
  Tensor back = f.tensor("t");
  ASSERT_EQ(back.sizes(), (Shape{4, 3}));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(back.data<int32_t>()[i * 3 + j], j * 4 + i);
}

TEST(Safetensors, RefusesMalformedHeaders) {
  struct Case {
    std::string bytes;
    const char* msg;
  };
  const std::vector<Case> cases = {
      {"", "too short"},
      {std::string("\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10), "runs past the end"},
      {header_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4), "past the end"},
      {header_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8), "needs 12 bytes"},
      {header_file("{\"a\":{\"dtype\":\"Q4\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8),
       "unsupported dtype Q4"},
      {header_file("{\"a\":1,\"a\":2}", 0), "duplicate key"},
      {header_file("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                   "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}",
                   6),
       "overlaps"},
      {header_file("{\"\xc3\x28\":1}", 0), "invalid JSON"},
      {header_file("{", 0), "JSON header"},
  };
  for (const auto& c : cases) {
    try {
      parse_safetensors_header(reinterpret_cast<const uint8_t*>(c.bytes.data()), c.bytes.size());
      ADD_FAILURE() << "accepted: " << c.msg;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.msg), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("[safetensors]", 0), 0u) << e.what();
    }
  }
}

TEST(Safetensors, SerializeRefusesDuplicates) {
  Tensor a = zeros({2});
  EXPECT_THROW(serialize_safetensors({{"a", a}, {"a", a}}), ValueError);
  EXPECT_THROW(serialize_safetensors({{"__metadata__", a}}), ValueError);
  EXPECT_THROW(serialize_safetensors({{"c", zeros({2}, DType::Complex128)}}), TypeError);
}
