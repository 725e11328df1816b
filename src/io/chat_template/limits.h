// The bounds on one render. A chat template comes from a model file (GGUF
// metadata, tokenizer_config.json), so it is untrusted input: without bounds a
// few lines of Jinja loop for hours, build values of exabytes or recurse until
// the stack overflows. Each limit sits far above what real chat templates
// need: the templates in tests/data/chat_templates use under 1% of the steps
// and bytes rendering a 200-message conversation (ChatTemplate.RealTemplatesUseLittleOfTheLimits).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "kiln/chat_template.h"

namespace kiln::jinja {

// Evaluation steps: one per statement or expression evaluated and per value
// copied, compared or visited by a filter, plus one per 64 bytes a search scans.
inline constexpr uint64_t kMaxSteps = 5'000'000;
// Bytes of strings, lists and dicts a render builds or copies, its output
// included. Counted cumulatively, so it bounds the memory held at any time.
inline constexpr uint64_t kMaxBytes = uint64_t(256) << 20;
// Depth of the syntax tree and of lists/dicts inside lists/dicts: the parser,
// the evaluator, printing and freeing recurse over them on the C++ stack.
inline constexpr int kMaxNesting = 256;
// range() items: Jinja's sandbox (which transformers uses) allows 100000.
inline constexpr int64_t kMaxRange = 100000;

// The budget of the render running on this thread. Charges made while no
// render runs (values built by the caller) are free.
class Budget {
 public:
  Budget();  // becomes this thread's active budget
  ~Budget();
  Budget(const Budget&) = delete;
  Budget& operator=(const Budget&) = delete;

  static Budget* active();
  void at_line(int line) { line_ = line; }
  void step(uint64_t n = 1) {
    steps_ = n > UINT64_MAX - steps_ ? UINT64_MAX : steps_ + n;
    if (steps_ > kMaxSteps) over_steps();
  }
  void alloc(uint64_t bytes) {
    // Saturating: a request sized UINT64_MAX (an overflowed product) must not wrap.
    bytes_ = bytes > UINT64_MAX - bytes_ ? UINT64_MAX : bytes_ + bytes;
    if (bytes_ > kMaxBytes) over_bytes();
  }
  uint64_t steps() const { return steps_; }
  uint64_t bytes() const { return bytes_; }
  int line() const { return line_; }

 private:
  [[noreturn]] void over_steps() const;
  [[noreturn]] void over_bytes() const;
  uint64_t steps_ = 0, bytes_ = 0;
  int line_ = 0;
  Budget* prev_;
};

// Charge the active budget, if any.
inline void charge_steps(uint64_t n) {
  if (Budget* b = Budget::active()) b->step(n);
}
inline void charge_bytes(uint64_t n) {
  if (Budget* b = Budget::active()) b->alloc(n);
}
// Refuses, before it is built, a value of n bytes that would pass the limit.
inline void check_room(uint64_t n) {
  Budget* b = Budget::active();
  if (b && n > kMaxBytes - std::min(b->bytes(), kMaxBytes)) b->alloc(n);
}
// Scanning n bytes (searching, comparing, counting characters).
inline void charge_scan(uint64_t n) { charge_steps(1 + n / 64); }

// A TemplateError with the line of the active render, if any.
[[noreturn]] void limit_error(const std::string& msg);

}  // namespace kiln::jinja
