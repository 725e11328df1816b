// Binary arithmetic against a double-precision scalar reference over dtypes,
// broadcasting, non-contiguous operands, scalars and 0-dim tensors.
#include <functional>

#include "binary_test_util.h"

using namespace kiln;
using kiln::test::expect_same;
using kiln::test::make;
using kiln::test::stored;
using kiln::test::values;

namespace {

struct Case {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  bool ints;            // run on integer dtypes
  bool float_result;    // integers give float32
  bool nonzero_divisor; // integer divisor must be nonzero
  double rtol;          // for floating results (0: exact)
};

double py_floordiv(double a, double b) { return std::floor(a / b); }
double py_mod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((b < 0) != (m < 0))) m += b;
  return m;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> k = {
      {"add", [](auto& a, auto& b) { return add(a, b); }, [](double x, double y) { return x + y; }, true, false, false, 0},
      {"add_alpha", [](auto& a, auto& b) { return add(a, b, 3); }, [](double x, double y) { return x + 3 * y; }, true, false, false, 1e-15},
      {"sub", [](auto& a, auto& b) { return sub(a, b); }, [](double x, double y) { return x - y; }, true, false, false, 0},
      {"sub_alpha", [](auto& a, auto& b) { return sub(a, b, 2); }, [](double x, double y) { return x - 2 * y; }, true, false, false, 1e-15},
      {"mul", [](auto& a, auto& b) { return mul(a, b); }, [](double x, double y) { return x * y; }, true, false, false, 0},
      {"div", [](auto& a, auto& b) { return div(a, b); }, [](double x, double y) { return x / y; }, true, true, false, 0},
      {"div_trunc", [](auto& a, auto& b) { return div(a, b, "trunc"); }, [](double x, double y) { return std::trunc(x / y); }, true, false, true, 0},
      {"floor_divide", [](auto& a, auto& b) { return floor_divide(a, b); }, py_floordiv, true, false, true, 0},
      {"remainder", [](auto& a, auto& b) { return remainder(a, b); }, py_mod, true, false, true, 1e-6},
      {"fmod", [](auto& a, auto& b) { return fmod(a, b); }, [](double x, double y) { return std::fmod(x, y); }, true, false, true, 1e-6},
      {"maximum", [](auto& a, auto& b) { return maximum(a, b); }, [](double x, double y) { return std::max(x, y); }, true, false, false, 0},
      {"minimum", [](auto& a, auto& b) { return minimum(a, b); }, [](double x, double y) { return std::min(x, y); }, true, false, false, 0},
      {"atan2", [](auto& a, auto& b) { return atan2(a, b); }, [](double x, double y) { return std::atan2(x, y); }, true, true, false, 1e-6},
      {"copysign", [](auto& a, auto& b) { return copysign(a, b); }, [](double x, double y) { return std::copysign(x, y); }, true, true, false, 0},
  };
  return k;
}

const DType kDTypes[] = {DType::UInt8,   DType::Int8,    DType::Int16,    DType::UInt16,
                         DType::Int32,   DType::UInt32,  DType::Int64,    DType::UInt64,
                         DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};

// a: [3, 4], b: [4] (broadcast over rows). Values small enough for int8, with
// negative ones only for signed/float dtypes.
void operands(DType d, bool nonzero, std::vector<double>* a, std::vector<double>* b) {
  const bool neg = is_signed(d);
  *a = neg ? std::vector<double>{-7, 7, 5, -5, 0, 3, -1, 12, 9, -9, 100, -100}
           : std::vector<double>{7, 5, 0, 3, 1, 12, 9, 100, 250, 6, 2, 17};
  *b = neg ? std::vector<double>{2, -2, 3, -4} : std::vector<double>{2, 3, 4, 1};
  if (!nonzero && !is_integral(d, true)) (*b)[1] = 0.5;
}

void check_case(const Case& c, DType d) {
  std::vector<double> av, bv;
  operands(d, c.nonzero_divisor, &av, &bv);
  const Tensor a = make(av, d, {3, 4}), b = make(bv, d);
  const Tensor r = c.op(a, b);
  const DType want_dtype = c.float_result && is_integral(d, true) ? DType::Float32 : d;
  ASSERT_EQ(r.dtype(), want_dtype) << c.name << " " << name(d);
  ASSERT_EQ(r.sizes(), (Shape{3, 4}));
  std::vector<double> want(12);
  for (int i = 0; i < 12; ++i) {
    // Reference on the stored inputs, in double, then stored as the result dtype.
    const double x = stored(av[i], d), y = stored(bv[i % 4], d);
    double v = c.ref(x, y);
    if (want_dtype == DType::Float32 || want_dtype == DType::BFloat16 || want_dtype == DType::Float16)
      v = double(float(v));
    want[i] = stored(v, want_dtype);
  }
  const bool exact = is_integral(want_dtype, true) || c.rtol == 0;
  const double rtol = exact ? 0 : (want_dtype == DType::Float64 ? 1e-12 : want_dtype == DType::Float32 ? 1e-6 : 1e-2);
  expect_same(values(r), want, rtol, std::string(c.name) + " " + name(d));
}

}  // namespace

TEST(BinaryArith, AllOpsAllDTypesAgainstDoubleReference) {
  for (const Case& c : cases())
    for (DType d : kDTypes) check_case(c, d);
}

TEST(BinaryArith, PythonFloorSemantics) {
  const Tensor a = make({-7, 7, -7, 7}, DType::Int64), b = make({2, 2, -2, -2}, DType::Int64);
  expect_same(values(floor_divide(a, b)), {-4, 3, 3, -4}, 0, "floor_divide int");
  expect_same(values(remainder(a, b)), {1, 1, -1, -1}, 0, "remainder int");
  expect_same(values(fmod(a, b)), {-1, 1, -1, 1}, 0, "fmod int");
  expect_same(values(div(a, b, "trunc")), {-3, 3, 3, -3}, 0, "trunc int");
  const Tensor af = a.to(DType::Float32), bf = b.to(DType::Float32);
  expect_same(values(floor_divide(af, bf)), {-4, 3, 3, -4}, 0, "floor_divide float");
  expect_same(values(remainder(af, bf)), {1, 1, -1, -1}, 0, "remainder float");
  expect_same(values(fmod(af, bf)), {-1, 1, -1, 1}, 0, "fmod float");
  // Scalars on either side.
  expect_same(values(remainder(Scalar(-7), make({2, -2}, DType::Int32))), {1, -1}, 0, "scalar % t");
  EXPECT_EQ(floor_divide(Scalar(-7), make({2}, DType::Int32)).dtype(), DType::Int32);
  // INT64_MIN // -1 wraps instead of trapping.
  Tensor m = full({1}, Scalar(INT64_MIN), DType::Int64);
  EXPECT_EQ(floor_divide(m, Scalar(-1)).item<int64_t>(), INT64_MIN);
  EXPECT_EQ(remainder(m, Scalar(-1)).item<int64_t>(), 0);
}

TEST(BinaryArith, DivisionByZero) {
  const Tensor a = make({1, -1, 0}, DType::Int32), z = make({0, 0, 0}, DType::Int32);
  EXPECT_THROW(div(a, z, "trunc"), ValueError);
  EXPECT_THROW(div(a, z, "floor"), ValueError);
  EXPECT_THROW(floor_divide(a, Scalar(0)), ValueError);
  EXPECT_THROW(remainder(a, z), ValueError);
  EXPECT_THROW(fmod(a, Scalar(0)), ValueError);
  EXPECT_THROW(div(a, z, "round"), ValueError);
  // True division of integers by zero is float: inf, -inf, nan.
  const auto q = values(div(a, z));
  EXPECT_EQ(q[0], INFINITY);
  EXPECT_EQ(q[1], -INFINITY);
  EXPECT_TRUE(std::isnan(q[2]));
  const auto f = values(floor_divide(a.to(DType::Float64), Scalar(0.0)));
  EXPECT_EQ(f[0], INFINITY);
}

TEST(BinaryArith, IntegerWrapAndEdges) {
  Tensor u8 = make({250, 5}, DType::UInt8);
  expect_same(values(add(u8, Scalar(10))), {4, 15}, 0, "uint8 wrap");
  expect_same(values(sub(Scalar(0), u8)), {6, 251}, 0, "uint8 0 - x");
  Tensor i64 = full({1}, Scalar(INT64_MAX), DType::Int64);
  EXPECT_EQ(add(i64, Scalar(1)).item<int64_t>(), INT64_MIN);
  EXPECT_EQ(mul(i64, Scalar(2)).item<int64_t>(), -2);
  Tensor u64 = full({1}, Scalar(UINT64_MAX), DType::UInt64);
  EXPECT_EQ(add(u64, u64).to(DType::UInt64).data<uint64_t>()[0], UINT64_MAX - 1);
  // pow: integers by squaring (wrapping), negative exponent raises.
  expect_same(values(pow(make({2, -3, 0, 1}, DType::Int32), Scalar(3))), {8, -27, 0, 1}, 0, "int pow");
  EXPECT_EQ(pow(Scalar(2), make({10}, DType::Int64)).item<int64_t>(), 1024);
  EXPECT_THROW(pow(make({2}, DType::Int32), Scalar(-1)), ValueError);
  EXPECT_THROW(pow(make({2}, DType::Int32), make({-1}, DType::Int32)), ValueError);
  expect_same(values(pow(make({2, 4}, DType::Float32), Scalar(-1))), {0.5, 0.25}, 0, "float pow");
  EXPECT_EQ(pow(make({2}, DType::Int32), Scalar(0.5)).dtype(), DType::Float32);
}

TEST(BinaryArith, BoolArithmetic) {
  const Tensor t = make({0, 1, 1, 0}, DType::Bool), u = make({0, 0, 1, 1}, DType::Bool);
  EXPECT_EQ(add(t, u).dtype(), DType::Bool);
  expect_same(values(add(t, u)), {0, 1, 1, 1}, 0, "bool add");
  expect_same(values(mul(t, u)), {0, 0, 1, 0}, 0, "bool mul");
  EXPECT_THROW(sub(t, u), TypeError);
  EXPECT_THROW(sub(t, Scalar(1)), TypeError);
  EXPECT_EQ(add(t, Scalar(1)).dtype(), DType::Int64);
  EXPECT_EQ(add(t, Scalar(1.5)).dtype(), DType::Float32);
  EXPECT_EQ(div(t, u).dtype(), DType::Float32);
  EXPECT_THROW(add(t, u, 1.5), TypeError);
  EXPECT_THROW(add(make({1}, DType::Int32), make({1}, DType::Int32), 0.5), TypeError);
  expect_same(values(add(make({1}, DType::Float32), make({2}, DType::Float32), 0.5)), {2}, 0, "alpha");
}

TEST(BinaryArith, ComplexArithmetic) {
  Tensor a = make({1, 2}, DType::Complex64);
  Tensor b = mul(a, Scalar(complex128(0, 1)));  // [i, 2i]
  EXPECT_EQ(b.dtype(), DType::Complex64);
  Tensor c = mul(b, b);  // [-1, -4]
  expect_same(values(c), {-1, -4}, 0, "complex mul real part");
  Tensor d = div(add(b, Scalar(1)), b);  // (1 + i) / i = 1 - i
  EXPECT_EQ(d.select(0, 0).item().to_complex(), complex128(1, -1));
  EXPECT_EQ(add(make({1}, DType::Float64), Scalar(complex128(0, 1))).dtype(), DType::Complex128);
  EXPECT_EQ(pow(b, Scalar(2)).dtype(), DType::Complex64);
  EXPECT_THROW(maximum(a, a), TypeError);
  EXPECT_THROW(floor_divide(a, a), TypeError);
}

TEST(BinaryArith, NaNPropagation) {
  const Tensor a = make({NAN, 1, 2}, DType::Float32), b = make({0, NAN, 1}, DType::Float32);
  const auto mx = values(maximum(a, b)), mn = values(minimum(a, b));
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]));
  EXPECT_EQ(mx[2], 2);
  EXPECT_TRUE(std::isnan(mn[0]) && std::isnan(mn[1]));
  EXPECT_EQ(mn[2], 1);
}

TEST(BinaryArith, BroadcastNonContiguousAndEmpty) {
  // a: [2, 3] transposed view of [3, 2]; b: [2, 1] column -> [2, 3].
  Tensor base = arange(0, 6).to(DType::Float32).reshape({3, 2});
  Tensor a = base.t();
  Tensor b = make({10, 20}, DType::Float32, {2, 1});
  Tensor r = add(a, b);
  EXPECT_EQ(r.sizes(), (Shape{2, 3}));
  expect_same(values(r), {10, 12, 14, 21, 23, 25}, 0, "transposed + column");
  // Strided slice with step 2 (int32, generic path).
  Tensor s = arange(0, 10).to(DType::Int32).slice(0, 0, 10, 2);
  expect_same(values(mul(s, s)), {0, 4, 16, 36, 64}, 0, "strided");
  // Empty dims broadcast to empty results.
  Tensor e = empty({0, 3}, DType::Float32);
  EXPECT_EQ(add(e, make({1, 2, 3}, DType::Float32)).sizes(), (Shape{0, 3}));
  EXPECT_EQ(add(empty({2, 0}, DType::Int32), empty({1, 0}, DType::Int32)).sizes(), (Shape{2, 0}));
  EXPECT_EQ(add(empty({0}, DType::Float32), make({5}, DType::Float32)).sizes(), (Shape{0}));
  // 0-dim with 0-dim gives 0-dim.
  Tensor z = add(scalar_tensor(2, DType::Float32), scalar_tensor(3, DType::Float32));
  EXPECT_EQ(z.dim(), 0);
  EXPECT_EQ(z.item<double>(), 5);
  // Shape mismatch.
  EXPECT_THROW(add(make({1, 2, 3}, DType::Float32), make({1, 2}, DType::Float32)), ValueError);
}

TEST(BinaryArith, LargeContiguousSimdPathsMatchScalar) {
  // Long enough for the threaded Highway kernels; odd length for the tail.
  const int64_t n = 100003;
  Tensor a = linspace(-50, 50, n, DType::Float32), b = linspace(0.5, 7, n, DType::Float32);
  for (DType d : {DType::Float32, DType::BFloat16, DType::Float16}) {
    Tensor x = a.to(d), y = b.to(d);
    const auto xv = values(x), yv = values(y);
    std::vector<double> want(n);
    for (int k = 0; k < 4; ++k) {
      Tensor r = k == 0 ? add(x, y) : k == 1 ? sub(x, y) : k == 2 ? mul(x, y) : div(x, y);
      Tensor rs = k == 0 ? add(x, Scalar(0.3)) : k == 1 ? sub(Scalar(0.3), x) : k == 2 ? mul(x, Scalar(0.3)) : div(Scalar(0.3), y);
      for (int64_t i = 0; i < n; ++i) {
        const float p = float(xv[i]), q = float(yv[i]);
        const float v = k == 0 ? p + q : k == 1 ? p - q : k == 2 ? p * q : p / q;
        want[i] = stored(v, d);
      }
      expect_same(values(r), want, 0, std::string("simd tensor-tensor ") + name(d));
      for (int64_t i = 0; i < n; ++i) {
        const float p = float(xv[i]), q = float(yv[i]), s = 0.3f;
        const float v = k == 0 ? p + s : k == 1 ? s - p : k == 2 ? p * s : s / q;
        want[i] = stored(v, d);
      }
      expect_same(values(rs), want, 0, std::string("simd tensor-scalar ") + name(d));
    }
  }
  // NaN and overflow rounding in the bf16 store.
  Tensor big = make({3e38, NAN, -3e38}, DType::Float32);
  const auto v = values(add(big.to(DType::BFloat16), big.to(DType::BFloat16)));
  EXPECT_EQ(v[0], INFINITY);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], -INFINITY);
  // float16: overflow to inf, subnormal results rounded to nearest even, NaN.
  Tensor h = make({60000, 1e-7, NAN, 3e-5, -60000, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, DType::Float16);
  const auto hv = values(mul(h, Scalar(2.0)));
  const auto hin = values(h);
  EXPECT_EQ(hv[0], INFINITY);
  EXPECT_TRUE(std::isnan(hv[2]));
  EXPECT_EQ(hv[4], -INFINITY);
  for (size_t i : {size_t(1), size_t(3), size_t(5), size_t(16)})
    EXPECT_EQ(hv[i], stored(float(hin[i]) * 2.0f, DType::Float16)) << i;
  const auto hq = values(div(h, Scalar(3.0)));
  for (size_t i = 0; i < hin.size(); ++i)
    if (!std::isnan(hin[i])) {
      EXPECT_EQ(hq[i], stored(float(hin[i]) / 3.0f, DType::Float16)) << i;
    }
}

TEST(BinaryArith, Fp8Raises) {
  Tensor f8 = make({1, 2}, DType::Float32).to(DType::Float8_e4m3fn);
  EXPECT_THROW(add(f8, f8), TypeError);
  EXPECT_THROW(mul(f8, Scalar(2)), TypeError);
  EXPECT_THROW(eq(f8, f8), TypeError);
  EXPECT_THROW(add(make({1, 2}, DType::Float32), f8.to(DType::Float8_e5m2)), TypeError);
}

TEST(BinaryArith, HeavisidePowBoolMinMax) {
  for (DType d : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64, DType::Int32}) {
    const Tensor x = make({-2, 0, 3, 0}, d), v = make({5, 7, 9, 1}, d);
    EXPECT_EQ(heaviside(x, v).dtype(), d);
    expect_same(values(heaviside(x, v)), {0, 7, 1, 1}, 0, std::string("heaviside ") + name(d));
    expect_same(values(heaviside(x, Scalar(2))), {0, 2, 1, 2}, 0, "heaviside scalar");
    const Tensor b = make({0.5, 2, 3, 1}, d);
    std::vector<double> want;
    for (double e : {0.5, 2.0, 3.0, 1.0}) want.push_back(stored(std::pow(2.0, is_integral(d, false) ? std::trunc(e) : e), d));
    expect_same(values(pow(make({2, 2, 2, 2}, d), b)), want, is_integral(d, false) ? 0 : 1e-2, "pow");
  }
  EXPECT_THROW(heaviside(make({1}, DType::Float32), make({1}, DType::Float64)), TypeError);
  const Tensor t = make({0, 1, 1, 0}, DType::Bool), u = make({0, 0, 1, 1}, DType::Bool);
  expect_same(values(maximum(t, u)), {0, 1, 1, 1}, 0, "bool max");
  expect_same(values(minimum(t, u)), {0, 0, 1, 0}, 0, "bool min");
  EXPECT_EQ(maximum(t, u).dtype(), DType::Bool);
  EXPECT_THROW(pow(t, u), TypeError);
}

TEST(BinaryArith, ZeroDimUInt64ValueKeepsItsMagnitude) {
  // A uint64 0-dim operand above INT64_MAX added to a float tensor (category raise).
  Tensor big = full({}, Scalar(uint64_t(1) << 63), DType::UInt64);
  const Tensor r = add(make({1}, DType::Float64), big);
  EXPECT_EQ(r.dtype(), DType::Float64);
  EXPECT_EQ(values(r)[0], 9223372036854775808.0 + 1);
  // Same dtype: exact integer arithmetic.
  Tensor u = full({2}, Scalar(uint64_t(5)), DType::UInt64);
  EXPECT_EQ(add(u, big).to(DType::UInt64).data<uint64_t>()[0], (uint64_t(1) << 63) + 5);
}
