#include <sstream>

#include "kiln/scalar.h"

namespace kiln {

std::string Scalar::str() const {
  std::ostringstream os;
  switch (kind_) {
    case Kind::Bool: os << (i_ ? "True" : "False"); break;
    case Kind::Int: os << i_; break;
    case Kind::Float: os << d_; break;
    case Kind::Complex: os << "(" << d_ << (imag_ < 0 ? "-" : "+") << std::abs(imag_) << "j)"; break;
  }
  return os.str();
}

}  // namespace kiln
