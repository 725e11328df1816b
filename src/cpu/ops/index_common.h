// The CPU backend's indexing machinery: restrided views and the two
// data-movement kernels every indexing op is built from:
//
//   gather_kernel:   out[e] = src[e] + idx[e] * dim_stride       (reads only)
//   scatter_columns: for k in [0, K): dst[e] + idx[e, k] * dim_stride  op=  src[e, k]
//
// A "base view" is a tensor restrided to the iteration shape with stride 0
// along the indexed dim, so that adding idx * dim_stride lands on the element
// (ATen's restride trick). The copy kernels move bytes by element size only,
// so one instantiation serves every dtype of that size.
#pragma once

#include <algorithm>
#include <cstring>

#include "core/index_bounds.h"
#include "core/strided_loop.h"
#include "kiln/tensor.h"

namespace kiln::index_detail {

// Storage-type stand-in for a 16-byte element (complex128).
struct Bytes16 {
  uint64_t lo, hi;
};

// Calls f.template operator()<U>() with U an unsigned type of `size` bytes.
template <typename F>
decltype(auto) dispatch_size(size_t size, F&& f) {
  switch (size) {
    case 1:
      return f.template operator()<uint8_t>();
    case 2:
      return f.template operator()<uint16_t>();
    case 4:
      return f.template operator()<uint32_t>();
    case 8:
      return f.template operator()<uint64_t>();
    default:
      return f.template operator()<Bytes16>();
  }
}

// A view of t's storage with the given shape and strides (elements), at t's offset.
inline Tensor restride(const Tensor& t, const Shape& shape, const Shape& strides) {
  return Tensor(t.storage(), t.dtype(), shape, strides, t.offset());
}

// off[e] += wrap(idx[e]) * stride for off (contiguous int64 scratch) and idx
// (int64, expanded to off's shape). Throws IndexError after the pass when an
// index lies outside [-size, size); off is scratch, so nothing user-visible is written.
inline void add_wrapped_offsets(Tensor& off, const Tensor& idx, int64_t size, int64_t stride, const char* op,
                                int dim) {
  if (off.numel() == 0) return;
  const Tensor* ops[2] = {&off, &idx};
  const StridedLoop loop = StridedLoop::make(off.shape(), ops);
  BadIndex bad;
  for_each(loop, kElementwiseGrain, [&](char** p, const int64_t* s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = load_i64(p[1] + i * s[1]);
      if (v < -size || v >= size) {
        bad.report(v);
        return;
      }
      if (v < 0) v += size;
      int64_t o = load_i64(p[0] + i * s[0]);
      o += v * stride;
      std::memcpy(p[0] + i * s[0], &o, sizeof(o));
    }
  });
  bad.throw_if_any(op, dim, size);
}

// out[e] = src_base[e + idx[e] * dim_stride]: out, src_base (same dtype) and idx
// (int64) all have out's shape; dim_stride in elements of src. Indices must be
// validated (and wrapped) already.
inline void gather_kernel(const Tensor& out, const Tensor& src_base, const Tensor& idx, int64_t dim_stride) {
  if (out.numel() == 0) return;
  const Tensor* ops[3] = {&out, &src_base, &idx};
  const StridedLoop loop = StridedLoop::make(out.shape(), ops);
  const int64_t sz = int64_t(out.itemsize());
  const int64_t ds = dim_stride * sz;
  dispatch_size(size_t(sz), [&]<typename U>() {
    for_each(loop, kElementwiseGrain, [&](char** p, const int64_t* s, int64_t n) {
      if (s[2] == 0) {  // one index for the whole run (index_select, embedding rows)
        const char* src = p[1] + load_i64(p[2]) * ds;
        if (s[0] == sz && s[1] == sz) {
          std::memcpy(p[0], src, size_t(n * sz));
        } else {
          for (int64_t i = 0; i < n; ++i) std::memcpy(p[0] + i * s[0], src + i * s[1], sizeof(U));
        }
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        const int64_t j = load_i64(p[2] + i * s[2]);
        std::memcpy(p[0] + i * s[0], p[1] + i * s[1] + j * ds, sizeof(U));
      }
    });
  });
}

// For every position e of the shared shape of dst_base, src and idx (the
// "columns") and k in [0, K): op(dst_base[e] + idx[e, k] * dim_stride, src[e, k]),
// with idx[e, k] = idx[e] + k * idx_k_stride and src[e, k] = src[e] + k *
// src_k_stride (strides in bytes, dim_stride in bytes). Columns are split across
// threads and k runs in order inside each, so duplicate indices never race and
// the last write wins. row(d, s, n) does op on n contiguous elements: it serves
// runs where one index covers a contiguous stretch of dst and src (index_add
// and x[idx] += v over rows), which the compiler can vectorize.
template <typename Op, typename RowOp>
void scatter_columns(const Tensor& dst_base, const Tensor& src, const Tensor& idx, int64_t K,
                     int64_t dim_stride_b, int64_t src_k_stride_b, int64_t idx_k_stride_b, Op op, RowOp row) {
  if (dst_base.numel() == 0 || K == 0) return;
  const Tensor* ops[3] = {&dst_base, &src, &idx};
  const StridedLoop loop = StridedLoop::make(dst_base.shape(), ops);
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / K);
  const int64_t sz = int64_t(dst_base.itemsize());
  for_each(loop, grain, [&](char** p, const int64_t* s, int64_t n) {
    const bool rows = s[0] == sz && s[1] == sz && s[2] == 0;
    for (int64_t k = 0; k < K; ++k) {
      const char* sp = p[1] + k * src_k_stride_b;
      const char* ip = p[2] + k * idx_k_stride_b;
      if (rows) {
        row(p[0] + load_i64(ip) * dim_stride_b, sp, n);
      } else {
        for (int64_t i = 0; i < n; ++i)
          op(p[0] + i * s[0] + load_i64(ip + i * s[2]) * dim_stride_b, sp + i * s[1]);
      }
    }
  });
}

// scatter_columns with a plain byte copy as op (last write wins).
inline void scatter_copy(const Tensor& dst_base, const Tensor& src, const Tensor& idx, int64_t K,
                         int64_t dim_stride_b, int64_t src_k_stride_b, int64_t idx_k_stride_b) {
  dispatch_size(dst_base.itemsize(), [&]<typename U>() {
    scatter_columns(
        dst_base, src, idx, K, dim_stride_b, src_k_stride_b, idx_k_stride_b,
        [](char* d, const char* s) { std::memcpy(d, s, sizeof(U)); },
        [](char* d, const char* s, int64_t n) { std::memmove(d, s, size_t(n) * sizeof(U)); });
  });
}

// scatter_columns adding alpha * src (dst's dtype): integers and bool add in
// their own type (bool: or), narrow floats widen to float.
void scatter_accumulate(const Tensor& dst_base, const Tensor& src, const Tensor& idx, int64_t K,
                        int64_t dim_stride_b, int64_t src_k_stride_b, int64_t idx_k_stride_b,
                        const Scalar& alpha, const char* op);

// Shape and strides of t with dim d removed.
inline void drop_dim(const Tensor& t, int d, Shape* shape, Shape* strides) {
  for (int i = 0; i < t.dim(); ++i) {
    if (i == d) continue;
    shape->push_back(t.size(i));
    strides->push_back(t.stride(i));
  }
}

}  // namespace kiln::index_detail

namespace kiln::cpu {

// Each file's registrations, called by register_index_kernels().
void register_index_take_kernels();
void register_index_gather_kernels();
void register_index_select_kernels();
void register_index_mask_kernels();
void register_index_advanced_kernels();

}  // namespace kiln::cpu
