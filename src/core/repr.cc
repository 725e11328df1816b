// Tensor::repr in PyTorch's style: tensor([[1., 2.], [3., 4.]], dtype=...).
#include <cstdio>
#include <sstream>

#include "kiln/tensor.h"

namespace kiln {
namespace {

std::string format_element(const Tensor& t) {
  const Scalar s = t.item();
  char buf[64];
  switch (s.kind()) {
    case Scalar::Kind::Bool: return s.to<bool>() ? "True" : "False";
    case Scalar::Kind::Int: return std::to_string(s.to_int64());
    case Scalar::Kind::Float: {
      const double v = s.to_double();
      if (std::isnan(v)) return "nan";
      if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
      if (v == std::floor(v) && std::fabs(v) < 1e16) {
        std::snprintf(buf, sizeof buf, "%.0f.", v);
      } else {
        std::snprintf(buf, sizeof buf, "%.4g", v);
      }
      return buf;
    }
    case Scalar::Kind::Complex: {
      const complex128 c = s.to_complex();
      std::snprintf(buf, sizeof buf, "%.4g%+.4gj", c.real(), c.imag());
      return buf;
    }
  }
  return "?";
}

void print_rec(std::ostringstream& os, const Tensor& t, int indent) {
  if (t.dim() == 0) {
    os << format_element(t);
    return;
  }
  constexpr int64_t kEdge = 3, kMaxFull = 1000;
  const int64_t n = t.size(0);
  const bool summarize = t.numel() > kMaxFull && n > 2 * kEdge;
  os << "[";
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && i == kEdge) {
      os << (t.dim() > 1 ? "...,\n" + std::string(indent + 1, ' ') : "..., ");
      i = n - kEdge;
    }
    print_rec(os, t.select(0, i), indent + 1);
    if (i + 1 < n) os << (t.dim() > 1 ? ",\n" + std::string(indent + 1, ' ') : ", ");
  }
  os << "]";
}

}  // namespace

std::string Tensor::repr() const {
  if (!defined()) return "tensor(<undefined>)";
  std::ostringstream os;
  os << "tensor(";
  if (numel() == 0 && dim() > 0) {
    os << "[], size=" << shape_str();
  } else {
    print_rec(os, *this, 7);
  }
  if (dtype_ != DType::Float32 && dtype_ != DType::Int64 && dtype_ != DType::Bool)
    os << ", dtype=kiln." << name(dtype_);
  os << ")";
  return os.str();
}

}  // namespace kiln
