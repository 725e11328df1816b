// masked_fill, masked_select, nonzero.
#include "core/cast.h"
#include "kiln/index.h"
#include "kiln/thread_pool.h"
#include "ops/elementwise.h"
#include "ops/index_common.h"

namespace kiln {
using namespace index_detail;
namespace {

void check_mask(const Tensor& mask, const char* op) {
  if (!mask.defined()) throw ValueError(std::string("[") + op + "] mask is undefined");
  if (mask.dtype() != DType::Bool)
    throw TypeError(std::string("[") + op + "] expected a bool mask, got " + name(mask.dtype()));
}

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

}  // namespace

Tensor& masked_fill_(Tensor& x, const Tensor& mask_in, const Scalar& value) {
  assert_no_internal_overlap(x, "masked_fill_");
  check_mask(mask_in, "masked_fill_");
  if (value.is_complex() && !is_complex(x.dtype()))
    throw TypeError(std::string("[masked_fill_] cannot fill ") + name(x.dtype()) + " with a complex value");
  Tensor mask;
  try {
    mask = mask_in.expand(x.sizes());
  } catch (const ValueError&) {
    throw ValueError("[masked_fill_] mask of shape " + mask_in.shape_str() + " cannot be broadcast to self " +
                     x.shape_str());
  }
  if (x.numel() == 0) return x;
  if (mask.storage() == x.storage()) mask = mask.contiguous().clone();
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
  return x;
}

Tensor& masked_fill_(Tensor& x, const Tensor& mask, const Tensor& value) {
  if (value.dim() != 0)
    throw ValueError("[masked_fill_] only supports a 0-dimensional value tensor, but got tensor with " +
                     std::to_string(value.dim()) + " dimension(s)");
  return masked_fill_(x, mask, value.item());
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  check_mask(mask, "masked_fill");
  Tensor out = x.expand(broadcast_shapes(x.shape(), mask.shape(), "masked_fill")).clone();
  return masked_fill_(out, mask, value);
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value) {
  if (value.dim() != 0)
    throw ValueError("[masked_fill] only supports a 0-dimensional value tensor, but got tensor with " +
                     std::to_string(value.dim()) + " dimension(s)");
  return masked_fill(x, mask, value.item());
}

Tensor masked_select(const Tensor& x, const Tensor& mask_in) {
  check_mask(mask_in, "masked_select");
  const Shape shape = broadcast_shapes(x.shape(), mask_in.shape(), "masked_select");
  const Tensor xe = x.expand(shape), mask = mask_in.expand(shape);
  const int64_t n = shape_numel(shape, "masked_select");
  if (n == 0) return empty({0}, x.dtype());
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
  Tensor out = empty({total}, x.dtype());
  if (total == 0) return out;
  char* o = static_cast<char*>(out.data_ptr());
  dispatch_size(x.itemsize(), [&]<typename U>() {
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

Tensor nonzero(const Tensor& x) {
  const int64_t n = x.numel();
  const int nd = x.dim();
  if (n == 0) return empty({0, nd}, DType::Int64);
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
    out = empty({total, nd}, DType::Int64);
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

}  // namespace kiln
