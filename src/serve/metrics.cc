// Prometheus text exposition (format 0.0.4) of the server's metrics.
#include "serve/metrics.h"

#include <cstdio>

namespace kiln::serve {

namespace {

std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

std::string counter(const char* name, const char* help, const char* type, int64_t v) {
  return std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " +
         std::to_string(v) + "\n";
}

// Latency bounds in seconds: 5 ms to 2 minutes.
std::vector<double> latency_bounds() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1) {}

void Histogram::observe(double v) {
  const std::lock_guard<std::mutex> lock(mu_);
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

std::string Histogram::render(const std::string& name, const std::string& help) const {
  const std::lock_guard<std::mutex> lock(mu_);
  std::string s = "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  int64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    s += name + "_bucket{le=\"" + num(bounds_[i]) + "\"} " + std::to_string(cum) + "\n";
  }
  s += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  s += name + "_sum " + num(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
  return s;
}

Metrics::Metrics()
    : time_to_first_token(latency_bounds()),
      request_seconds(latency_bounds()),
      step_seconds({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}) {}

void Metrics::count_request(const std::string& endpoint, int status) {
  const std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, status}];
}

std::string Metrics::render() const {
  std::string s =
      "# HELP kiln_requests_total HTTP requests answered, by endpoint and status.\n"
      "# TYPE kiln_requests_total counter\n";
  {
    const std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, v] : requests_)
      s += "kiln_requests_total{endpoint=\"" + k.first + "\",status=\"" + std::to_string(k.second) + "\"} " +
           std::to_string(v) + "\n";
  }
  s += counter("kiln_prompt_tokens_total", "Prompt tokens of admitted requests.", "counter", prompt_tokens);
  s += counter("kiln_prompt_tokens_reused_total", "Prompt tokens whose KV cache was reused, not computed.",
               "counter", prompt_tokens_reused);
  s += counter("kiln_generated_tokens_total", "Tokens generated.", "counter", generated_tokens);
  s += counter("kiln_steps_total", "Batched forward steps run.", "counter", steps);
  s += counter("kiln_requests_cancelled_total", "Requests whose client went away before the end.", "counter",
               cancelled);
  s += counter("kiln_queue_requests", "Requests waiting for a place in the batch.", "gauge", waiting);
  s += counter("kiln_running_sequences", "Choices decoding in the batch.", "gauge", running);
  s += time_to_first_token.render("kiln_time_to_first_token_seconds",
                                  "From a request's arrival to its first token.");
  s += request_seconds.render("kiln_request_seconds", "From a request's arrival to its last token.");
  s += step_seconds.render("kiln_step_seconds", "Duration of one batched forward step and its sampling.");
  return s;
}

}  // namespace kiln::serve
