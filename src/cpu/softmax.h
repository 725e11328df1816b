// Vectorized softmax / log_softmax over contiguous float32 rows (Highway,
// dynamic dispatch), and the row primitives sampling fuses with.
#pragma once

#include <cstdint>

namespace kiln::cpu {

// x: [rows, n] float32, rows `sx` elements apart, contiguous within a row ->
// y: [rows, n] (rows `sy` apart); y may equal x. log: log_softmax. A row whose
// max is NaN or +-inf (any NaN, +inf, or every entry -inf) becomes all NaN, as
// torch's result. Threads split the rows, or one long row (partial max/sum
// per chunk, then combined) when there are fewer rows than threads.
void softmax_rows_f32(const float* x, int64_t sx, float* y, int64_t sy, int64_t rows, int64_t n, bool log);

// The max of x[0..n) (NaN if any entry is NaN; -inf when n == 0).
float row_max_f32(const float* x, int64_t n);
// sum_i exp(x[i] * inv_t - m) over x[0..n) (f64 accumulation of f32 blocks).
double row_expsum_f32(const float* x, int64_t n, float inv_t, float m);
// y[i] = exp(x[i]) for n contiguous floats (the exp the softmax kernels use;
// exposed so tests can measure its error).
void exp_f32(const float* x, float* y, int64_t n);

}  // namespace kiln::cpu
