// Input shapes of a linear system A X = B (or X A = B when !left) for the
// linalg op table entries: A [.., n, n], B [.., n, m] per shape class.
#pragma once

#include <utility>

#include "op_table/table.h"

namespace op_table {

inline std::function<std::vector<InputSpec>(ShapeClass)> system_shapes(int64_t n, int64_t m, bool left) {
  return [n, m, left](ShapeClass c) -> std::vector<InputSpec> {
    std::vector<InputSpec> s;
    switch (c) {
      case ShapeClass::Empty:
        s = {{{0, n, n}}, {{0, n, m}}};
        break;
      case ShapeClass::Scalar:
        s = {{{1, 1}}, {{1, 1}}};
        break;
      case ShapeClass::Odd:
        s = {{{n, n}}, {{n, m}}};
        break;
      case ShapeClass::NonContiguous:
        s = {{{2, n, n}, InputSpec::Transposed}, {{2, n, m}, InputSpec::Strided}};
        break;
      case ShapeClass::Broadcast:
        s = {{{3, n, n}, InputSpec::Expanded, {1, n, n}}, {{n, m}}};
        break;
    }
    if (!left) std::swap(s[1].shape[s[1].shape.size() - 1], s[1].shape[s[1].shape.size() - 2]);
    return s;
  };
}

}  // namespace op_table
