// A read of a buffer the way a well-written streaming kernel reads it: full
// SIMD-width loads, several far-apart streams in lockstep, each into its own
// accumulator. It is the body of the benchmarks' memory roof
// (bench/bandwidth.h), so the roof is measured with the same instructions the
// memory-bound kernels use, not with narrow loads that would understate what
// the machine can deliver.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::sys {

// XOR of the 64-bit words of p[0, bytes) (p 8-byte aligned; bytes a multiple
// of 8). The caller keeps the result so the loads cannot be dropped. The range
// is read as `streams` equal parts side by side (8 or 12). prefetch_bytes > 0
// also issues a software prefetch that far ahead in each part.
uint64_t stream_read_xor(const void* p, size_t bytes, size_t prefetch_bytes, int streams = 8);

}  // namespace kiln::sys
