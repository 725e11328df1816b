// A persistent pool of worker threads sized to the CPUs the process may use
// (KILN_NUM_THREADS overrides) with a low-latency parallel_for: workers spin
// briefly, then yield, before they sleep, so back-to-back small ops do not pay
// a wake-up each, and a worker the OS has not run holds up no region it has
// not joined.
#pragma once

#include <cstdint>
#include <utility>

namespace kiln {

// The most threads the pool runs (set_num_threads rejects more; a larger
// KILN_NUM_THREADS is capped to it).
constexpr int kMaxThreads = 1024;

int num_threads();
// Resizes the pool (n >= 1, at most kMaxThreads). Not to be called from inside
// a parallel region.
void set_num_threads(int n);
// True while the calling thread runs a parallel_for body.
bool in_parallel_region();

namespace detail {
using RangeFn = void (*)(void* ctx, int64_t begin, int64_t end);
void parallel_for_impl(int64_t begin, int64_t end, int64_t grain, void* ctx, RangeFn fn);
}  // namespace detail

// Splits [begin, end) into at most num_threads() contiguous chunks of at least
// `grain` items and calls fn(chunk_begin, chunk_end) on each, the calling thread
// taking part. Runs inline when the range is small or when nested.
template <typename F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& fn) {
  if (end <= begin) return;
  if (end - begin <= grain || in_parallel_region()) {
    fn(begin, end);
    return;
  }
  auto tramp = [](void* ctx, int64_t b, int64_t e) { (*static_cast<std::remove_reference_t<F>*>(ctx))(b, e); };
  detail::parallel_for_impl(begin, end, grain, (void*)&fn, tramp);
}

}  // namespace kiln
