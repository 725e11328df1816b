// CPU kernels of copy and fill (core/copy_ops.h): contiguous same-dtype
// copies are a threaded memcpy, contiguous conversions the vector converters
// of core/convert.h, a transposed matrix (x.t().contiguous()) or a layout
// change that is one (NCHW <-> NHWC) a blocked transpose, everything else a
// strided cast loop.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/cast.h"
#include "core/convert.h"
#include "core/copy_ops.h"
#include "core/dense_layout.h"
#include "core/strided_loop.h"
#include "cpu/ops/register.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {
namespace {

template <typename To, typename From>
void cast_loop(const StridedLoop& loop) {
  for_each(loop, kElementwiseGrain, [](char** p, const int64_t* s, int64_t n) {
    char* out = p[0];
    const char* in = p[1];
    if (s[0] == int64_t(sizeof(To)) && s[1] == int64_t(sizeof(From))) {
      To* o = reinterpret_cast<To*>(out);
      const From* x = reinterpret_cast<const From*>(in);
      for (int64_t i = 0; i < n; ++i) o[i] = cast<To>(x[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        From v;
        std::memcpy(&v, in + i * s[1], sizeof(From));
        const To r = cast<To>(v);
        std::memcpy(out + i * s[0], &r, sizeof(To));
      }
    }
  });
}

// One 32 x 32 block of a transposed copy: rows [r0, r0 + rn) and columns
// [c0, c0 + cn) of dst (row length C) from src's columns (sc apart, each
// contiguous along r). Read whole runs of src's columns into a buffer in L1,
// then write whole runs of dst's rows from it: rows 2^k bytes apart share L1
// sets, so writing or reading them an element at a time misses. (GCC's loop
// interchange would turn the write loop round, making the stores to dst the
// strided ones again.)
#if defined(__GNUC__) && !defined(__clang__)
#define KILN_NO_INTERCHANGE __attribute__((optimize("no-loop-interchange")))
#else
#define KILN_NO_INTERCHANGE
#endif
constexpr int64_t kTransposeBlock = 32;
template <typename U>
KILN_NO_INTERCHANGE void transpose_block(U* __restrict d, int64_t C, const U* __restrict s, int64_t sc,
                                         int64_t r0, int64_t rn, int64_t c0, int64_t cn) {
  U blk[kTransposeBlock][kTransposeBlock];  // blk[c][r]
  for (int64_t c = 0; c < cn; ++c) std::memcpy(blk[c], s + (c0 + c) * sc + r0, size_t(rn) * sizeof(U));
  for (int64_t r = 0; r < rn; ++r) {
    U* __restrict row = d + (r0 + r) * C + c0;
    for (int64_t c = 0; c < cn; ++c) row[c] = blk[c][r];
  }
}

// dst [..., R, C] (contiguous) = src of the same dtype whose last two dims
// are a transposed matrix (stride 1 along R), in 32 x 32 blocks, a band of
// 32 rows of dst per task. The strided loop walks dst's rows and reads src a
// line per element.
template <typename U>
void transpose_blocks(const Tensor& dst, const Tensor& src) {
  const int64_t nd = dst.dim(), R = dst.size(nd - 2), C = dst.size(nd - 1), sc = src.stride(nd - 1);
  const int64_t batches = R * C == 0 ? 0 : dst.numel() / (R * C);
  constexpr int64_t kB = kTransposeBlock;
  const int64_t rb = (R + kB - 1) / kB;
  U* d = static_cast<U*>(dst.data_ptr());
  const U* s = static_cast<const U*>(src.data_ptr());
  parallel_for(0, batches * rb, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, C)),
               [&](int64_t b0, int64_t b1) {
                 for (int64_t t = b0; t < b1; ++t) {
                   const int64_t bi = t / rb, r0 = (t % rb) * kB, rn = std::min(R - r0, kB);
                   int64_t so = 0;  // src's offset of batch bi
                   for (int64_t i = nd - 3, rest = bi; i >= 0; --i) {
                     so += (rest % src.size(i)) * src.stride(i);
                     rest /= src.size(i);
                   }
                   for (int64_t c0 = 0; c0 < C; c0 += kB)
                     transpose_block(d + bi * R * C, C, s + so, sc, r0, rn, c0, std::min(C - c0, kB));
                 }
               });
}

// dst and src viewed in dst's memory order (dims sorted by dst's strides,
// size-1 dims dropped), with the dims that are contiguous in both merged: a
// layout change such as NCDHW <-> NDHWC becomes a batch of matrix transposes
// [..., R, C] with dst contiguous and src's stride 1 along R. False (views
// left undefined) when the copy is not one.
bool as_transpose(const Tensor& dst, const Tensor& src, Tensor& d, Tensor& s) {
  if (src.dtype() != dst.dtype() || !is_non_overlapping_and_dense(dst)) return false;
  std::vector<int> order(size_t(dst.dim()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return dst.stride(a) > dst.stride(b); });
  Shape sizes, ds, ss;
  for (int i : order) {
    const int64_t n = dst.size(i);
    if (n == 1) continue;
    if (!sizes.empty() && ds.back() == dst.stride(i) * n && ss.back() == src.stride(i) * n) {
      sizes.back() *= n;
      ds.back() = dst.stride(i);
      ss.back() = src.stride(i);
      continue;
    }
    sizes.push_back(n);
    ds.push_back(dst.stride(i));
    ss.push_back(src.stride(i));
  }
  const size_t m = sizes.size();
  if (m < 2 || ds[m - 1] != 1 || ss[m - 2] != 1 || ss[m - 1] < sizes[m - 2]) return false;
  d = Tensor(dst.storage(), dst.dtype(), sizes, ds, dst.offset(), "copy_");
  s = Tensor(src.storage(), src.dtype(), sizes, ss, src.offset(), "copy_");
  return true;
}

bool copy_transposed(const Tensor& dst_in, const Tensor& src_in) {
  Tensor dst, src;
  if (!as_transpose(dst_in, src_in, dst, src)) return false;
  switch (dst.itemsize()) {
    case 1:
      transpose_blocks<uint8_t>(dst, src);
      return true;
    case 2:
      transpose_blocks<uint16_t>(dst, src);
      return true;
    case 4:
      transpose_blocks<uint32_t>(dst, src);
      return true;
    case 8:
      transpose_blocks<uint64_t>(dst, src);
      return true;
    default:
      return false;
  }
}

// dst = src (same shape, no overlap), converting dtypes.
void copy(const Tensor& dst, const Tensor& src) {
  const int64_t n = dst.numel();
  // Contiguous, or one dense layout on both sides (a channels-last clone): the
  // elements are the same flat run of memory.
  const bool flat = same_dense_layout(dst, src);
  if (flat) {
    if (src.dtype() == dst.dtype()) {
      char* d = static_cast<char*>(dst.data_ptr());
      const char* s = static_cast<const char*>(src.data_ptr());
      const int64_t bytes = n * int64_t(dst.itemsize());
      parallel_for(0, bytes, int64_t(1) << 20,
                   [&](int64_t b, int64_t e) { std::memcpy(d + b, s + b, size_t(e - b)); });
      return;
    }
    if (convert_contiguous(src.data_ptr(), src.dtype(), dst.data_ptr(), dst.dtype(), n)) return;
  }
  if (copy_transposed(dst, src)) return;
  const Tensor* ops[2] = {&dst, &src};
  const StridedLoop loop = StridedLoop::make(dst.shape(), ops, StridedLoop::Order::OutputMemory);
  dispatch<kAllSet>(dst.dtype(), "copy_", [&]<typename To>() {
    dispatch<kAllSet>(src.dtype(), "copy_", [&]<typename From>() { cast_loop<To, From>(loop); });
  });
}

void fill(const Tensor& dst, const Scalar& value) {
  const Tensor* ops[1] = {&dst};
  const StridedLoop loop = StridedLoop::make(dst.shape(), ops, StridedLoop::Order::OutputMemory);
  dispatch<kAllSet>(dst.dtype(), "fill_", [&]<typename T>() {
    const T v = value.to<T>();
    for_each(loop, kElementwiseGrain, [v](char** p, const int64_t* s, int64_t n) {
      if (s[0] == int64_t(sizeof(T))) {
        T* o = reinterpret_cast<T*>(p[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i) std::memcpy(p[0] + i * s[0], &v, sizeof(T));
      }
    });
  });
}

}  // namespace

void register_copy_kernels() {
  ops::copy.set_kernel(DeviceKind::CPU, copy);
  ops::fill.set_kernel(DeviceKind::CPU, fill);
}

}  // namespace kiln::cpu
