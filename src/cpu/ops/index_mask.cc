// CPU kernels of masked_fill, masked_select and nonzero
// (ops/registry/index.h). masked_select and nonzero count per chunk, then
// write each chunk at its prefix offset, so the output is allocated once.
#include "core/cast.h"
#include "cpu/ops/index_common.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
using namespace index_detail;
namespace {

// Splits [0, n) into chunks for the count-then-write passes.
int64_t chunk_count(int64_t n) {
  constexpr int64_t kGrain = 1 << 16;
  return std::max<int64_t>(1, std::min<int64_t>(int64_t(num_threads()) * 4, (n + kGrain - 1) / kGrain));
}

// Where chunk c of `chunks` starts in [0, n): n * c in 128 bits, since an
// expanded view's n may be near 2^63.
int64_t chunk_start(int64_t n, int64_t c, int64_t chunks) { return int64_t(__int128(n) * c / chunks); }

// Exclusive prefix of per-chunk counts; returns the total.
int64_t exclusive_scan(std::vector<int64_t>& v) {
  int64_t acc = 0;
  for (auto& c : v) {
    const int64_t t = c;
    c = acc;
    acc += t;
  }
  return acc;
}

// x[mask] = value; mask expanded to x's shape.
void masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  // The value's bytes in x's dtype; the fill loop then moves bytes only.
  alignas(16) unsigned char bytes[16];
  dispatch<kAllSet>(x.dtype(), "masked_fill_", [&]<typename T>() {
    const T v = value.to<T>();
    std::memcpy(bytes, &v, sizeof(T));
  });
  const Tensor* ops[2] = {&x, &mask};
  const StridedLoop loop = StridedLoop::make(x.shape(), ops);
  dispatch_size(x.itemsize(), [&]<typename U>() {
    U v;
    std::memcpy(&v, bytes, sizeof(U));
    for_each(loop, kElementwiseGrain, [&](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        if (p[1][i * s[1]]) std::memcpy(p[0] + i * s[0], &v, sizeof(U));
    });
  });
}

// The elements of x (expanded) where mask (expanded to x's shape) is true: [N].
Tensor masked_select(const Tensor& xe, const Tensor& mask) {
  const Shape shape = xe.sizes();
  const int64_t n = xe.numel();
  const Tensor* ops[2] = {&mask, &xe};
  const StridedLoop loop = StridedLoop::make(shape, ops);
  const int64_t chunks = chunk_count(n);
  auto bounds = [&](int64_t c) {
    return std::pair(chunk_start(n, c, chunks), chunk_start(n, c + 1, chunks));
  };
  std::vector<int64_t> start(size_t(chunks), 0);
  parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      auto [b, e] = bounds(c);
      int64_t cnt = 0;
      for_each_range(loop, b, e, [&](char** p, const int64_t* s, int64_t m) {
        for (int64_t i = 0; i < m; ++i) cnt += p[0][i * s[0]] != 0;
      });
      start[size_t(c)] = cnt;
    }
  });
  const int64_t total = exclusive_scan(start);
  Tensor out = empty({total}, xe.dtype(), xe.device());  // on the inputs' device, as every output
  if (total == 0) return out;
  char* o = static_cast<char*>(out.data_ptr());
  dispatch_size(xe.itemsize(), [&]<typename U>() {
    parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        auto [b, e] = bounds(c);
        char* w = o + start[size_t(c)] * int64_t(sizeof(U));
        for_each_range(loop, b, e, [&](char** p, const int64_t* s, int64_t m) {
          for (int64_t i = 0; i < m; ++i) {
            if (p[0][i * s[0]]) {
              std::memcpy(w, p[1] + i * s[1], sizeof(U));
              w += sizeof(U);
            }
          }
        });
      }
    });
  });
  return out;
}

// int64 [N, x.dim()]: the coordinates of x's non-zero elements, row-major.
Tensor nonzero(const Tensor& x) {
  const int64_t n = x.numel();
  const int nd = x.dim();
  const int64_t chunks = chunk_count(n);
  auto bounds = [&](int64_t c) {
    return std::pair(chunk_start(n, c, chunks), chunk_start(n, c + 1, chunks));
  };
  std::vector<int64_t> start(size_t(chunks), 0);
  const Shape sh = x.sizes(), st = x.stride_vec();
  Tensor out;
  dispatch<kAllSet>(x.dtype(), "nonzero", [&]<typename T>() {
    const T* base = static_cast<const T*>(x.data_ptr());
    // Walks [b, e) in row-major order with a coordinate odometer, calling
    // fn(coords, value) per element.
    auto walk = [&](int64_t b, int64_t e, auto&& fn) {
      int64_t coord[kMaxDims] = {0};
      int64_t rem = b, off = 0;
      for (int d = nd - 1; d >= 0; --d) {
        coord[d] = rem % sh[d];
        rem /= sh[d];
        off += coord[d] * st[d];
      }
      for (int64_t i = b; i < e; ++i) {
        fn(coord, base[off]);
        for (int d = nd - 1; d >= 0; --d) {
          off += st[d];
          if (++coord[d] < sh[d]) break;
          off -= coord[d] * st[d];
          coord[d] = 0;
        }
      }
    };
    parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        auto [b, e] = bounds(c);
        int64_t cnt = 0;
        walk(b, e, [&](const int64_t*, T v) { cnt += cast<bool>(v); });
        start[size_t(c)] = cnt;
      }
    });
    const int64_t total = exclusive_scan(start);
    out = empty({total, nd}, DType::Int64, x.device());
    int64_t* o = static_cast<int64_t*>(out.data_ptr());
    parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        auto [b, e] = bounds(c);
        int64_t* w = o + start[size_t(c)] * nd;
        walk(b, e, [&](const int64_t* coord, T v) {
          if (cast<bool>(v)) {
            for (int d = 0; d < nd; ++d) *w++ = coord[d];
          }
        });
      }
    });
  });
  return out;
}

}  // namespace

void register_index_mask_kernels() {
  ops::masked_fill.set_kernel(DeviceKind::CPU, masked_fill);
  ops::masked_select.set_kernel(DeviceKind::CPU, masked_select);
  ops::nonzero.set_kernel(DeviceKind::CPU, nonzero);
}

}  // namespace kiln::cpu
