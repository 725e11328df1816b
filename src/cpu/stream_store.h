// Copies and fills with non-temporal stores, for outputs far larger than the
// caches: a plain store first reads the line it writes (read for ownership), so
// a kernel that writes more than it reads moves up to twice its bytes. Stored
// lines go to memory, not to cache, so only outputs that would not stay cached
// anyway should use them; stream_fence() before other threads read them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::cpu {

// Outputs of at least this many bytes stream: they do not stay in the cache
// share of a few cores. tril of a cold [4096, 4096] float32 (64 MiB) went from
// 0.51 to 1.16-1.28 of the read roof, repeat (2, 2) from 0.59 to 1.08 (2-core
// AMX Xeon, `kiln bench ops`); warm in cache, tril kept its speed.
inline constexpr int64_t kStreamMinBytes = int64_t(16) << 20;
// Only runs of at least this many bytes stream; shorter ones would mix plain
// and streamed stores in the same cache lines.
inline constexpr int64_t kStreamMinRun = 1024;

// dst[0, n) = src[0, n) (no overlap) / = 0, bytes; the aligned body streams.
void stream_copy(void* dst, const void* src, size_t n);
void stream_zero(void* dst, size_t n);
// Orders this thread's streamed stores before its later stores (sfence on x86).
void stream_fence();

}  // namespace kiln::cpu
