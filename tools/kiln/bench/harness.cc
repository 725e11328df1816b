#include "bench/harness.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "internal/bench_hooks.h"
#include "kiln/sysinfo.h"
#include "kiln/thread_pool.h"

namespace kiln::cli::bench {
namespace {

struct Summary {
  double median = 0, min = 0, max = 0;
};

Summary summarize(std::vector<double> v) {
  Summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min = v.front();
  s.max = v.back();
  return s;
}

json nullable(double v) { return v > 0 ? json(v) : json(nullptr); }

}  // namespace

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

json Rotation::to_json() const {
  return {{"copies", copies},
          {"working_set_bytes", working_set_bytes},
          {"llc_bytes", llc_bytes},
          {"x_llc", x_llc()}};
}

Rotation plan_rotation(double per_copy_bytes, double shared_bytes, int max_copies) {
  Rotation r;
  r.llc_bytes = sys::system_info().llc_bytes();
  const double target = 4.0 * double(r.llc_bytes);
  if (per_copy_bytes > 0 && target > shared_bytes + per_copy_bytes)
    r.copies = int(std::ceil((target - shared_bytes) / per_copy_bytes));
  r.copies = std::clamp(r.copies, 1, std::max(max_copies, 1));
  r.working_set_bytes = r.copies * per_copy_bytes + shared_bytes;
  return r;
}

json Result::to_json() const {
  json j = {{"name", name},
            {"unit", unit},
            {"median_s", median_s},
            {"min_s", min_s},
            {"max_s", max_s},
            {"repeat", repeat},
            {"bytes", nullable(bytes)},
            {"gbps", nullable(gbps)},
            {"roof_gbps", nullable(roof_gbps)},
            {"roof_fraction", nullable(roof_fraction)}};
  if (unit == "ns/call") j["ns_per_call"] = median_s * 1e9;
  for (auto& [k, v] : extra.items()) j[k] = v;
  return j;
}

Result Runner::memory_case(const std::string& name, double bytes, const Rotation& rot,
                           const std::function<void(int)>& fn, int calls, bool warm) {
  calls = std::max(calls, 1);
  int call = 0;
  for (int i = 0; i < opt_.warmup; ++i) fn(call++);
  std::vector<double> times, roofs;
  for (int r = 0; r < opt_.repeat; ++r) {
    // Roof and case back to back: drift over minutes hits both alike.
    roofs.push_back(roof_.pass_gbps());
    // Caches cold, pool warm: a thread that finished its share of the roof
    // pass early may have gone to sleep (it spins ~1 ms first); wake every
    // worker now, untimed, as a preceding op would in real use (torch's
    // OpenMP threads spin far longer after its flush).
    kiln::parallel_for(0, kiln::num_threads(), 1, [](int64_t, int64_t) {});
    // One untimed call before the timed ones. Warm: it brings the inputs
    // into cache. Cold: it reads the next copy, so the timed calls follow a
    // call of the same kernel, as a layer follows a layer in a model, and not
    // the roof pass, after which the first call ran ~7% slower (Emerald
    // Rapids, FP8 4096x4096: 20.5 GB/s, then 21.1-22.4 for the next calls;
    // 21.8-22.8 for every call after a run of the kernel).
    if (warm || rot.copies >= 2) fn(call++);
    const double t0 = now_s();
    for (int i = 0; i < calls; ++i) fn(call++);
    times.push_back((now_s() - t0) / calls);
  }
  roof_samples_.insert(roof_samples_.end(), roofs.begin(), roofs.end());
  const Summary t = summarize(times);
  Result res;
  res.name = name;
  res.unit = "GB/s";
  res.median_s = t.median;
  res.min_s = t.min;
  res.max_s = t.max;
  res.repeat = opt_.repeat;
  res.bytes = bytes;
  res.gbps = t.median > 0 ? bytes / t.median / 1e9 : 0;
  // The best pass beside the case: other work can only slow a pass down, so
  // the best one is the closest to what the machine can read.
  const Summary rs = summarize(roofs);
  res.roof_gbps = rs.max;
  res.roof_fraction = res.roof_gbps > 0 ? res.gbps / res.roof_gbps : 0;
  res.extra["roof_median_gbps"] = rs.median;
  res.extra["rotation"] = rot.to_json();
  res.extra["calls_per_sample"] = calls;
  res.extra["cache"] = warm ? "warm" : "cold";
  return res;
}

Result Runner::latency_case(const std::string& name, int calls, const std::function<void()>& fn) {
  return latency_cases({{name, fn}}, calls).front();
}

std::vector<Result> Runner::latency_cases(const std::vector<Latency>& cases, int calls) {
  calls = std::max(calls, 1);
  for (const Latency& c : cases)
    for (int i = 0; i < opt_.warmup * calls; ++i) c.fn();
  std::vector<std::vector<double>> per_call(cases.size());
  for (int r = 0; r < opt_.repeat; ++r)
    for (size_t k = 0; k < cases.size(); ++k) {
      const double t0 = now_s();
      for (int i = 0; i < calls; ++i) cases[k].fn();
      per_call[k].push_back((now_s() - t0) / calls);
      if (cases[k].settle_s > 0)
        std::this_thread::sleep_for(std::chrono::duration<double>(cases[k].settle_s));
    }
  std::vector<Result> out;
  for (size_t k = 0; k < cases.size(); ++k) {
    const Summary t = summarize(per_call[k]);
    Result res;
    res.name = cases[k].name;
    res.unit = "ns/call";
    res.median_s = t.median;
    res.min_s = t.min;
    res.max_s = t.max;
    res.repeat = opt_.repeat;
    res.extra["calls_per_sample"] = calls;
    if (cases.size() > 1) res.extra["interleaved_with"] = int(cases.size()) - 1;
    out.push_back(std::move(res));
  }
  return out;
}

sys::RoofStats Runner::roof_stats() const {
  sys::RoofStats s = sys::summarize_gbps(roof_samples_);
  s.bytes = roof_.bytes();
  s.threads = kiln::num_threads();
  return s;
}

json machine_json(const sys::RoofStats& roof) {
  const sys::SystemInfo& info = sys::system_info();
  return {{"cpu_model", info.cpu_model},
          {"logical_cores", info.logical_cores},
          {"threads", kiln::num_threads()},
          {"simd_target", kiln::sys::simd_target_name()},
          // One-token bf16/FP8 linear layers through AVX512-BF16's dot kernel
          // (x in two bf16 parts; KILN_BF16_DOT=off turns it off).
          {"bf16_dot", kiln::cpu::bf16_dot_active()},
          // Many-row bf16/FP8 products on vdpbf16ps, x rounded to bf16
          // (KILN_BF16_GEMM=off turns it off).
          {"bf16_gemm", kiln::cpu::bf16_gemm_active()},
          // ... on AMX tiles (KILN_AMX=off: on vdpbf16ps).
          {"amx_tiles", kiln::cpu::amx_tiles_active()},
          {"l1d_bytes", info.l1d_bytes},
          {"l2_bytes", info.l2_bytes},
          {"l3_bytes", info.l3_bytes},
          {"llc_bytes", info.llc_bytes()},
          {"roof_gbps", roof.max_gbps},  // best pass, as the fractions use
          {"roof",
           {{"median_gbps", roof.median_gbps},
            {"min_gbps", roof.min_gbps},
            {"max_gbps", roof.max_gbps},
            {"passes", roof.passes},
            {"buffer_bytes", roof.bytes},
            {"threads", roof.threads}}}};
}

namespace {

std::string fmt_time(double s) {
  char buf[32];
  if (s >= 1.0)
    std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else if (s >= 1e-6)
    std::snprintf(buf, sizeof buf, "%.2f us", s * 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.1f ns", s * 1e9);
  return buf;
}

double num(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

}  // namespace

std::string format_table(const json& results) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-34s %11s %11s %11s %9s %9s %7s\n", "case", "median", "min", "max",
                "GB/s", "roof", "of roof");
  out += line;
  for (const json& r : results) {
    const std::string name = r.value("name", std::string("?"));
    const double gbps = num(r, "gbps"), roof = num(r, "roof_gbps"), frac = num(r, "roof_fraction");
    char g[16] = "-", rf[16] = "-", fr[16] = "-";
    if (gbps > 0) std::snprintf(g, sizeof g, "%.2f", gbps);
    if (roof > 0) std::snprintf(rf, sizeof rf, "%.2f", roof);
    if (frac > 0) std::snprintf(fr, sizeof fr, "%.0f%%", frac * 100);
    std::snprintf(line, sizeof line, "%-34s %11s %11s %11s %9s %9s %7s\n", name.c_str(),
                  fmt_time(num(r, "median_s")).c_str(), fmt_time(num(r, "min_s")).c_str(),
                  fmt_time(num(r, "max_s")).c_str(), g, rf, fr);
    out += line;
  }
  // Peers (bench/README.md): one line per case that has any.
  for (const json& r : results) {
    auto it = r.find("peer_median_s");
    if (it == r.end() || !it->is_object() || it->empty()) continue;
    std::string peers;
    for (auto& [peer, t] : it->items()) {
      if (!t.is_number()) continue;
      const double speedup = num(r, ("speedup_vs_" + peer).c_str());
      std::snprintf(line, sizeof line, "%s%s %s (kiln speedup %.2fx)", peers.empty() ? "" : ", ",
                    peer.c_str(), fmt_time(t.get<double>()).c_str(), speedup);
      peers += line;
    }
    out += "  " + r.value("name", std::string("?")) + " vs " + peers + "\n";
  }
  return out;
}

}  // namespace kiln::cli::bench
