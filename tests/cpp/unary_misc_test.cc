// neg/abs/sign/relu, floor/ceil/round/trunc, isnan/isinf/isfinite, logical_not
// and bitwise_not: dtypes of results, special values, integer wraparound,
// non-contiguous/empty/0-dim inputs and the dtype errors.
#include "unary_test_util.h"

using namespace kiln;
using namespace unary_test;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

const std::vector<double> kSpecials = {0.0, -0.0, 1.5, -1.5, 2.5, -2.5, 0.5, -0.5, 3.49, -3.51, 1e-40, -1e-40,
                                       1e20, -1e20, 7.0, -7.0, kInf, -kInf, kNaN};

// Elementwise comparison with a double reference (bitwise sign of zero too).
void expect_values(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  const std::vector<double> g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " [" << i << "]";
    } else {
      EXPECT_EQ(g[i], want[i]) << what << " [" << i << "]";
      EXPECT_EQ(std::signbit(g[i]), std::signbit(want[i])) << what << " sign of [" << i << "]";
    }
  }
}

template <typename F>
std::vector<double> map(const std::vector<double>& xs, F f) {
  std::vector<double> r;
  for (double x : xs) r.push_back(f(x));
  return r;
}

const DType kFloats[] = {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16};

}  // namespace

TEST(UnarySign, FloatValues) {
  for (DType dt : kFloats) {
    const Tensor x = make(kSpecials, dt);
    const std::vector<double> xs = values(x);
    expect_values(kiln::neg(x), map(xs, [](double v) { return -v; }), std::string("neg ") + dname(dt));
    expect_values(kiln::abs(x), map(xs, [](double v) { return std::fabs(v); }), std::string("abs ") + dname(dt));
    expect_values(kiln::sign(x), map(xs, [](double v) { return double((0 < v) - (v < 0)); }),
                  std::string("sign ") + dname(dt));
    expect_values(kiln::relu(x), map(xs, [](double v) { return v > 0 || std::isnan(v) ? v : 0.0; }),
                  std::string("relu ") + dname(dt));
    EXPECT_EQ(kiln::abs(x).dtype(), dt);
  }
}

TEST(UnarySign, IntegersKeepDtypeAndWrap) {
  const Tensor i8 = make({-128, -1, 0, 1, 127}, DType::Int8);
  EXPECT_EQ(kiln::neg(i8).dtype(), DType::Int8);
  expect_values(kiln::neg(i8), {-128, 1, 0, -1, -127}, "neg int8");  // -(-128) wraps
  expect_values(kiln::abs(i8), {-128, 1, 0, 1, 127}, "abs int8");
  expect_values(kiln::sign(i8), {-1, -1, 0, 1, 1}, "sign int8");
  expect_values(kiln::relu(i8), {0, 0, 0, 1, 127}, "relu int8");
  const Tensor u8 = make({0, 1, 200}, DType::UInt8);
  expect_values(kiln::neg(u8), {0, 255, 56}, "neg uint8");
  expect_values(kiln::abs(u8), {0, 1, 200}, "abs uint8");
  expect_values(kiln::sign(u8), {0, 1, 1}, "sign uint8");
  Tensor i64 = arange(-3, 4);
  expect_values(kiln::neg(i64), {3, 2, 1, 0, -1, -2, -3}, "neg int64");
  neg_(i64);
  expect_values(i64, {3, 2, 1, 0, -1, -2, -3}, "neg_ int64");
  const Tensor b = make({1, 0, 1}, DType::Bool);
  EXPECT_THROW(kiln::neg(b), TypeError);
  EXPECT_EQ(kiln::abs(b).dtype(), DType::Bool);
  expect_values(kiln::abs(b), {1, 0, 1}, "abs bool");
  EXPECT_EQ(kiln::sign(b).dtype(), DType::Bool);
  expect_values(kiln::sign(b), {1, 0, 1}, "sign bool");
  EXPECT_THROW(kiln::relu(b), TypeError);
}

TEST(UnarySign, ComplexAndFp8) {
  const Tensor z = zeros({3}, DType::Complex64);
  EXPECT_THROW(kiln::sign(z), TypeError);
  EXPECT_THROW(kiln::relu(z), TypeError);
  EXPECT_EQ(kiln::neg(z).dtype(), DType::Complex64);
  Tensor zz = z.clone();
  EXPECT_THROW(abs_(zz), TypeError);  // the real result does not fit a complex tensor
  // FP8: neg and abs are exact; sign/relu are not implemented (as torch).
  const Tensor f8 = make({-448, -1.5, 0.0, 2.0, kNaN}, DType::Float8_e4m3fn);
  EXPECT_EQ(kiln::neg(f8).dtype(), DType::Float8_e4m3fn);
  expect_values(kiln::neg(f8), {448, 1.5, -0.0, -2.0, kNaN}, "neg e4m3fn");
  expect_values(kiln::abs(f8), {448, 1.5, 0.0, 2.0, kNaN}, "abs e4m3fn");
  EXPECT_THROW(kiln::sign(f8), TypeError);
  EXPECT_THROW(kiln::relu(f8), TypeError);
  EXPECT_THROW(kiln::floor(f8), TypeError);
}

TEST(UnaryRounding, FloatValues) {
  for (DType dt : kFloats) {
    const Tensor x = make(kSpecials, dt);
    const std::vector<double> xs = values(x);
    expect_values(kiln::floor(x), map(xs, [](double v) { return std::floor(v); }), std::string("floor ") + dname(dt));
    expect_values(kiln::ceil(x), map(xs, [](double v) { return std::ceil(v); }), std::string("ceil ") + dname(dt));
    expect_values(kiln::trunc(x), map(xs, [](double v) { return std::trunc(v); }), std::string("trunc ") + dname(dt));
    // Half to even: 2.5 -> 2, -0.5 -> -0.
    expect_values(kiln::round(x), map(xs, [](double v) { return std::nearbyint(v); }), std::string("round ") + dname(dt));
    Tensor c = x.clone();
    floor_(c);
    expect_values(c, map(xs, [](double v) { return std::floor(v); }), std::string("floor_ ") + dname(dt));
  }
}

TEST(UnaryRounding, Decimals) {
  const Tensor x = make({1.2345, -1.2355, 1234.5, 0.125, 1e10, kNaN}, DType::Float64);
  const std::vector<double> xs = values(x);
  expect_values(kiln::round(x, 2), map(xs, [](double v) { return std::nearbyint(v * 100.0) / 100.0; }), "round 2");
  expect_values(kiln::round(x, -2), map(xs, [](double v) { return std::nearbyint(v / 100.0) * 100.0; }), "round -2");
  const Tensor xf = make({1.2345, -2.675, 1234.5}, DType::Float32);
  const std::vector<double> xfs = values(xf);
  // Float32 scales in float, as torch.
  expect_values(kiln::round(xf, 1),
                map(xfs, [](double v) { return double(std::nearbyint(float(v) * 10.0f) / 10.0f); }), "round f32 1");
  EXPECT_THROW(kiln::round(arange(0, 3), 1), TypeError);
  expect_values(kiln::round(arange(0, 3), 0), {0, 1, 2}, "round int");
}

TEST(UnaryRounding, IntegersCopyOthersRaise) {
  const Tensor x = arange(-3, 3).to(DType::Int32);
  for (auto fn : {+[](const Tensor& t) { return kiln::floor(t); }, +[](const Tensor& t) { return kiln::ceil(t); },
                  +[](const Tensor& t) { return kiln::trunc(t); }, +[](const Tensor& t) { return kiln::round(t); }}) {
    const Tensor r = fn(x);
    EXPECT_EQ(r.dtype(), DType::Int32);
    expect_values(r, {-3, -2, -1, 0, 1, 2}, "int copy");
    EXPECT_NE(r.data_ptr(), x.data_ptr());  // a copy, not a view
    EXPECT_THROW(fn(make({1, 0}, DType::Bool)), TypeError);
    EXPECT_THROW(fn(zeros({2}, DType::Complex64)), TypeError);
  }
}

TEST(UnaryPredicates, FloatIntComplexFp8) {
  for (DType dt : kFloats) {
    const Tensor x = make(kSpecials, dt);
    const std::vector<double> xs = values(x);
    EXPECT_EQ(kiln::isnan(x).dtype(), DType::Bool);
    expect_values(kiln::isnan(x), map(xs, [](double v) { return double(std::isnan(v)); }), "isnan");
    expect_values(kiln::isinf(x), map(xs, [](double v) { return double(std::isinf(v)); }), "isinf");
    expect_values(kiln::isfinite(x), map(xs, [](double v) { return double(std::isfinite(v)); }), "isfinite");
    expect_values(kiln::logical_not(x), map(xs, [](double v) { return double(v == 0); }), "logical_not");
    // logical_not_ keeps the dtype: 1/0 written back.
    Tensor c = x.clone();
    logical_not_(c);
    EXPECT_EQ(c.dtype(), dt);
    expect_values(c, map(xs, [](double v) { return double(v == 0); }), "logical_not_");
    EXPECT_THROW(kiln::bitwise_not(x), TypeError);
  }
  for (DType dt : {DType::Int64, DType::UInt8, DType::Bool}) {
    const Tensor x = make({0, 1, 0, 1}, dt);
    expect_values(kiln::isnan(x), {0, 0, 0, 0}, "isnan int");
    expect_values(kiln::isinf(x), {0, 0, 0, 0}, "isinf int");
    expect_values(kiln::isfinite(x), {1, 1, 1, 1}, "isfinite int");
    expect_values(kiln::logical_not(x), {1, 0, 1, 0}, "logical_not int");
    EXPECT_EQ(kiln::isfinite(x).dtype(), DType::Bool);
  }
  const std::vector<complex128> zs = {{1, 2}, {kInf, 0}, {0, kNaN}, {0, 0}, {kNaN, kInf}};
  const Tensor z = from_buffer_copy(zs.data(), {5}, DType::Complex128);
  expect_values(kiln::isnan(z), {0, 0, 1, 0, 1}, "isnan complex");
  expect_values(kiln::isinf(z), {0, 1, 0, 0, 1}, "isinf complex");
  expect_values(kiln::isfinite(z), {1, 0, 0, 1, 0}, "isfinite complex");
  expect_values(kiln::logical_not(z), {0, 0, 0, 1, 0}, "logical_not complex");
  const Tensor f8 = make({0.0, 1.0, kNaN, 1e6}, DType::Float8_e5m2);  // 1e6 overflows to inf
  expect_values(kiln::isnan(f8), {0, 0, 1, 0}, "isnan e5m2");
  expect_values(kiln::isinf(f8), {0, 0, 0, 1}, "isinf e5m2");
  expect_values(kiln::logical_not(f8), {1, 0, 0, 0}, "logical_not e5m2");
}

TEST(UnaryPredicates, BitwiseNot) {
  expect_values(kiln::bitwise_not(make({0, 5, -1, 127}, DType::Int8)), {-1, -6, 0, -128}, "int8");
  expect_values(kiln::bitwise_not(make({0, 5, 255}, DType::UInt8)), {255, 250, 0}, "uint8");
  const Tensor b = kiln::bitwise_not(make({1, 0}, DType::Bool));
  EXPECT_EQ(b.dtype(), DType::Bool);
  expect_values(b, {0, 1}, "bool");
  Tensor i = arange(0, 3);
  bitwise_not_(i);
  expect_values(i, {-1, -2, -3}, "int64 in place");
  EXPECT_THROW(kiln::bitwise_not(zeros({2}, DType::Complex64)), TypeError);
  EXPECT_THROW(kiln::bitwise_not(zeros({2}, DType::Float8_e4m3fn)), TypeError);
}

TEST(UnaryMisc, NonContiguousEmptyZeroDim) {
  const Tensor x = arange(-12, 12).to(DType::Float32).reshape({4, 6}).t();  // [6, 4], transposed
  const Tensor s = x.slice(0, 1, 6, 2);                                      // [3, 4], strided rows
  for (const Tensor& v : {x, s}) {
    const std::vector<double> xs = values(v);
    expect_values(kiln::neg(v), map(xs, [](double a) { return -a; }), "neg noncontig");
    expect_values(kiln::sign(v), map(xs, [](double a) { return double((0 < a) - (a < 0)); }), "sign noncontig");
    expect_values(kiln::floor(v), xs, "floor noncontig");
    expect_values(kiln::isnan(v), map(xs, [](double) { return 0.0; }), "isnan noncontig");
    EXPECT_EQ(kiln::relu(v).sizes(), v.sizes());
  }
  const Tensor e = empty({2, 0}, DType::Float32);
  EXPECT_EQ(kiln::neg(e).sizes(), (Shape{2, 0}));
  EXPECT_EQ(kiln::isnan(e).sizes(), (Shape{2, 0}));
  EXPECT_EQ(kiln::round(e, 3).sizes(), (Shape{2, 0}));
  EXPECT_EQ(kiln::frexp(e).second.sizes(), (Shape{2, 0}));
  const Tensor z = scalar_tensor(Scalar(-2.5), DType::Float32);
  EXPECT_EQ(kiln::abs(z).dim(), 0);
  EXPECT_EQ(kiln::abs(z).item<double>(), 2.5);
  EXPECT_EQ(kiln::round(z).item<double>(), -2.0);
  EXPECT_EQ(kiln::logical_not(z).item<bool>(), false);
}
