#include "core/bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <new>

#include "core/sysinfo.h"
#include "kiln/thread_pool.h"

namespace kiln::sys {
namespace {

constexpr size_t kLine = 64;
// Chunks of 1 MiB (in 64-byte lines) keep the split even and cheap.
constexpr int64_t kGrainLines = (int64_t(1) << 20) / kLine;

// Four 16-byte lanes per line: XOR is associative, so the compiler keeps the
// loads wide without -ffast-math, and one XOR per load never limits a read
// that DRAM paces.
typedef uint64_t u64x2 __attribute__((vector_size(16)));

uint64_t xor_lines(const uint64_t* p, int64_t lines) {
  u64x2 a = {0, 0}, b = a, c = a, d = a;
  const u64x2* v = reinterpret_cast<const u64x2*>(p);
  for (int64_t i = 0; i < lines; ++i) {
    a ^= v[4 * i + 0];
    b ^= v[4 * i + 1];
    c ^= v[4 * i + 2];
    d ^= v[4 * i + 3];
  }
  const u64x2 r = a ^ b ^ c ^ d;
  return r[0] ^ r[1];
}

// Where each pass leaves its checksum, so the compiler cannot drop the loads.
volatile uint64_t g_sink = 0;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

RoofStats summarize_gbps(std::vector<double> gbps) {
  RoofStats s;
  if (gbps.empty()) return s;
  std::sort(gbps.begin(), gbps.end());
  const size_t n = gbps.size();
  s.median_gbps = n % 2 ? gbps[n / 2] : 0.5 * (gbps[n / 2 - 1] + gbps[n / 2]);
  s.min_gbps = gbps.front();
  s.max_gbps = gbps.back();
  s.passes = int(n);
  return s;
}

size_t default_roof_bytes() {
  const SystemInfo& info = system_info();
  const size_t llc = size_t(std::max<int64_t>(info.llc_bytes(), 0));
  size_t bytes = std::max<size_t>(4 * llc, size_t(64) << 20);
  if (info.mem_available_bytes > 0) bytes = std::min(bytes, size_t(info.mem_available_bytes) / 4);
  return std::max<size_t>(bytes / kLine * kLine, kLine);
}

ReadRoof::ReadRoof(size_t bytes) {
  bytes_ = std::max<size_t>((bytes + kLine - 1) / kLine * kLine, kLine);
  data_ = static_cast<uint64_t*>(std::aligned_alloc(4096, (bytes_ + 4095) / 4096 * 4096));
  if (data_ == nullptr) throw std::bad_alloc();
  const int64_t lines = int64_t(bytes_ / kLine);
  uint64_t* data = data_;
  kiln::parallel_for(0, lines, kGrainLines, [data](int64_t b, int64_t e) {
    for (int64_t i = b * 8; i < e * 8; ++i) data[i] = uint64_t(i) * 0x9E3779B97F4A7C15ull;
  });
}

ReadRoof::~ReadRoof() { std::free(data_); }

double ReadRoof::pass_gbps() const {
  const int64_t lines = int64_t(bytes_ / kLine);
  const uint64_t* data = data_;
  std::atomic<uint64_t> sink{0};
  const double t0 = now_s();
  kiln::parallel_for(0, lines, kGrainLines, [data, &sink](int64_t b, int64_t e) {
    sink.fetch_xor(xor_lines(data + b * 8, e - b), std::memory_order_relaxed);
  });
  const double dt = now_s() - t0;
  g_sink = sink.load(std::memory_order_relaxed);
  return double(bytes_) / std::max(dt, 1e-12) / 1e9;
}

RoofStats ReadRoof::measure(double budget_s, int min_passes, int max_passes) const {
  std::vector<double> samples;
  const double start = now_s();
  pass_gbps();  // warm-up: TLB, page tables, waking the pool
  while (int(samples.size()) < std::max(max_passes, 1)) {
    samples.push_back(pass_gbps());
    if (int(samples.size()) >= min_passes && now_s() - start >= budget_s) break;
  }
  RoofStats s = summarize_gbps(std::move(samples));
  s.bytes = bytes_;
  s.threads = kiln::num_threads();
  return s;
}

}  // namespace kiln::sys
