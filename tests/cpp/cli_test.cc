// Smoke tests of the `kiln` binary: the commands run, exit as documented, and
// their JSON parses and carries the promised fields. No timing assertions.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bench/bandwidth.h"
#include "bench/stream_read.h"
#include "core/sysinfo.h"
#include "cpu/gemv.h"

using nlohmann::json;

namespace {

struct CliRun {
  int status = -1;
  std::string out;
};

// Runs the kiln binary with `args` through the shell; stderr joins stdout when
// merge_stderr is set.
CliRun run_kiln(const std::string& args, bool merge_stderr = false) {
  std::string cmd = std::string("'") + KILN_CLI_PATH + "' " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null");
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

void expect_number(const json& j, const char* key) {
  ASSERT_TRUE(j.contains(key)) << key << " missing in " << j.dump();
  EXPECT_TRUE(j[key].is_number()) << key << " = " << j[key].dump();
}

}  // namespace

TEST(Cli, VersionAndHelp) {
  CliRun v = run_kiln("--version");
  EXPECT_EQ(v.status, 0);
  EXPECT_NE(v.out.find("kiln 0."), std::string::npos) << v.out;
  CliRun h = run_kiln("--help");
  EXPECT_EQ(h.status, 0);
  EXPECT_NE(h.out.find("info"), std::string::npos);
  EXPECT_NE(h.out.find("bench"), std::string::npos);
  CliRun ih = run_kiln("info --help");
  EXPECT_EQ(ih.status, 0);
  EXPECT_NE(ih.out.find("--json"), std::string::npos);
  CliRun oh = run_kiln("bench ops --help");
  EXPECT_EQ(oh.status, 0);
  EXPECT_NE(oh.out.find("--quick"), std::string::npos);
}

TEST(Cli, UnknownCommandOrFlagIsOneLineError) {
  for (const char* args : {"frobnicate", "info --bogus", "bench ops --repeat x", "bench nope"}) {
    CliRun r = run_kiln(args, /*merge_stderr=*/true);
    EXPECT_NE(r.status, 0) << args;
    ASSERT_FALSE(r.out.empty()) << args;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << args << ": " << r.out;
    EXPECT_EQ(r.out.rfind("kiln: error:", 0), 0u) << r.out;
  }
  // A group without its subcommand shows help, and fails.
  EXPECT_NE(run_kiln("", true).status, 0);
  EXPECT_NE(run_kiln("bench", true).status, 0);
}

TEST(Cli, InfoJson) {
  CliRun r = run_kiln("info --json --roof-mib 32");
  ASSERT_EQ(r.status, 0) << r.out;
  const json j = json::parse(r.out);
  EXPECT_TRUE(j["version"].is_string());
  EXPECT_TRUE(j["cpu_model"].is_string());
  EXPECT_TRUE(j["simd_target"].is_string());
  for (const char* k : {"logical_cores", "threads", "l1d_bytes", "l2_bytes", "l3_bytes", "llc_bytes", "roof_gbps"})
    expect_number(j, k);
  EXPECT_GE(j["logical_cores"].get<int>(), 1);
  EXPECT_GT(j["roof_gbps"].get<double>(), 0.0);
  EXPECT_EQ(j["roof"]["buffer_bytes"].get<int64_t>(), int64_t(32) << 20);
  EXPECT_GE(j["roof"]["passes"].get<int>(), 5);

  CliRun t = run_kiln("info --threads 1 --no-bandwidth --json");
  ASSERT_EQ(t.status, 0);
  const json jt = json::parse(t.out);
  EXPECT_EQ(jt["threads"].get<int>(), 1);
  EXPECT_TRUE(jt["roof_gbps"].is_null());
  // Whether the dot kernel runs here, as this process sees it, and off on request.
  EXPECT_EQ(jt["bf16_dot"].get<bool>(), kiln::cpu::bf16_dot_active());
  const char* saved = std::getenv("KILN_BF16_DOT");
  const std::string saved_value = saved ? saved : "";
  setenv("KILN_BF16_DOT", "off", 1);
  CliRun off = run_kiln("info --no-bandwidth --json");
  if (saved)
    setenv("KILN_BF16_DOT", saved_value.c_str(), 1);
  else
    unsetenv("KILN_BF16_DOT");
  ASSERT_EQ(off.status, 0);
  EXPECT_FALSE(json::parse(off.out)["bf16_dot"].get<bool>());

  CliRun text = run_kiln("info --no-bandwidth");
  ASSERT_EQ(text.status, 0);
  EXPECT_NE(text.out.find("simd target"), std::string::npos);
  EXPECT_NE(text.out.find("L3 cache"), std::string::npos);
}

TEST(Cli, BenchOpsQuickJson) {
  const std::string out_file = testing::TempDir() + "kiln_bench_ops_test.json";
  CliRun r = run_kiln("bench ops --quick --json --repeat 2 --no-python --out '" + out_file + "'");
  ASSERT_EQ(r.status, 0) << r.out;
  const json j = json::parse(r.out);
  EXPECT_TRUE(j["kiln_version"].is_string());
  EXPECT_TRUE(j["quick"].get<bool>());
  const json& m = j["machine"];
  EXPECT_TRUE(m["cpu_model"].is_string());
  for (const char* k : {"threads", "l1d_bytes", "l2_bytes", "l3_bytes", "roof_gbps"}) expect_number(m, k);
  ASSERT_TRUE(j["results"].is_array());
  ASSERT_FALSE(j["results"].empty());
  std::set<std::string> names;
  for (const json& c : j["results"]) {
    ASSERT_TRUE(c["name"].is_string());
    const std::string name = c["name"];
    for (const char* k : {"median_s", "min_s", "max_s"}) expect_number(c, k);
    EXPECT_LE(c["min_s"].get<double>(), c["median_s"].get<double>()) << name;
    EXPECT_LE(c["median_s"].get<double>(), c["max_s"].get<double>()) << name;
    EXPECT_EQ(c["repeat"].get<int>(), 2);
    if (c["unit"] == "GB/s") {
      for (const char* k : {"gbps", "roof_gbps", "bytes"}) expect_number(c, k);
      // A compute-bound case (sorts, special functions) has no roof fraction.
      if (c.value("bound", std::string()) == "compute")
        EXPECT_TRUE(c["roof_fraction"].is_null()) << name;
      else
        expect_number(c, "roof_fraction");
      EXPECT_TRUE(c["rotation"]["copies"].is_number()) << name;
    } else {
      EXPECT_EQ(c["unit"], "ns/call");
      expect_number(c, "ns_per_call");
    }
    names.insert(name);
  }
  for (const char* want : {"add f32", "mul f32", "to f32->bfloat16", "to f32->float8_e4m3fn", "sum f32",
                           "var_mean f32", "add 1-element dispatch (C++)", "cat 4 dim 0", "flip dim -1",
                           "nansum", "sort 1-d", "unique 1-d (inverse, counts)", "searchsorted 4096", "erf"})
    EXPECT_EQ(names.count(want), 1u) << want;
  // --out writes the same document.
  FILE* f = std::fopen(out_file.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  std::remove(out_file.c_str());
  EXPECT_EQ(json::parse(text)["results"].size(), j["results"].size());
}

TEST(SysInfo, ParseCacheSize) {
  EXPECT_EQ(kiln::sys::parse_cache_size("48K"), 48 * 1024);
  EXPECT_EQ(kiln::sys::parse_cache_size("2048K"), 2048 * 1024);
  EXPECT_EQ(kiln::sys::parse_cache_size("32M"), int64_t(32) << 20);
  EXPECT_EQ(kiln::sys::parse_cache_size("1G"), int64_t(1) << 30);
  EXPECT_EQ(kiln::sys::parse_cache_size("512"), 512);
  EXPECT_EQ(kiln::sys::parse_cache_size(""), 0);
  EXPECT_EQ(kiln::sys::parse_cache_size("K"), 0);
  EXPECT_EQ(kiln::sys::parse_cache_size("12Q"), 0);
  EXPECT_EQ(kiln::sys::parse_cache_size("99999999999999999999999K"), 0);
}

TEST(SysInfo, FormatBytes) {
  EXPECT_EQ(kiln::sys::format_bytes(512), "512 B");
  EXPECT_EQ(kiln::sys::format_bytes(48 * 1024), "48 KiB");
  EXPECT_EQ(kiln::sys::format_bytes(int64_t(300) << 20), "300 MiB");
  EXPECT_EQ(kiln::sys::format_bytes(int64_t(3) << 29), "1.5 GiB");
}

TEST(SysInfo, MachineIsDescribed) {
  const auto& info = kiln::sys::system_info();
  EXPECT_FALSE(info.cpu_model.empty());
  EXPECT_GE(info.logical_cores, 1);
  EXPECT_GE(info.llc_bytes(), 0);
  EXPECT_GE(kiln::sys::default_roof_bytes(), size_t(64));
}

TEST(Bandwidth, SmallRoofRunsAndSummarizes) {
  kiln::sys::ReadRoof roof(1000);  // rounded up to whole cache lines
  EXPECT_EQ(roof.bytes(), 1024u);
  const kiln::sys::RoofStats s = roof.measure(0.0, 3, 3);
  EXPECT_EQ(s.passes, 3);
  EXPECT_GT(s.median_gbps, 0.0);
  EXPECT_LE(s.min_gbps, s.median_gbps);
  EXPECT_LE(s.median_gbps, s.max_gbps);
  const kiln::sys::RoofStats z = kiln::sys::summarize_gbps({});
  EXPECT_EQ(z.passes, 0);
  const kiln::sys::RoofStats e = kiln::sys::summarize_gbps({4.0, 1.0, 3.0, 2.0});
  EXPECT_DOUBLE_EQ(e.median_gbps, 2.5);
  EXPECT_DOUBLE_EQ(e.min_gbps, 1.0);
  EXPECT_DOUBLE_EQ(e.max_gbps, 4.0);
}

TEST(Bandwidth, StreamReadXorsEveryWord) {
  // The roof's read kernel must touch every word (vector body, tails, with and
  // without software prefetch, 8 or 12 streams), or the roof would count bytes
  // it never read.
  std::vector<uint64_t> v(4099);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (i + 1) * 0x9E3779B97F4A7C15ull;
  for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(64), size_t(1000), v.size()})
    for (size_t pf : {size_t(0), size_t(256), size_t(2048)})
      for (int streams : {8, 12}) {
        uint64_t want = 0;
        for (size_t i = 0; i < n; ++i) want ^= v[i];
        EXPECT_EQ(kiln::sys::stream_read_xor(v.data(), n * 8, pf, streams), want)
            << n << " words, prefetch " << pf << ", " << streams << " streams";
      }
}

TEST(Cli, BenchOpsFilterAndMissingPython) {
  CliRun r = run_kiln("bench ops --quick --json --repeat 1 --filter 'sum f32' --python /nonexistent/python");
  ASSERT_EQ(r.status, 0) << r.out;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["name"], "sum f32");
  // A python that cannot run is a missing entry, not a failure.
  bool noted = false;
  for (const json& m : j["missing"]) noted |= m["name"] == "python-side cases";
  EXPECT_TRUE(noted) << j["missing"].dump();
}
