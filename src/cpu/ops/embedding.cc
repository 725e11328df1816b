// CPU kernel of embedding (ops/registry/nn.h): rows of a [V, H] table gathered
// at integer indices. FP8 tables are widened with the vectorized converter
// and scaled once per row.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/convert.h"
#include "cpu/ops/nn.h"
#include "kiln/error.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

// Indices as int64 values (any integer dtype), checked against V.
std::vector<int64_t> read_indices(const Tensor& idx, int64_t V) {
  std::vector<int64_t> v(static_cast<size_t>(idx.numel()));
  const Tensor c = idx.contiguous();
  dispatch<kIntSet>(c.dtype(), "embedding", [&]<typename I>() {
    const I* p = c.data<I>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = int64_t(p[i]);
  });
  for (int64_t i : v)
    KILN_CHECK(i >= 0 && i < V, IndexError,
               "[embedding] index " << i << " is out of range for a table of " << V << " rows");
  return v;
}

void convert_row(const void* src, DType from, void* dst, DType to, int64_t n) {
  if (from == to) {
    std::memcpy(dst, src, size_t(n) * itemsize(from));
  } else if (!convert_contiguous(src, from, dst, to, n)) {
    // Pairs without a vector kernel (none among the float dtypes used here).
    Tensor d = from_blob(dst, {n}, {1}, to);
    d.copy_(from_blob(const_cast<void*>(src), {n}, {1}, from));
  }
}

void embedding(const Tensor& indices, const Tensor& weight, const Tensor& row_scale, const Tensor& out) {
  const DType wt = weight.dtype();
  const int64_t V = weight.size(0), H = weight.size(1);
  const std::vector<int64_t> idx = read_indices(indices, V);
  if (out.numel() == 0) return;
  const Tensor w = weight.stride(1) == 1 ? weight : weight.contiguous();
  const char* base = static_cast<const char*>(w.data_ptr());
  const size_t wrow = size_t(w.stride(0)) * itemsize(wt);
  char* o = static_cast<char*>(out.data_ptr());
  const size_t orow = size_t(H) * itemsize(out.dtype());
  const float* sp = row_scale.defined() ? row_scale.data<float>() : nullptr;
  const DType od = out.dtype();
  parallel_for(0, int64_t(idx.size()), std::max<int64_t>(1, 8192 / std::max<int64_t>(H, 1)),
               [&](int64_t b, int64_t e) {
                 std::vector<float> buf;
                 for (int64_t r = b; r < e; ++r) {
                   const int64_t v = idx[size_t(r)];
                   const char* src = base + size_t(v) * wrow;
                   const float s = sp ? sp[v] : 1.0f;
                   if (s == 1.0f) {
                     convert_row(src, wt, o + size_t(r) * orow, od, H);
                   } else if (od == DType::Float32) {
                     float* dst = reinterpret_cast<float*>(o + size_t(r) * orow);
                     convert_row(src, wt, dst, DType::Float32, H);
                     for (int64_t j = 0; j < H; ++j) dst[j] *= s;
                   } else {
                     buf.resize(size_t(H));
                     convert_row(src, wt, buf.data(), DType::Float32, H);
                     for (int64_t j = 0; j < H; ++j) buf[size_t(j)] *= s;
                     convert_row(buf.data(), DType::Float32, o + size_t(r) * orow, od, H);
                   }
                 }
               });
}

}  // namespace

void register_embedding_kernels() { ops::embedding.set_kernel(DeviceKind::CPU, embedding); }

}  // namespace kiln::cpu
