// The table-driven op test (cf. ggml's tests/test-backend-ops.cpp): one entry
// per registered op (ops/registry/all.h) says how to call its front-end, which
// dtypes it takes, which input shapes each shape class means for it, and an
// independent float64 oracle (complex double for complex inputs; FP8 inputs
// decoded from their bits by the formats' definitions). op_table_test.cc walks every entry x dtype x
// shape class x compiled device and fails for a registered op without an
// entry, so a new device kernel is tested by the entries that already exist.
// Entries live in op_table/<family>.cc, registered with KILN_OP_TABLE.
#pragma once

#include <complex>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace op_table {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;
using cdouble = std::complex<double>;

enum class ShapeClass { Empty, Scalar, Odd, NonContiguous, Broadcast };
inline constexpr ShapeClass kShapeClasses[] = {ShapeClass::Empty, ShapeClass::Scalar, ShapeClass::Odd,
                                               ShapeClass::NonContiguous, ShapeClass::Broadcast};
const char* name(ShapeClass c);

// One input tensor's recipe: its logical shape, and how it is laid out. A
// transposed input is made as the reverse shape, contiguous, then transposed
// (strides not innermost); an expanded one is `base` expanded to `shape`.
struct InputSpec {
  Shape shape;
  enum Layout { Contiguous, Transposed, Strided, Expanded } layout = Contiguous;
  Shape base = {};  // Expanded: the shape that is expanded (size-1 dims broadcast)
  // An integer input (an index tensor, a bool mask): values drawn uniformly
  // from [lo, hi) and held in `dtype`, whatever the walk's dtype.
  struct Ints {
    DType dtype;
    int64_t lo, hi;
  };
  std::optional<Ints> ints = std::nullopt;
  // A float input held in this dtype whatever the walk's dtype (a float32
  // scale beside FP8 operands).
  std::optional<DType> held = std::nullopt;
};

// The inputs of one case, as float64 values (what the input dtype holds, in
// row-major order) beside the tensors the front-end gets. A complex input's
// values are its real parts; cvalues holds every input as complex (imaginary
// part 0 for a real input).
struct Inputs {
  std::vector<Tensor> tensors;
  std::vector<std::vector<double>> values;
  std::vector<std::vector<cdouble>> cvalues;
  std::vector<Shape> shapes;
};

using Oracle = std::function<std::vector<double>(const Inputs&, const Tensor&)>;
using ComplexOracle = std::function<std::vector<cdouble>(const Inputs&, const Tensor&)>;

struct Entry {
  std::string op;              // the registered op this entry covers
  std::vector<DType> dtypes;   // the input dtype of each walk
  double lo = -4.0, hi = 4.0;  // inputs drawn uniformly from [lo, hi]
  // The input specs of a shape class; empty: the class does not apply.
  std::function<std::vector<InputSpec>(ShapeClass)> shapes;
  // Calls the public front-end.
  std::function<Tensor(const std::vector<Tensor>&)> call;
  // The expected output, float64, row-major, computed from in.values alone
  // (never through kiln); `out` is kiln's result, for its shape and dtype.
  Oracle oracle;
  // The oracle of the complex dtypes' walks, from in.cvalues, in complex
  // double (a real output is compared with the real parts, whose imaginary
  // parts must be 0). An entry lists complex dtypes only with one.
  ComplexOracle complex_oracle;
  // Tolerance: |got - want| <= ulps * eps(out dtype) * max(|want|, floor)
  // (complex: the modulus of the difference; eps of the component type).
  double ulps = 4.0;
  double floor = 1.0;
  // Values (NaN, +-inf, +-0, ...) put at every 7th element of each float
  // input, from index 3, so non-finite and edge inputs are walked too (not
  // in complex walks; in FP8 walks those the format holds).
  std::vector<double> specials;
  // Optional: adjusts the drawn values of float input `input` (logical shape
  // `shape`, row-major) before they are laid out, e.g. to make matrices
  // diagonally dominant.
  std::function<void(size_t input, const Shape& shape, std::vector<double>& values)> condition;
  // The same for the complex walks (else `condition` adjusts the real parts).
  std::function<void(size_t input, const Shape& shape, std::vector<cdouble>& values)> complex_condition;
  // A larger case for --perf (KILN_OP_TABLE_PERF=1), as for shapes().
  std::vector<InputSpec> perf_shapes;
  // The op reads host pointers, not tensors (the decode loop's sample_row_,
  // logits_max_): it has no device to follow, so only the CPU walk runs it.
  bool host_only = false;
};

std::vector<Entry>& entries();
bool add_entries(std::vector<Entry> es);
#define KILN_OP_TABLE_CAT2(a, b) a##b
#define KILN_OP_TABLE_CAT(a, b) KILN_OP_TABLE_CAT2(a, b)
#define KILN_OP_TABLE(...) \
  static const bool KILN_OP_TABLE_CAT(op_table_registered_, __LINE__) = op_table::add_entries(__VA_ARGS__)

// ---- helpers for writing entries -------------------------------------------

// Unary elementwise shapes: [0, 5], [], [5, 37], a transposed [5, 37] and a
// [5, 37] expanded from [1, 37].
// An int64 value as an integer dtype `d` holds it (C++'s modular conversion
// for int32 and uint8), as a double.
double int_as(int64_t v, DType d);

std::vector<InputSpec> unary_shapes(ShapeClass c);
// The oracle of an elementwise op: f on each element, in float64.
std::function<std::vector<double>(const Inputs&, const Tensor&)> elementwise(double (*f)(double));
ComplexOracle elementwise(cdouble (*f)(cdouble));

// Binary elementwise shapes: [0, 5] with [5], [] with [], [5, 37] twice, a
// transposed with a strided [5, 37], and [5, 1] with [1, 37] (broadcast to
// [5, 37]); ternary: the same with a third input ([5, 37] or [37]).
std::vector<InputSpec> binary_shapes(ShapeClass c);
std::vector<InputSpec> ternary_shapes(ShapeClass c);
// The oracle of an elementwise op over broadcast inputs: f on the elements the
// output index selects (torch's broadcasting, in float64), row-major over the
// broadcast shape. f also gets the output tensor (for its dtype).
using ElementFn = std::function<double(const std::vector<double>& args, const Tensor& out)>;
std::function<std::vector<double>(const Inputs&, const Tensor&)> broadcast_elementwise(ElementFn f);
using ComplexElementFn = std::function<cdouble(const std::vector<cdouble>& args)>;
ComplexOracle broadcast_elementwise(ComplexElementFn f);

// e with the complex dtypes appended to its walk, and `o` its complex oracle.
Entry with_complex(Entry e, ComplexOracle o);

// The complex oracle of an op linear over the reals in its complex inputs
// (moves, gathers, scatters, sums): `real` on the real parts plus i times
// `real` on the imaginary parts (the other inputs, indices and masks, as
// they are).
ComplexOracle by_parts(Oracle real);
// e with the complex dtypes appended to its walk, oracle by_parts(e.oracle).
Entry with_complex_by_parts(Entry e);
// e with the FP8 dtypes appended to its walk.
Entry with_fp8(Entry e);

// ---- FP8, from the formats' definitions (OCP 8-bit floating point) ----------
// float8_e4m3fn: bias 7, no infinities, S.1111.111 is NaN (max 448);
// float8_e5m2: bias 15, IEEE-like (infinities, NaNs; max 57344).
double fp8_decode(uint8_t bits, DType d);
// The finite codes of `d` whose values lie in [lo, hi], ascending by value.
std::vector<uint8_t> fp8_codes(DType d, double lo, double hi);

// The float dtypes most ops take, and the same with integers and bool.
inline const std::vector<DType> kFloats = {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16};
inline const std::vector<DType> kComplex = {DType::Complex64, DType::Complex128};
inline const std::vector<DType> kFp8 = {DType::Float8_e4m3fn, DType::Float8_e5m2};
inline const std::vector<DType> kFloatsAndInts = {DType::Float32, DType::Float64, DType::BFloat16,
                                                  DType::Float16, DType::Int32,   DType::Int64,
                                                  DType::UInt8,   DType::Bool};

// ---- cases that raise, reductions and lines along a dim ----------------------

// An oracle throws Raises when the case must fail as torch's does (max over a
// zero-size dim, ...); the walker then expects the call to throw that kind.
// When the call threw, the walker asks the oracle with an undefined `out`, so
// an oracle decides whether it raises before it looks at `out`.
struct Raises {
  const char* kind;                          // "IndexError", ...
  bool (*matches)(const std::exception& e);  // e is of that kind
};
template <typename E>
Raises raises(const char* kind) {
  return {kind, [](const std::exception& e) { return dynamic_cast<const E*>(&e) != nullptr; }};
}

// Reduction shapes over `dims` (torch's dim list, {} = all): the unary shapes,
// so [0, 5] reduces a zero-size dim (dim 0, all) or none (dim 1); the 0-d
// class only where dims has at most one entry (0 or -1).
std::function<std::vector<InputSpec>(ShapeClass)> reduce_shapes(std::vector<int> dims);

// A reduction of `shape` over `dims` ({} = all; negative dims wrap; a 0-d
// shape reduces its one element): the output shape (keepdim as given), the
// reduced inputs of each output in row-major order (each group row-major),
// and whether a reduced dim has size zero.
template <typename T>
struct ReductionOf {
  Shape out_shape;
  std::vector<std::vector<T>> groups;
  bool zero_size_dim = false;
};
using Reduction = ReductionOf<double>;
template <typename T>
ReductionOf<T> reduce_groups(const std::vector<T>& x, const Shape& shape, const std::vector<int>& dims,
                             bool keepdim);
// The oracle of a reduction: f(group) for each output, after checking out's
// shape. Ops without an identity pass on_empty: a reduction over a zero-size
// dim must raise it.
using GroupFn = std::function<double(const std::vector<double>&)>;
std::function<std::vector<double>(const Inputs&, const Tensor&)> reduction(
    std::vector<int> dims, bool keepdim, GroupFn f, std::optional<Raises> on_empty = std::nullopt);
using ComplexGroupFn = std::function<cdouble(const std::vector<cdouble>&)>;
ComplexOracle reduction(std::vector<int> dims, bool keepdim, ComplexGroupFn f);

// Lines along `dim` (wrapped; a 0-d shape is one line of one): f maps each
// line to its output line (every output line as long); the result is
// row-major in the output shape, `shape` with the dim resized to that length.
using LineFn = std::function<std::vector<double>(const std::vector<double>&)>;
std::vector<double> map_lines(const std::vector<double>& x, const Shape& shape, int dim, const LineFn& f);
using ComplexLineFn = std::function<std::vector<cdouble>(const std::vector<cdouble>&)>;
std::vector<cdouble> map_lines(const std::vector<cdouble>& x, const Shape& shape, int dim,
                               const ComplexLineFn& f);

// Throws (failing the case) when out's shape is not `want`.
void expect_shape(const Tensor& out, const Shape& want);

}  // namespace op_table
