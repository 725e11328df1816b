// Vectorized softmax / log_softmax over contiguous float32 rows (Highway,
// dynamic dispatch), and the row primitives sampling fuses with.
#pragma once

#include <cstdint>

namespace kiln::cpu {

// Floats per block of the online read pass (each block: a max sweep, then an
// exp sweep from L1). f32 lane sums cover one block, blocks add up in f64.
inline constexpr int64_t kSoftmaxBlock = 2048;
// rows * n below this runs on the calling thread.
inline constexpr int64_t kSoftmaxParallelMin = 16384;
// Rows at least this long split across threads when there are fewer of them
// left than threads.
inline constexpr int64_t kSoftmaxSplitMin = 16384;
inline constexpr int kSoftmaxMaxThreads = 64;

// x: [rows, n] float32, rows `sx` elements apart, contiguous within a row ->
// y: [rows, n] (rows `sy` apart); y may equal x. log: log_softmax. A row whose
// max is NaN or +-inf (any NaN, +inf, or every entry -inf) becomes all NaN, as
// torch's result. Threads split the rows; long rows left over when rows don't
// divide among the threads are each split across all of them (partial max/sum
// per chunk, then combined).
void softmax_rows_f32(const float* x, int64_t sx, float* y, int64_t sy, int64_t rows, int64_t n, bool log);

// The max of x[0..n) (NaN if any entry is NaN; -inf when n == 0).
float row_max_f32(const float* x, int64_t n);
// sum_i exp(x[i] * inv_t - m) over x[0..n) (f64 accumulation of f32 blocks).
double row_expsum_f32(const float* x, int64_t n, float inv_t, float m);
// The candidates of a top-p draw: z_i = (x_i - m) * inv_t for i in [0, V)
// (V < 2^31), and those with z_i >= zthr compacted, in index order, into
// cz[0..n) with their indices in cid[0..n); returns n. cz and cid must hold
// V + 16 entries: the compaction stores whole vectors.
inline constexpr int64_t kGatherSlack = 16;
int64_t gather_above_f32(const float* x, int64_t V, float m, float inv_t, float zthr, float* cz,
                         int32_t* cid);
// y[i] = exp(x[i]) for n contiguous floats (the exp the softmax kernels use;
// exposed so tests can measure its error).
void exp_f32(const float* x, float* y, int64_t n);

}  // namespace kiln::cpu
