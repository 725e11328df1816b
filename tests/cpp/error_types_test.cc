// The typed errors that carry data: OutOfMemoryError (the allocator's request),
// OSError (errno and path, from every file opener), and the range rule behind
// OverflowError (Scalar::fits, torch's checked_convert).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>

#include "kiln/allocator.h"
#include "kiln/error.h"
#include "kiln/io/gguf.h"
#include "kiln/io/mapped_file.h"
#include "kiln/io/model_config.h"
#include "kiln/io/safetensors.h"
#include "kiln/scalar.h"
#include "kiln/tokenizer.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

struct ScratchDir {
  std::string path;
  ScratchDir() {
    std::string t = (fs::temp_directory_path() / "kiln-err-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

template <typename F>
OSError os_error_of(F&& f) {
  try {
    f();
  } catch (const OSError& e) {
    return e;
  }
  ADD_FAILURE() << "no OSError";
  return OSError("", 0, "");
}

}  // namespace

TEST(ErrorTypes, AllocatorThrowsOutOfMemoryWithTheRequest) {
  // 2^61 bytes: more than any address space, so the system refuses it.
  const size_t n = size_t(1) << 61;
  try {
    allocate(n);
    FAIL() << "allocated 2^61 bytes";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(e.bytes(), n);
    EXPECT_EQ(std::string(e.what()), "[allocate] cannot allocate 2305843009213693952 bytes: out of memory");
  }
  // Past 2^62 the request is refused before the system sees it.
  try {
    allocate((size_t(1) << 62) + 1);
    FAIL();
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(e.bytes(), (size_t(1) << 62) + 1);
    EXPECT_NE(std::string(e.what()).find("larger than any address space"), std::string::npos) << e.what();
  }
  // The allocator still works after a refusal.
  void* p = allocate(1024);
  ASSERT_NE(p, nullptr);
  deallocate(p, 1024);
}

// Integer values against std::numeric_limits of each storage type, with torch's
// allowance for negative values into unsigned types (down to -max, wrapping).
template <typename T>
void check_int_dtype(DType d) {
  using L = std::numeric_limits<T>;
  const int64_t lo = int64_t(L::lowest()), probe[] = {0,
                                                      1,
                                                      -1,
                                                      127,
                                                      128,
                                                      -128,
                                                      -129,
                                                      255,
                                                      256,
                                                      -255,
                                                      -256,
                                                      32767,
                                                      32768,
                                                      -32769,
                                                      65535,
                                                      65536,
                                                      -65536,
                                                      INT32_MAX,
                                                      int64_t(INT32_MAX) + 1,
                                                      INT32_MIN,
                                                      int64_t(INT32_MIN) - 1,
                                                      int64_t(UINT32_MAX),
                                                      int64_t(UINT32_MAX) + 1,
                                                      INT64_MAX,
                                                      INT64_MIN};
  for (int64_t v : probe) {
    bool want;
    if (L::is_signed) {
      want = v >= lo && v <= int64_t(L::max());
    } else {
      const uint64_t mag = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
      want = mag <= uint64_t(L::max());
    }
    EXPECT_EQ(Scalar(v).fits(d), want) << name(d) << " " << v;
  }
  const Scalar big(uint64_t(1) << 63);
  EXPECT_EQ(big.fits(d), d == DType::UInt64) << name(d);
  EXPECT_EQ(Scalar(UINT64_MAX).fits(d), d == DType::UInt64) << name(d);
  // Floats: [lowest, max] before truncation; NaN and inf never fit.
  if constexpr (sizeof(T) < 8) {
    EXPECT_TRUE(Scalar(double(L::max())).fits(d)) << name(d);
  }
  EXPECT_FALSE(Scalar(double(L::max()) + (sizeof(T) < 8 ? 0.5 : 4096.0)).fits(d)) << name(d);
  EXPECT_EQ(Scalar(-0.5).fits(d), L::is_signed) << name(d);
  EXPECT_FALSE(Scalar(std::nan("")).fits(d)) << name(d);
  EXPECT_FALSE(Scalar(INFINITY).fits(d)) << name(d);
  EXPECT_FALSE(Scalar(complex128(1, 1)).fits(d)) << name(d);
  EXPECT_TRUE(Scalar(complex128(1, 0)).fits(d)) << name(d);
}

TEST(ErrorTypes, ScalarFitsIntegerDtypes) {
  check_int_dtype<uint8_t>(DType::UInt8);
  check_int_dtype<int8_t>(DType::Int8);
  check_int_dtype<uint16_t>(DType::UInt16);
  check_int_dtype<int16_t>(DType::Int16);
  check_int_dtype<uint32_t>(DType::UInt32);
  check_int_dtype<int32_t>(DType::Int32);
  check_int_dtype<uint64_t>(DType::UInt64);
  check_int_dtype<int64_t>(DType::Int64);
  EXPECT_TRUE(Scalar(-(std::ldexp(1.0, 63))).fits(DType::Int64));
  EXPECT_FALSE(Scalar(std::ldexp(1.0, 63)).fits(DType::Int64));
  EXPECT_TRUE(Scalar(std::ldexp(1.0, 64) - 4096).fits(DType::UInt64));
  EXPECT_FALSE(Scalar(std::ldexp(1.0, 64)).fits(DType::UInt64));
}

TEST(ErrorTypes, ScalarFitsFloatDtypes) {
  const struct {
    DType d;
    double max;
    bool inf;
  } cases[] = {{DType::Float16, 65504.0, true},
               {DType::BFloat16, 3.3895313892515355e38, true},
               {DType::Float32, std::numeric_limits<float>::max(), true},
               {DType::Float64, std::numeric_limits<double>::max(), true},
               {DType::Float8_e4m3fn, 448.0, false},
               {DType::Float8_e5m2, 57344.0, true},
               {DType::Complex64, std::numeric_limits<float>::max(), true}};
  for (const auto& c : cases) {
    EXPECT_TRUE(Scalar(c.max).fits(c.d)) << name(c.d);
    EXPECT_TRUE(Scalar(-c.max).fits(c.d)) << name(c.d);
    if (c.d != DType::Float64) {
      EXPECT_FALSE(Scalar(std::nextafter(c.max, INFINITY)).fits(c.d)) << name(c.d);
      EXPECT_EQ(Scalar(UINT64_MAX).fits(c.d), c.max >= 1.8446744073709552e19) << name(c.d);
    }
    EXPECT_TRUE(Scalar(std::nan("")).fits(c.d)) << name(c.d);
    EXPECT_EQ(Scalar(-INFINITY).fits(c.d), c.inf) << name(c.d);
    EXPECT_TRUE(Scalar(int64_t(-448)).fits(c.d)) << name(c.d);
  }
  EXPECT_FALSE(Scalar(complex128(1, 1)).fits(DType::Float32));
  EXPECT_TRUE(Scalar(complex128(1, 1e38)).fits(DType::Complex64));
  EXPECT_FALSE(Scalar(complex128(1, 1e39)).fits(DType::Complex64));
  EXPECT_TRUE(Scalar(complex128(1, 1e39)).fits(DType::Complex128));
  for (const Scalar& s : {Scalar(1e300), Scalar(complex128(3, 4)), Scalar(INT64_MIN), Scalar(UINT64_MAX)})
    EXPECT_TRUE(s.fits(DType::Bool));  // anything converts to bool
}

TEST(ErrorTypes, ScalarStrWritesUint64PastInt64) {
  EXPECT_EQ(Scalar(uint64_t(1) << 63).str(), "9223372036854775808");
  EXPECT_EQ(Scalar(UINT64_MAX).str(), "18446744073709551615");
  EXPECT_EQ(Scalar(int64_t(-5)).str(), "-5");
}

TEST(ErrorTypes, FileOpenersCarryErrno) {
  ScratchDir dir;
  const std::string missing = dir.path + "/missing.bin";
  for (auto& [what, call] : std::initializer_list<std::pair<const char*, std::function<void()>>>{
           {"mapped", [&] { io::MappedFile::open(missing, "test"); }},
           {"safetensors", [&] { io::SafetensorsFile::open(missing); }},
           {"gguf", [&] { io::GGUFFile::open(missing); }},
           {"tokenizer", [&] { Tokenizer::from_file(missing); }},
           {"config", [&] { io::load_hf_config(missing); }},
       }) {
    const OSError e = os_error_of(call);
    EXPECT_EQ(e.error_code(), ENOENT) << what;
    EXPECT_EQ(e.path(), missing) << what;
    EXPECT_NE(std::string(e.what()).find(missing + ": No such file or directory"), std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("[", 0), 0u) << e.what();
  }
  // A directory where a file belongs.
  for (auto& [what, call] : std::initializer_list<std::pair<const char*, std::function<void()>>>{
           {"mapped", [&] { io::MappedFile::open(dir.path, "test"); }},
           {"tokenizer", [&] { Tokenizer::from_file(dir.path); }},
       }) {
    const OSError e = os_error_of(call);
    EXPECT_EQ(e.error_code(), EISDIR) << what << ": " << e.what();
  }
  fs::create_directory(dir.path + "/config.json");
  EXPECT_EQ(os_error_of([&] { io::load_hf_config(dir.path); }).error_code(), EISDIR);
  // Writing: a missing directory, and a directory where the file goes.
  const std::string nowhere = dir.path + "/no/w.safetensors";
  const OSError w = os_error_of([&] { io::save_safetensors(nowhere, {}); });
  EXPECT_EQ(w.error_code(), ENOENT) << w.what();
  EXPECT_EQ(w.path(), nowhere);
  EXPECT_EQ(os_error_of([&] { io::save_safetensors(dir.path, {}); }).error_code(), EISDIR);
  EXPECT_FALSE(fs::exists(dir.path + ".tmp"));
  // Still a ValueError for code that caught a bad path as one.
  EXPECT_THROW(io::MappedFile::open(missing, "test"), ValueError);
}
