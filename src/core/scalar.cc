#include "kiln/scalar.h"

#include <cfloat>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

namespace kiln {
namespace {

// The largest finite value of a float dtype, and whether it has an infinity.
struct FloatRange {
  double max;
  bool has_inf;
};
FloatRange float_range(DType d) {
  switch (d) {
    case DType::Float16:
      return {65504.0, true};
    case DType::BFloat16:
      return {3.3895313892515355e38, true};
    case DType::Float8_e4m3fn:
      return {448.0, false};
    case DType::Float8_e5m2:
      return {57344.0, true};
    case DType::Float32:
    case DType::Complex64:
      return {double(FLT_MAX), true};
    default:
      return {DBL_MAX, true};
  }
}

// A real value of a float (or complex component) dtype.
bool double_fits_float(double v, DType d) {
  const FloatRange r = float_range(d);
  if (std::isnan(v)) return true;  // every kiln float dtype has a NaN
  if (std::isinf(v)) return r.has_inf;
  return std::fabs(v) <= r.max;
}

// 2^bits as a double (exact).
double pow2(int bits) { return std::ldexp(1.0, bits); }

}  // namespace

bool Scalar::fits(DType d) const {
  if (d == DType::Bool) return true;  // torch: converting to bool cannot overflow
  if (kiln::is_complex(d)) {
    if (kind_ == Kind::Complex) return double_fits_float(d_, d) && double_fits_float(imag_, d);
    return kind_ == Kind::Float ? double_fits_float(d_, d) : double_fits_float(to_double(), d);
  }
  if (kind_ == Kind::Complex && imag_ != 0) return false;
  if (kiln::is_floating(d)) return double_fits_float(to_double(), d);
  // An integer dtype: its range from the table's size and signedness.
  const int bits = int(itemsize(d)) * 8;
  const bool sgn = is_signed(d);
  if (kind_ == Kind::Float || kind_ == Kind::Complex) {
    // [lowest, max] before truncation, as torch (255.5 does not fit uint8). For 64-bit
    // dtypes max is not a double: below 2^63 / 2^64 instead.
    if (!std::isfinite(d_)) return false;
    const double lo = sgn ? -pow2(bits - 1) : 0.0;
    if (bits == 64) return d_ >= lo && d_ < pow2(sgn ? 63 : 64);
    return d_ >= lo && d_ <= (sgn ? pow2(bits - 1) : pow2(bits)) - 1;
  }
  if (above_int64_) return d == DType::UInt64;
  const int64_t v = i_;
  if (sgn) {
    if (bits == 64) return true;
    const int64_t hi = (int64_t(1) << (bits - 1)) - 1;
    return v >= -hi - 1 && v <= hi;
  }
  const uint64_t max = bits == 64 ? UINT64_MAX : (uint64_t(1) << bits) - 1;
  if (v >= 0) return uint64_t(v) <= max;
  return uint64_t(0) - uint64_t(v) <= max;  // -v, exact for INT64_MIN too
}

namespace {
// The shortest text that reads back as d, written as Python's repr writes it: an error naming
// 65519.99999999907 must not print it as 65520.
std::string shortest(double d, bool point_zero = true) {
  char buf[400];  // fixed notation of up to 1e16, or scientific
  const double a = std::abs(d);
  const bool sci = std::isfinite(d) && a != 0 && (a >= 1e16 || a < 1e-4);  // Python's switch points
  const auto r =
      std::to_chars(buf, buf + sizeof buf, d, sci ? std::chars_format::scientific : std::chars_format::fixed);
  std::string out(buf, r.ptr);
  if (point_zero && !sci && std::isfinite(d) && out.find('.') == std::string::npos)
    out += ".0";  // 100000.0; complex parts go without: (1+2j)
  return out;
}
}  // namespace

std::string Scalar::str() const {
  std::ostringstream os;
  switch (kind_) {
    case Kind::Bool:
      os << (i_ ? "True" : "False");
      break;
    case Kind::Int:
      if (above_int64_)
        os << u_;
      else
        os << i_;
      break;
    case Kind::Float:
      os << shortest(d_);
      break;
    case Kind::Complex:
      os << "(" << shortest(d_, false) << (imag_ < 0 ? "-" : "+") << shortest(std::abs(imag_), false) << "j)";
      break;
  }
  return os.str();
}

}  // namespace kiln
