// Comparisons, logical and bitwise ops, and torch.result_type tables.
#include <cstring>
#include <limits>

#include "binary_test_util.h"

using namespace kiln;
using kiln::test::expect_same;
using kiln::test::make;
using kiln::test::values;

namespace {
Tensor dim_t(DType d) { return zeros({2}, d); }
Tensor zero_dim(DType d) { return zeros({}, d); }
}  // namespace

TEST(BinaryPromotion, MatchesTorchResultType) {
  using D = DType;
  // Tensor-tensor (torch.promote_types).
  EXPECT_EQ(result_type(dim_t(D::Int32), dim_t(D::Int64)), D::Int64);
  EXPECT_EQ(result_type(dim_t(D::UInt8), dim_t(D::Int8)), D::Int16);
  EXPECT_EQ(result_type(dim_t(D::Float16), dim_t(D::BFloat16)), D::Float32);
  EXPECT_EQ(result_type(dim_t(D::Int64), dim_t(D::Float16)), D::Float16);
  EXPECT_EQ(result_type(dim_t(D::Bool), dim_t(D::UInt8)), D::UInt8);
  EXPECT_EQ(result_type(dim_t(D::Float32), dim_t(D::Complex64)), D::Complex64);
  EXPECT_EQ(result_type(dim_t(D::Float64), dim_t(D::Complex64)), D::Complex128);
  // Tensor with 0-dim tensor: the 0-dim operand only raises the category.
  EXPECT_EQ(result_type(dim_t(D::Int32), zero_dim(D::Int64)), D::Int32);
  EXPECT_EQ(result_type(dim_t(D::UInt8), zero_dim(D::Int8)), D::UInt8);
  EXPECT_EQ(result_type(dim_t(D::Int32), zero_dim(D::Float64)), D::Float64);
  EXPECT_EQ(result_type(dim_t(D::Float16), zero_dim(D::Float64)), D::Float16);
  EXPECT_EQ(result_type(dim_t(D::Bool), zero_dim(D::Int64)), D::Int64);
  EXPECT_EQ(result_type(dim_t(D::Float32), zero_dim(D::Complex128)), D::Complex64);
  EXPECT_EQ(result_type(zero_dim(D::Int32), zero_dim(D::Int64)), D::Int64);
  // Tensor with Python scalar.
  EXPECT_EQ(result_type(dim_t(D::UInt8), Scalar(300)), D::UInt8);
  EXPECT_EQ(result_type(dim_t(D::Int8), Scalar(2.5)), D::Float32);
  EXPECT_EQ(result_type(dim_t(D::Bool), Scalar(1)), D::Int64);
  EXPECT_EQ(result_type(dim_t(D::Bool), Scalar(true)), D::Bool);
  EXPECT_EQ(result_type(dim_t(D::Float16), Scalar(1.5)), D::Float16);
  EXPECT_EQ(result_type(dim_t(D::Int32), Scalar(complex128(0, 1))), D::Complex64);
  EXPECT_EQ(result_type(dim_t(D::Float64), Scalar(complex128(0, 1))), D::Complex128);
  EXPECT_EQ(result_type(zero_dim(D::Int16), Scalar(7)), D::Int16);
  EXPECT_EQ(result_type(zero_dim(D::Float64), Scalar(7)), D::Float64);
  EXPECT_EQ(result_type(Scalar(1), Scalar(2.0)), D::Float32);
  EXPECT_EQ(result_type(Scalar(true), Scalar(2)), D::Int64);
  // The ops use it.
  EXPECT_EQ(add(dim_t(D::Int32), zero_dim(D::Int64)).dtype(), D::Int32);
  EXPECT_EQ(mul(dim_t(D::UInt8), Scalar(-1)).dtype(), D::UInt8);
  EXPECT_EQ(add(dim_t(D::Int16), Scalar(1.5)).dtype(), D::Float32);
  EXPECT_TRUE(can_cast(D::Int32, D::Float16));
  EXPECT_FALSE(can_cast(D::Float32, D::Int64));
  EXPECT_FALSE(can_cast(D::Complex64, D::Float64));
  EXPECT_FALSE(can_cast(D::Int8, D::Bool));
}

TEST(BinaryCompare, FloatsIntsAndScalars) {
  const Tensor a = make({1, 2, 3, NAN}, DType::Float32), b = make({3, 2, 1, NAN}, DType::Float32);
  expect_same(values(lt(a, b)), {1, 0, 0, 0}, 0, "lt");
  expect_same(values(le(a, b)), {1, 1, 0, 0}, 0, "le");
  expect_same(values(gt(a, b)), {0, 0, 1, 0}, 0, "gt");
  expect_same(values(ge(a, b)), {0, 1, 1, 0}, 0, "ge");
  expect_same(values(eq(a, b)), {0, 1, 0, 0}, 0, "eq");
  expect_same(values(ne(a, b)), {1, 0, 1, 1}, 0, "ne");
  EXPECT_EQ(eq(a, b).dtype(), DType::Bool);
  expect_same(values(gt(a, Scalar(2))), {0, 0, 1, 0}, 0, "gt scalar");
  expect_same(values(lt(Scalar(2), a)), {0, 0, 1, 0}, 0, "scalar lt");
  // int tensor against a float scalar compares in float32.
  expect_same(values(lt(make({1, 2, 3}, DType::Int32), Scalar(2.5))), {1, 1, 0}, 0, "int < 2.5");
  // Every dtype pair of small values agrees with the double reference.
  const DType ds[] = {DType::Bool, DType::UInt8, DType::Int8, DType::Int16, DType::UInt32,
                      DType::Int64, DType::UInt64, DType::Float16, DType::BFloat16, DType::Float64};
  for (DType x : ds)
    for (DType y : ds) {
      const Tensor p = make({0, 1, 1, 0}, x), q = make({0, 0, 1, 1}, y);
      expect_same(values(lt(p, q)), {0, 0, 0, 1}, 0, std::string("lt ") + name(x) + " " + name(y));
      expect_same(values(eq(p, q)), {1, 0, 1, 0}, 0, std::string("eq ") + name(x) + " " + name(y));
    }
  // complex: only eq/ne.
  const Tensor c = make({1, 2}, DType::Complex64);
  expect_same(values(eq(c, Scalar(1))), {1, 0}, 0, "complex eq");
  EXPECT_THROW(lt(c, c), TypeError);
}

TEST(BinaryCompare, UnsignedAndMixedSignednessAreExact) {
  Tensor u64 = full({2}, Scalar(UINT64_MAX), DType::UInt64);
  Tensor neg = full({2}, Scalar(int64_t(-1)), DType::Int64);
  expect_same(values(gt(u64, neg)), {1, 1}, 0, "uint64 max > int64 -1");
  expect_same(values(lt(neg, u64)), {1, 1}, 0, "int64 -1 < uint64 max");
  expect_same(values(eq(u64, neg)), {0, 0}, 0, "uint64 max != -1");
  expect_same(values(gt(u64, Scalar(-1))), {1, 1}, 0, "uint64 > scalar -1");
  expect_same(values(gt(u64, sub(zeros({}, DType::Int8), Scalar(1)))), {1, 1}, 0, "uint64 > 0-dim -1");
  Tensor u8 = make({0, 5, 255}, DType::UInt8);
  expect_same(values(gt(u8, Scalar(-1))), {1, 1, 1}, 0, "uint8 > -1");
  expect_same(values(lt(u8, Scalar(300))), {1, 1, 1}, 0, "uint8 < 300");
  expect_same(values(eq(u8, Scalar(255 + 256))), {0, 0, 0}, 0, "uint8 == 511 (no wrap)");
  expect_same(values(ge(Scalar(-1), u8)), {0, 0, 0}, 0, "-1 >= uint8");
  expect_same(values(eq(u8, Scalar(255))), {0, 0, 1}, 0, "uint8 == 255");
  Tensor i8 = make({-128, 0, 127}, DType::Int8);
  expect_same(values(lt(i8, make({0, 0, 0}, DType::UInt8))), {1, 0, 0}, 0, "int8 < uint8");
  expect_same(values(gt(i8, Scalar(int64_t(1) << 40))), {0, 0, 0}, 0, "int8 > 2^40");
  expect_same(values(le(make({1, 0}, DType::Bool), Scalar(0))), {0, 1}, 0, "bool <= 0");
  // In place: writes 0/1 in self's dtype.
  Tensor f = make({1, 5}, DType::Float32);
  eq_(f, Scalar(5));
  expect_same(values(f), {0, 1}, 0, "eq_");
}

TEST(BinaryLogical, LogicalAnyDTypeBitwiseIntegers) {
  const Tensor a = make({0, 1.5, -2, 0}, DType::Float32), b = make({0, 0, 3, 7}, DType::Int32);
  expect_same(values(logical_and(a, b)), {0, 0, 1, 0}, 0, "and");
  expect_same(values(logical_or(a, b)), {0, 1, 1, 1}, 0, "or");
  expect_same(values(logical_xor(a, b)), {0, 1, 0, 1}, 0, "xor");
  EXPECT_EQ(logical_and(a, b).dtype(), DType::Bool);
  expect_same(values(logical_or(a, Scalar(0))), {0, 1, 1, 0}, 0, "or scalar");
  const Tensor x = make({12, 10, -1}, DType::Int16), y = make({10, 6, 255}, DType::Int16);
  expect_same(values(bitwise_and(x, y)), {8, 2, 255}, 0, "&");
  expect_same(values(bitwise_or(x, y)), {14, 14, -1}, 0, "|");
  expect_same(values(bitwise_xor(x, y)), {6, 12, -256}, 0, "^");
  const Tensor t = make({1, 0, 1}, DType::Bool), u = make({1, 1, 0}, DType::Bool);
  EXPECT_EQ(bitwise_xor(t, u).dtype(), DType::Bool);
  expect_same(values(bitwise_xor(t, u)), {0, 1, 1}, 0, "bool ^");
  EXPECT_THROW(bitwise_and(a, a), TypeError);
  // Shifts, including out-of-range counts (torch: shifted out, sign fill).
  const Tensor s = make({1, -8, 5, -5}, DType::Int8);
  expect_same(values(bitwise_left_shift(s, make({3, 1, 8, -1}, DType::Int8))), {8, -16, 0, 0}, 0, "<<");
  expect_same(values(bitwise_right_shift(s, make({0, 2, 9, 100}, DType::Int8))), {1, -2, 0, -1}, 0, ">>");
  expect_same(values(bitwise_left_shift(make({200}, DType::UInt8), Scalar(1))), {144}, 0, "uint8 <<");
  expect_same(values(bitwise_right_shift(make({200}, DType::UInt8), Scalar(3))), {25}, 0, "uint8 >>");
  EXPECT_THROW(bitwise_left_shift(t, u), TypeError);
}

TEST(BinaryOut, OutAndInPlace) {
  const Tensor a = make({1, 2, 3}, DType::Float32), b = make({4, 5, 6}, DType::Float32);
  Tensor o = empty({3}, DType::Float64);  // result cast into a wider out
  Tensor r = add(a, b, 1, o);
  EXPECT_EQ(r.data_ptr(), o.data_ptr());
  expect_same(values(o), {5, 7, 9}, 0, "out f64");
  Tensor oi = empty({3}, DType::Int32);
  EXPECT_THROW(add(a, b, 1, oi), TypeError);  // float can't be cast to int
  Tensor bad = empty({2}, DType::Float32);
  EXPECT_THROW(mul(a, b, bad), ValueError);
  Tensor ob = empty({3}, DType::Bool);
  lt(a, Scalar(2), ob);
  expect_same(values(ob), {1, 0, 0}, 0, "lt out");

  Tensor x = make({1, 2, 3}, DType::Int32);
  add_(x, Scalar(2));
  expect_same(values(x), {3, 4, 5}, 0, "add_");
  EXPECT_THROW(add_(x, Scalar(0.5)), TypeError);  // int += float
  EXPECT_THROW(add_(x, a), TypeError);
  EXPECT_THROW(div_(x, Scalar(2)), TypeError);      // true division gives float
  div_(x, Scalar(2), "floor");
  expect_same(values(x), {1, 2, 2}, 0, "div_ floor");
  Tensor f = make({1, 2, 3}, DType::Float16);
  mul_(f, make({2, 2, 2}, DType::Float64));  // computed in f64, stored as f16
  expect_same(values(f), {2, 4, 6}, 0, "mul_ f16 *= f64");
  EXPECT_THROW(add_(make({1}, DType::Float32), make({1, 2}, DType::Float32)), ValueError);
  // Aliasing: a.add_(a viewed reversed in memory) must use the old values.
  Tensor base = make({1, 2, 3, 4}, DType::Float32);
  Tensor view = base.slice(0, 1, 4);  // [2, 3, 4]
  add_(base.slice(0, 0, 3), view);    // [1+2, 2+3, 3+4]
  expect_same(values(base), {3, 5, 7, 4}, 0, "overlapping in-place");
  // In-place on a non-contiguous view.
  Tensor m = zeros({2, 3}, DType::Float32);
  add_(m.t(), make({1, 2}, DType::Float32));
  expect_same(values(m), {1, 1, 1, 2, 2, 2}, 0, "add_ on transpose");
}

TEST(BinaryCompare, IntegerEdgeValuesEveryDType) {
  // For each integer dtype: [min, -1 or 0, 0, 1, max] against each other dtype's
  // edges, checked against an exact (long double / sign-aware) reference.
  const DType ints[] = {DType::UInt8, DType::Int8,  DType::UInt16, DType::Int16,
                        DType::UInt32, DType::Int32, DType::UInt64, DType::Int64};
  auto edges = [](DType d) {
    return dispatch<kIntSet>(d, "edges", [&]<typename T>() {
      std::vector<T> v = {std::numeric_limits<T>::min(), T(0), T(1), std::numeric_limits<T>::max()};
      if constexpr (std::is_signed_v<T>) v.push_back(T(-1));
      Tensor t = empty({int64_t(v.size())}, d);
      std::memcpy(t.data_ptr(), v.data(), v.size() * sizeof(T));
      std::vector<long double> ld(v.begin(), v.end());
      return std::make_pair(t, ld);
    });
  };
  for (DType x : ints)
    for (DType y : ints) {
      auto [tx, vx] = edges(x);
      auto [ty, vy] = edges(y);
      // Outer comparison through broadcasting: [nx, 1] vs [ny].
      Tensor a = tx.unsqueeze(1);
      const auto lt_v = values(lt(a, ty)), eq_v = values(eq(a, ty)), ge_v = values(ge(a, ty));
      for (size_t i = 0; i < vx.size(); ++i)
        for (size_t j = 0; j < vy.size(); ++j) {
          const size_t k = i * vy.size() + j;
          const std::string what = std::string(name(x)) + " vs " + name(y);
          EXPECT_EQ(lt_v[k], vx[i] < vy[j] ? 1 : 0) << what << " lt " << i << "," << j;
          EXPECT_EQ(eq_v[k], vx[i] == vy[j] ? 1 : 0) << what << " eq " << i << "," << j;
          EXPECT_EQ(ge_v[k], vx[i] >= vy[j] ? 1 : 0) << what << " ge " << i << "," << j;
        }
      // Against each edge as a 0-dim tensor too (the value path).
      for (size_t j = 0; j < vy.size(); ++j) {
        const auto g = values(gt(tx, ty.select(0, int64_t(j))));
        for (size_t i = 0; i < vx.size(); ++i)
          EXPECT_EQ(g[i], vx[i] > vy[j] ? 1 : 0) << name(x) << " gt 0-dim " << name(y) << " " << i << "," << j;
      }
    }
}
