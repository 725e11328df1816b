// The server's counters, gauges and latency histograms, written by the HTTP
// threads and the engine thread and read as Prometheus text (GET /metrics).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace kiln::serve {

// Cumulative buckets over fixed upper bounds (seconds), as Prometheus reads them.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  // "# HELP"/"# TYPE" lines, then name_bucket{le=...}, name_sum, name_count.
  std::string render(const std::string& name, const std::string& help) const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  int64_t count_ = 0;
};

struct Metrics {
  Metrics();
  std::atomic<int64_t> prompt_tokens{0};         // prompt tokens of admitted requests
  std::atomic<int64_t> prompt_tokens_reused{0};  // of those, taken from a kept cache
  std::atomic<int64_t> generated_tokens{0};
  std::atomic<int64_t> steps{0};
  std::atomic<int64_t> waiting{0};  // requests queued (gauge)
  std::atomic<int64_t> running{0};  // choices in the batch (gauge)
  std::atomic<int64_t> cancelled{0};
  Histogram time_to_first_token, request_seconds, step_seconds;

  void count_request(const std::string& endpoint, int status);
  std::string render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
};

}  // namespace kiln::serve
