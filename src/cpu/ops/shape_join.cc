// CPU kernel of cat and stack: each input is copied into its slab of the
// output (out.narrow along dim). Same dtype: a byte copy (threaded memcpy when
// both sides are contiguous, else a strided loop on the element size, no
// dtype dispatch); another dtype: the copy kernel's converting loop.
#include <cstring>

#include "core/copy_ops.h"
#include "core/dense_layout.h"
#include "core/strided_loop.h"
#include "cpu/ops/register.h"
#include "cpu/stream_store.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

// Fixed-size element, so the strided loop moves whole items in registers.
template <size_t N>
struct Item {
  char b[N];
};

template <size_t N>
void strided_copy(const StridedLoop& loop, bool stream) {
  using T = Item<N>;
  for_each(loop, kElementwiseGrain, [stream](char** p, const int64_t* s, int64_t n) {
    if (s[0] == int64_t(N) && s[1] == int64_t(N)) {
      const size_t bytes = size_t(n) * N;
      if (stream && int64_t(bytes) >= kStreamMinRun) {
        stream_copy(p[0], p[1], bytes);
        stream_fence();  // per run: the loop has no end-of-chunk hook
      } else {
        std::memcpy(p[0], p[1], bytes);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        T v;
        std::memcpy(&v, p[1] + i * s[1], N);
        std::memcpy(p[0] + i * s[0], &v, N);
      }
    }
  });
}

// dst = src, same dtype and shape; stream: with non-temporal stores
// (cpu/stream_store.h), for a slab of a large output.
void copy_bytes(const Tensor& dst, const Tensor& src, bool stream) {
  if (same_dense_layout(dst, src)) {
    char* d = static_cast<char*>(dst.data_ptr());
    const char* s = static_cast<const char*>(src.data_ptr());
    const int64_t bytes = dst.numel() * int64_t(dst.itemsize());
    parallel_for(0, bytes, int64_t(1) << 20, [&](int64_t b, int64_t e) {
      if (!stream) return (void)std::memcpy(d + b, s + b, size_t(e - b));
      stream_copy(d + b, s + b, size_t(e - b));
      stream_fence();
    });
    return;
  }
  const Tensor* ops[2] = {&dst, &src};
  const StridedLoop loop = StridedLoop::make(dst.shape(), ops, StridedLoop::Order::OutputMemory);
  switch (dst.itemsize()) {
    case 1:
      strided_copy<1>(loop, stream);
      break;
    case 2:
      strided_copy<2>(loop, stream);
      break;
    case 4:
      strided_copy<4>(loop, stream);
      break;
    case 8:
      strided_copy<8>(loop, stream);
      break;
    default:
      strided_copy<16>(loop, stream);
  }
}

// xs[i]: [.., n_i, ..] -> out[.., off_i : off_i + n_i, ..].
void cat(std::span<const Tensor> xs, int dim, const Tensor& out) {
  int64_t off = 0;
  for (const Tensor& x : xs) {
    const int64_t n = x.size(dim);
    const Tensor slab = out.narrow(dim, off, n);
    off += n;
    if (x.numel() == 0) continue;
    if (x.dtype() == out.dtype()) {
      copy_bytes(slab, x, int64_t(out.nbytes()) >= kStreamMinBytes);
    } else {
      ops::copy.kernel(DeviceKind::CPU)(slab, x);
    }
  }
}

}  // namespace

void register_shape_reorder_kernels();  // shape_reorder.cc

void register_shape_kernels() {
  register_shape_reorder_kernels();
  ops::cat.set_kernel(DeviceKind::CPU, cat);
  ops::stack.set_kernel(DeviceKind::CPU, cat);
}

}  // namespace kiln::cpu
