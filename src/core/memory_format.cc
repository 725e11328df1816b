// Memory formats (kiln/memory_format.h): channels-last strides and the rules
// that recognise them, dense layouts that follow an input's dims order, and the
// Tensor copies that take a memory format.
#include "kiln/memory_format.h"

#include <algorithm>
#include <numeric>

#include "core/dense_layout.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln {

namespace {

// The dims of a channels-last shape from the fastest-varying to the slowest:
// C, then the spatial dims from last to first, then N.
std::span<const int> channels_last_order(size_t ndim) {
  static constexpr int k2d[] = {1, 3, 2, 0};
  static constexpr int k3d[] = {1, 4, 3, 2, 0};
  return ndim == 4 ? std::span<const int>(k2d) : std::span<const int>(k3d);
}

void check_rank(std::span<const int64_t> shape, MemoryFormat f, const char* op) {
  const size_t want = f == MemoryFormat::ChannelsLast ? 4 : 5;
  if (shape.size() != want)
    throw ValueError(std::string("[") + op + "] required rank " + std::to_string(want) + " tensor to use " +
                     memory_format_name(f) + " format, got shape " + shape_to_string(shape));
}

// torch's channels-last contiguity: the dims in channels-last order step by
// the product of the sizes before them; size-1 dims are skipped.
bool channels_last_contiguous(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  int64_t expected = 1;
  for (int d : channels_last_order(sizes.size())) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

bool channels_last_strides(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  if (strides[1] == 0) return false;  // no channel stride to order by: NCHW by default
  int64_t min = 0;
  for (int d : channels_last_order(sizes.size())) {
    if (sizes[d] == 0 || strides[d] < min) return false;
    // N's stride equal to C's ([N, 1, 1, 1]-like: strides that read either
    // way) falls back to contiguous.
    if (d == 0 && min == strides[1]) return false;
    // Counting the size keeps a size-1 dim from matching a stride it merely
    // shares ([1, C, 1, W] transposed is not channels last).
    min = strides[d];
    if (sizes[d] > 1) min *= sizes[d];
  }
  return true;
}

}  // namespace

const char* memory_format_name(MemoryFormat f) {
  switch (f) {
    case MemoryFormat::Contiguous:
      return "contiguous_format";
    case MemoryFormat::ChannelsLast:
      return "channels_last";
    case MemoryFormat::ChannelsLast3d:
      return "channels_last_3d";
    case MemoryFormat::Preserve:
      return "preserve_format";
  }
  return "unknown_format";
}

Shape memory_format_strides(std::span<const int64_t> shape, MemoryFormat f, const char* op) {
  switch (f) {
    case MemoryFormat::Contiguous:
      return contiguous_strides(shape);
    case MemoryFormat::Preserve:
      throw ValueError(std::string("[") + op + "] unsupported memory format preserve_format (shape " +
                       shape_to_string(shape) + "): it needs a tensor to preserve");
    case MemoryFormat::ChannelsLast:
    case MemoryFormat::ChannelsLast3d:
      break;
  }
  check_rank(shape, f, op);
  shape_numel(shape, op);  // sizes >= 0 and a product that fits, so every stride does
  // As torch: products of the raw sizes (a size-0 dim zeroes the strides above it).
  Shape strides(shape.size());
  int64_t s = 1;
  for (int d : channels_last_order(shape.size())) {
    strides[d] = s;
    s *= shape[d];
  }
  return strides;
}

bool is_channels_last_strides_2d(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  return sizes.size() == 4 && strides.size() == 4 && channels_last_strides(sizes, strides);
}
bool is_channels_last_strides_3d(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  return sizes.size() == 5 && strides.size() == 5 && channels_last_strides(sizes, strides);
}

MemoryFormat suggest_memory_format(const Tensor& t, bool exact_match) {
  for (MemoryFormat f : {MemoryFormat::ChannelsLast, MemoryFormat::ChannelsLast3d}) {
    const bool like = f == MemoryFormat::ChannelsLast ? is_channels_last_strides_2d(t.shape(), t.strides())
                                                      : is_channels_last_strides_3d(t.shape(), t.strides());
    if (!like) continue;
    if (!exact_match || std::ranges::equal(memory_format_strides(t.shape(), f), t.strides())) return f;
    return MemoryFormat::Contiguous;
  }
  return MemoryFormat::Contiguous;
}

bool is_non_overlapping_and_dense(const Tensor& t) {
  const int n = t.dim();
  std::vector<int> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  // Dims of size < 2 say nothing about the layout: sort them last.
  std::sort(perm.begin(), perm.end(), [&](int a, int b) {
    if (t.shape()[a] < 2) return false;
    if (t.shape()[b] < 2) return true;
    return t.strides()[a] < t.strides()[b];
  });
  int64_t expected = 1;
  for (int d : perm) {
    if (t.shape()[d] < 2) return true;
    if (t.strides()[d] != expected) return false;
    expected *= t.shape()[d];
  }
  return true;
}

bool same_dense_layout(const Tensor& a, const Tensor& b) {
  if (a.is_contiguous() && b.is_contiguous()) return true;
  if (a.sizes() != b.sizes()) return false;
  for (int d = 0; d < a.dim(); ++d)  // a size-1 dim's stride places nothing
    if (a.size(d) > 1 && a.stride(d) != b.stride(d)) return false;
  return is_non_overlapping_and_dense(a);
}

Shape dense_strides_following(std::span<const int64_t> shape, std::initializer_list<const Tensor*> inputs) {
  const int n = int(shape.size());
  // Each input's strides broadcast to shape: 0 for a dim it broadcasts over.
  std::vector<Shape> strides;
  for (const Tensor* t : inputs) {
    if (!t || !t->defined() || t->dim() == 0) continue;
    Shape s(size_t(n), 0);
    const int lead = n - t->dim();
    for (int d = std::max(lead, 0); d < n; ++d) {
      const int64_t size = t->shape()[d - lead];
      s[d] = size == 1 && shape[d] != 1 ? 0 : t->strides()[d - lead];
    }
    strides.push_back(std::move(s));
  }
  // > 0 when dim d0 is stepped through more slowly than d1 (belongs outside it).
  auto outer = [&](int d0, int d1) {
    for (const Shape& s : strides) {
      if (s[d0] == 0 || s[d1] == 0) continue;  // broadcast: ask the next input
      if (s[d0] != s[d1]) return s[d0] < s[d1] ? -1 : 1;
      if (shape[d0] > shape[d1]) return 1;  // equal strides: the larger dim outside
    }
    return 0;
  };
  // perm[0] is the innermost dim; a stable insertion sort from row-major order.
  std::vector<int> perm(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) perm[i] = n - 1 - i;
  for (int i = 1; i < n; ++i) {
    int d1 = i;
    for (int d0 = i - 1; d0 >= 0; --d0) {
      const int c = outer(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  Shape out(static_cast<size_t>(n));
  int64_t step = 1;
  for (int d : perm) {
    out[d] = step;
    step *= std::max<int64_t>(shape[d], 1);
  }
  return out;
}

Tensor empty_following(const Shape& shape, DType dtype, Device device,
                       std::initializer_list<const Tensor*> inputs) {
  bool contiguous = true;
  for (const Tensor* t : inputs)
    if (t && t->defined() && !t->is_contiguous()) contiguous = false;
  if (contiguous) return empty(shape, dtype, device);
  // As torch's TensorIterator: inputs of the output's shape that are all
  // channels last (then: all dense with one set of strides) give that layout;
  // otherwise the dims' order the inputs agree on.
  std::vector<const Tensor*> ts;
  bool same_shape = true;
  for (const Tensor* t : inputs) {
    if (!t || !t->defined() || t->dim() == 0) continue;
    ts.push_back(t);
    same_shape = same_shape && std::ranges::equal(t->shape(), shape);
  }
  if (same_shape && !ts.empty()) {
    for (MemoryFormat f : {MemoryFormat::ChannelsLast, MemoryFormat::ChannelsLast3d})
      if (std::ranges::all_of(ts, [f](const Tensor* t) { return is_contiguous(*t, f); }))
        return empty(shape, dtype, device, f);
    if (std::ranges::all_of(ts, [&](const Tensor* t) {
          return std::ranges::equal(t->strides(), ts[0]->strides()) && is_non_overlapping_and_dense(*t);
        }))
      return empty_strided(shape, ts[0]->stride_vec(), dtype, device);
  }
  shape_numel(shape, "empty");  // the strides below then fit int64
  const Shape strides = dense_strides_following(shape, inputs);
  if (strides == contiguous_strides(shape)) return empty(shape, dtype, device);
  return empty_strided(shape, strides, dtype, device);
}

// ---- factories ------------------------------------------------------------------

Tensor empty(const Shape& shape, DType dtype, Device device, MemoryFormat f) {
  if (f == MemoryFormat::Contiguous) return empty(shape, dtype, device);
  return empty_strided(shape, memory_format_strides(shape, f, "empty"), dtype, device);
}

Tensor empty_like(const Tensor& t, DType dtype, Device device, MemoryFormat f) {
  if (f != MemoryFormat::Preserve) {
    if (f != MemoryFormat::Contiguous) check_rank(t.shape(), f, "empty_like");
    return empty(t.sizes(), dtype, device, f);
  }
  // A dense t keeps its very strides (size-1 dims' included, as torch).
  if (is_non_overlapping_and_dense(t)) {
    if (t.is_contiguous() && std::ranges::equal(t.strides(), contiguous_strides(t.shape())))
      return empty(t.sizes(), dtype, device);
    return empty_strided(t.sizes(), t.stride_vec(), dtype, device);
  }
  return empty_following(t.sizes(), dtype, device, {&t});
}

Tensor empty_like(const Tensor& t, MemoryFormat f) { return empty_like(t, t.dtype(), t.device(), f); }
Tensor empty_like(const Tensor& t) { return empty_like(t, t.dtype(), t.device(), MemoryFormat::Preserve); }

Tensor zeros_like(const Tensor& t, MemoryFormat f) { return empty_like(t, f).fill_(Scalar(int64_t(0))); }
Tensor zeros_like(const Tensor& t) { return zeros_like(t, MemoryFormat::Preserve); }

// ---- copies with a memory format -------------------------------------------------

bool is_contiguous(const Tensor& t, MemoryFormat f) {
  switch (f) {
    case MemoryFormat::ChannelsLast:
      return t.dim() == 4 && channels_last_contiguous(t.shape(), t.strides());
    case MemoryFormat::ChannelsLast3d:
      return t.dim() == 5 && channels_last_contiguous(t.shape(), t.strides());
    case MemoryFormat::Contiguous:
    case MemoryFormat::Preserve:
      break;
  }
  return t.is_contiguous();
}

Tensor contiguous(const Tensor& t, MemoryFormat f) {
  if (is_contiguous(t, f)) return t;
  if (f == MemoryFormat::Preserve)
    throw ValueError("[contiguous] preserve memory format is unsupported by the contiguous operator (shape " +
                     t.shape_str() + ")");
  return clone(t, f);
}

Tensor clone(const Tensor& t, MemoryFormat f) {
  if (f != MemoryFormat::Preserve && f != MemoryFormat::Contiguous) check_rank(t.shape(), f, "clone");
  Tensor out = empty_like(t, t.dtype(), t.device(), f);
  out.copy_(t);
  return out;
}

Tensor to(const Tensor& t, DType dtype, MemoryFormat f) {
  if (dtype == t.dtype() && (f == MemoryFormat::Preserve || is_contiguous(t, f))) return t;
  if (f != MemoryFormat::Preserve && f != MemoryFormat::Contiguous) check_rank(t.shape(), f, "to");
  Tensor out = empty_like(t, dtype, t.device(), f);
  out.copy_(t);
  return out;
}

// The members keep torch's default, preserve_format.
Tensor Tensor::clone() const { return kiln::clone(*this, MemoryFormat::Preserve); }
Tensor Tensor::to(DType dtype) const { return kiln::to(*this, dtype, MemoryFormat::Preserve); }

}  // namespace kiln
