// Contiguous SIMD kernels for the hot binary ops (add, sub, mul, div) on
// float32, bfloat16 and float16, dispatched to the best Highway target at run time. The
// caller threads them (they run on one chunk); bfloat16 is widened to float32,
// computed, and rounded to nearest even on store, bit-identical to the scalar
// path in kiln/float_types.h.
#pragma once

#include <cstdint>

namespace kiln::cpu {

enum class ArithOp : int { Add, Sub, Mul, Div };

// out[i] = a[i] op b[i].
void arith_f32(ArithOp op, float* out, const float* a, const float* b, int64_t n);
// out[i] = a[i] op s (scalar_first: s op a[i]).
void arith_f32_scalar(ArithOp op, float* out, const float* a, float s, bool scalar_first, int64_t n);
// The same on bfloat16 storage (raw bits), computed in float32.
void arith_bf16(ArithOp op, uint16_t* out, const uint16_t* a, const uint16_t* b, int64_t n);
void arith_bf16_scalar(ArithOp op, uint16_t* out, const uint16_t* a, float s, bool scalar_first,
                       int64_t n);

// float16 storage (raw bits), computed in float32; SIMD where the CPU converts
// float16 in hardware (x86 F16C), the scalar reference elsewhere.
void arith_f16(ArithOp op, uint16_t* out, const uint16_t* a, const uint16_t* b, int64_t n);
void arith_f16_scalar(ArithOp op, uint16_t* out, const uint16_t* a, float s, bool scalar_first,
                      int64_t n);

}  // namespace kiln::cpu
