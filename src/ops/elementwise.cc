#include "ops/elementwise.h"

#include <algorithm>

namespace kiln {

Shape broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      throw ValueError(std::string("[") + op + "] the size of tensor a (" + std::to_string(da) +
                       ") must match the size of tensor b (" + std::to_string(db) +
                       ") at non-singleton dimension " + std::to_string(i) + "; shapes " +
                       shape_to_string(a) + " and " + shape_to_string(b));
    }
  }
  return out;
}

}  // namespace kiln
