// KVCache: per-layer K/V storage with append and prefix views.
//
// Why a reserved mapping rather than zeroed tensors or growing buffers: the
// attention kernels read a layer's keys as a [kv_heads, L, head_dim] view
// whose head stride is max_len * head_dim, so the layout must not change as
// the cache fills. Reallocating on growth would change that stride (a copy of
// the whole cache at every growth, and twice the memory while copying); pages
// of positions would need a gather before attention. An anonymous
// MAP_NORESERVE mapping of all max_len positions keeps one fixed layout, reads
// zeros where nothing was written, and the OS commits memory only for the
// pages that positions actually touch: a context of millions of tokens costs
// address space, not memory or time, until it is used. Decoding stays free of
// allocations (a new page is a page fault, once per page of positions).
#include "kiln/kv_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "kiln/error.h"
#include "kiln/sysinfo.h"

namespace kiln {

int64_t KVCache::bytes_for(int64_t layers, int64_t batch, int64_t kv_heads, int64_t max_len, int64_t head_dim,
                           DType dtype) {
  int64_t n = 2 * int64_t(itemsize(dtype));  // keys and values
  for (int64_t f : {layers, batch, kv_heads, max_len, head_dim})
    if (f < 0 || __builtin_mul_overflow(n, f, &n)) return -1;
  return n;
}

KVCache::KVCache(int64_t layers, int64_t batch, int64_t kv_heads, int64_t max_len, int64_t head_dim,
                 DType dtype)
    : max_len_(max_len), dtype_(dtype) {
  KILN_CHECK(layers >= 0 && batch >= 1 && kv_heads >= 1 && max_len >= 0 && head_dim >= 1, ValueError,
             "[KVCache] bad sizes: layers " << layers << ", batch " << batch << ", kv_heads " << kv_heads
                                            << ", max_len " << max_len << ", head_dim " << head_dim);
  KILN_CHECK(dtype == DType::Float32 || dtype == DType::BFloat16 || dtype == DType::Float16, TypeError,
             "[KVCache] storage dtype must be float32, bfloat16 or float16, got " << name(dtype));
  const int64_t bytes = bytes_for(layers, batch, kv_heads, max_len, head_dim, dtype);
  KILN_CHECK(bytes >= 0, ValueError,
             "[KVCache] " << layers << " layers x 2 x batch " << batch << " x kv_heads " << kv_heads
                          << " x max_len " << max_len << " x head_dim " << head_dim << " x "
                          << itemsize(dtype) << " bytes (" << name(dtype) << ") overflows 64 bits");
  capacity_bytes_ = bytes;
  const Shape shape = {batch, kv_heads, max_len, head_dim};
  if (bytes == 0) {  // no layers or no positions: empty views, nothing to map
    for (int64_t i = 0; i < layers; ++i) {
      k_.push_back(empty(shape, dtype));
      v_.push_back(empty(shape, dtype));
    }
  } else {
    void* p = ::mmap(nullptr, size_t(bytes), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    KILN_CHECK(p != MAP_FAILED, Error,
               "[KVCache] cannot reserve " << sys::format_bytes(bytes) << " of address space for " << layers
                                           << " layers x " << max_len
                                           << " positions: " << std::strerror(errno));
    auto storage = std::make_shared<Storage>(p, size_t(bytes), [p, bytes] { ::munmap(p, size_t(bytes)); });
    const Shape strides = contiguous_strides(shape);
    const int64_t per = batch * kv_heads * max_len * head_dim;  // elements of one layer's keys
    for (int64_t i = 0; i < layers; ++i) {
      k_.emplace_back(storage, dtype, shape, strides, 2 * i * per);
      v_.emplace_back(storage, dtype, shape, strides, (2 * i + 1) * per);
    }
  }
  len_.assign(size_t(layers), 0);
}

int64_t KVCache::check_layer(int64_t layer) const {
  KILN_CHECK(layer >= 0 && layer < layers(), IndexError,
             "[KVCache] layer " << layer << " out of range for " << layers() << " layers");
  return layer;
}

int64_t KVCache::length(int64_t layer) const { return len_[size_t(check_layer(layer))]; }

int64_t KVCache::append(int64_t layer, const Tensor& k_in, const Tensor& v_in) {
  check_layer(layer);
  const Tensor& store = k_[size_t(layer)];
  auto as4 = [&](const Tensor& t, const char* what) {
    const Tensor x = t.dim() == 3 ? t.unsqueeze(0) : t;
    KILN_CHECK(x.dim() == 4 && x.size(0) == store.size(0) && x.size(1) == store.size(1) &&
                   x.size(3) == store.size(3),
               ValueError,
               "[KVCache] " << what << " has shape " << t.shape_str() << ", expected [" << store.size(0)
                            << ", " << store.size(1) << ", T, " << store.size(3) << "]");
    return x;
  };
  const Tensor k = as4(k_in, "key"), v = as4(v_in, "value");
  KILN_CHECK(k.size(2) == v.size(2), ValueError,
             "[KVCache] key and value lengths differ: " << k_in.shape_str() << " vs " << v_in.shape_str());
  const int64_t L = len_[size_t(layer)], T = k.size(2);
  KILN_CHECK(T <= max_len_ - L, ValueError,
             "[KVCache] appending " << T << " positions to " << L << " exceeds max_len " << max_len_);
  if (T > 0) {
    k_[size_t(layer)].narrow(2, L, T).copy_(k);
    v_[size_t(layer)].narrow(2, L, T).copy_(v);
  }
  len_[size_t(layer)] = L + T;
  return L + T;
}

Tensor KVCache::keys(int64_t layer, int64_t L) const {
  const int64_t n = length(layer);
  KILN_CHECK(L <= n, ValueError, "[KVCache] asked for " << L << " positions, " << n << " filled");
  return k_[size_t(layer)].narrow(2, 0, L < 0 ? n : L);
}

Tensor KVCache::values(int64_t layer, int64_t L) const {
  const int64_t n = length(layer);
  KILN_CHECK(L <= n, ValueError, "[KVCache] asked for " << L << " positions, " << n << " filled");
  return v_[size_t(layer)].narrow(2, 0, L < 0 ? n : L);
}

void KVCache::truncate(int64_t L) {
  KILN_CHECK(L >= 0, ValueError, "[KVCache] truncate length must be >= 0, got " << L);
  for (auto& n : len_) n = std::min(n, L);
}

}  // namespace kiln
