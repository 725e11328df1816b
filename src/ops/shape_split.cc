// The split family: views of x along one dim (no copy, no kernel).
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/shape.h"

namespace kiln {
namespace {

int split_dim(const Tensor& x, int dim, const char* op) {
  KILN_CHECK(x.dim() > 0, ValueError, "[" << op << "] expects at least a 1-dimensional tensor");
  return wrap_dim(dim, x.dim(), op);
}

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::vector<Tensor> by_sizes(const Tensor& x, const std::vector<int64_t>& sizes, int d) {
  std::vector<Tensor> r;
  r.reserve(sizes.size());
  int64_t start = 0;
  for (int64_t n : sizes) {
    r.push_back(x.narrow(d, start, n));
    start += n;
  }
  return r;
}

// The numpy-style helpers: tensor_split along `d` (needs >= min_dim dims).
int nsplit_dim(const Tensor& x, const char* op, int min_dim, int d) {
  KILN_CHECK(x.dim() >= min_dim, ValueError,
             "[" << op << "] requires a tensor with at least " << min_dim << " dimension"
                 << (min_dim > 1 ? "s" : "") << ", but got a tensor with " << x.dim() << " dimensions");
  return d;
}
std::vector<Tensor> nsplit(const Tensor& x, int64_t sections, int d, const char* op) {
  KILN_CHECK(sections > 0 && x.size(d) % sections == 0, ValueError,
             "[" << op << "] attempted to split along dimension " << d << ", but the size of the dimension "
                 << x.size(d) << " is not divisible by the split_size " << sections);
  return tensor_split(x, sections, d);
}

}  // namespace

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int dim) {
  const int d = split_dim(x, dim, "split");
  const int64_t n = x.size(d);
  KILN_CHECK(split_size >= 0, ValueError,
             "[split] expects split_size be non-negative, but got split_size=" << split_size);
  KILN_CHECK(split_size > 0 || n == 0, ValueError,
             "[split] split_size can only be 0 if dimension size is 0, but got dimension size of " << n);
  const int64_t pieces = split_size == 0 ? 1 : std::max<int64_t>((n + split_size - 1) / split_size, 1);
  std::vector<Tensor> r;
  r.reserve(size_t(pieces));
  for (int64_t i = 0; i < pieces; ++i) {
    const int64_t start = i * split_size;
    r.push_back(x.narrow(d, start, std::min(split_size, n - start)));
  }
  return r;
}

std::vector<Tensor> split_with_sizes(const Tensor& x, const std::vector<int64_t>& sizes, int dim) {
  const int d = split_dim(x, dim, "split_with_sizes");
  int64_t sum = 0;
  for (int64_t s : sizes) {
    KILN_CHECK(s >= 0, ValueError,
               "[split_with_sizes] expects split_sizes have only non-negative entries, but got split_sizes="
                   << list_str(sizes));
    sum += s;
  }
  KILN_CHECK(sum == x.size(d), ValueError,
             "[split_with_sizes] expects split_sizes to sum exactly to "
                 << x.size(d) << " (input tensor's size at dimension " << d
                 << "), but got split_sizes=" << list_str(sizes));
  return by_sizes(x, sizes, d);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int dim) {
  const int d = split_dim(x, dim, "chunk");
  KILN_CHECK(chunks > 0, ValueError, "[chunk] expects `chunks` to be greater than 0, got: " << chunks);
  const int64_t n = x.size(d);
  const int64_t size = n / chunks + (n % chunks != 0);
  // A zero-size dim gives `chunks` empty pieces, as torch.
  if (n == 0) return by_sizes(x, std::vector<int64_t>(size_t(chunks), 0), d);
  return split(x, size, d);
}

std::vector<Tensor> tensor_split(const Tensor& x, int64_t sections, int dim) {
  KILN_CHECK(x.dim() > 0, ValueError,
             "[tensor_split] expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
  const int d = wrap_dim(dim, x.dim(), "tensor_split");
  KILN_CHECK(sections > 0, ValueError,
             "[tensor_split] number of sections must be larger than 0, got " << sections);
  const int64_t n = x.size(d), base = n / sections, extra = n % sections;
  std::vector<int64_t> sizes(size_t(sections), base);
  for (int64_t i = 0; i < extra; ++i) ++sizes[size_t(i)];
  return by_sizes(x, sizes, d);
}

std::vector<Tensor> tensor_split(const Tensor& x, const std::vector<int64_t>& indices, int dim) {
  KILN_CHECK(x.dim() > 0, ValueError,
             "[tensor_split] expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
  const int d = wrap_dim(dim, x.dim(), "tensor_split");
  std::vector<Tensor> r;
  r.reserve(indices.size() + 1);
  int64_t start = 0;
  for (int64_t end : indices) {
    r.push_back(x.slice(d, start, end));
    start = end;
  }
  r.push_back(x.slice(d, start, x.size(d)));
  return r;
}

std::vector<Tensor> unbind(const Tensor& x, int dim) {
  KILN_CHECK(x.dim() > 0, IndexError,
             "[unbind] dimension specified as " << dim << " but tensor has no dimensions");
  const int d = wrap_dim(dim, x.dim(), "unbind");
  std::vector<Tensor> r;
  r.reserve(size_t(x.size(d)));
  for (int64_t i = 0; i < x.size(d); ++i) r.push_back(x.select(d, i));
  return r;
}

std::vector<Tensor> hsplit(const Tensor& x, int64_t sections) {
  return nsplit(x, sections, nsplit_dim(x, "hsplit", 1, x.dim() > 1 ? 1 : 0), "hsplit");
}
std::vector<Tensor> hsplit(const Tensor& x, const std::vector<int64_t>& indices) {
  return tensor_split(x, indices, nsplit_dim(x, "hsplit", 1, x.dim() > 1 ? 1 : 0));
}
std::vector<Tensor> vsplit(const Tensor& x, int64_t sections) {
  return nsplit(x, sections, nsplit_dim(x, "vsplit", 2, 0), "vsplit");
}
std::vector<Tensor> vsplit(const Tensor& x, const std::vector<int64_t>& indices) {
  return tensor_split(x, indices, nsplit_dim(x, "vsplit", 2, 0));
}
std::vector<Tensor> dsplit(const Tensor& x, int64_t sections) {
  return nsplit(x, sections, nsplit_dim(x, "dsplit", 3, 2), "dsplit");
}
std::vector<Tensor> dsplit(const Tensor& x, const std::vector<int64_t>& indices) {
  return tensor_split(x, indices, nsplit_dim(x, "dsplit", 3, 2));
}

}  // namespace kiln
