// masked_fill, masked_select, nonzero against loop references.
#include <gtest/gtest.h>

#include <cmath>

#include "index_test_util.h"

using namespace kiln;
using namespace kiln::testing_index;

namespace {
Tensor bool_tensor(const std::vector<int>& v, const Shape& s) {
  std::vector<double> d(v.begin(), v.end());
  return from_vec(d, s, DType::Bool);
}
}  // namespace

TEST(MaskedFill, DtypesBroadcastNonContiguous) {
  std::mt19937 rng(5);
  const std::vector<double> base = random_vec(12, rng, 1, 9);
  const std::vector<int> mv = {1, 0, 0, 1};  // mask [4] broadcast over rows of [3, 4]
  for (DType dt : movement_dtypes()) {
    const std::vector<double> xv = roundtrip(base, dt);
    Tensor x = from_vec(xv, {3, 4}, dt);
    Tensor out = masked_fill(x, bool_tensor(mv, {4}), Scalar(int64_t(0)));
    std::vector<double> ref = xv;
    for (int i = 0; i < 12; ++i)
      if (mv[size_t(i % 4)]) ref[size_t(i)] = 0;
    EXPECT_EQ(to_vec(out), ref) << name(dt);
    EXPECT_EQ(to_vec(x), xv);
    masked_fill_(x, bool_tensor(mv, {4}), scalar_tensor(0, DType::Float32));
    EXPECT_EQ(to_vec(x), ref) << name(dt);
  }
  // Non-contiguous self, value converted (float into int truncates as torch).
  Tensor base2 = zeros({4, 3}, DType::Int32);
  Tensor xt = base2.t();
  masked_fill_(xt, bool_tensor({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1}, {3, 4}), Scalar(2.7));
  EXPECT_EQ(to_vec(base2), (std::vector<double>{2, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 2}));
  // Out-of-place broadcasts self with mask.
  EXPECT_EQ(masked_fill(zeros({4}), bool_tensor({1, 0}, {2, 1}), Scalar(1.0)).sizes(), (Shape{2, 4}));
  EXPECT_THROW(masked_fill_(xt, bool_tensor({1, 0}, {2, 1}), Scalar(1.0)), ValueError);
  EXPECT_THROW(masked_fill_(xt, ones({3, 4}), Scalar(1.0)), TypeError);
  EXPECT_THROW(masked_fill_(xt, bool_tensor({1}, {1}), ones({1})), ValueError);
  Tensor e = empty({0, 3});
  masked_fill_(e, bool_tensor({1, 1, 1}, {3}), Scalar(1.0));
}

TEST(MaskedSelect, BroadcastDtypes) {
  std::mt19937 rng(6);
  const std::vector<double> base = random_vec(24, rng, 1, 9);
  std::vector<int> mv(8);
  for (auto& m : mv) m = int(rng() % 2);
  for (DType dt : movement_dtypes()) {
    const std::vector<double> xv = roundtrip(base, dt);
    Tensor x = from_vec(xv, {3, 8}, dt);
    Tensor out = masked_select(x, bool_tensor(mv, {8}));
    std::vector<double> ref;
    for (int i = 0; i < 24; ++i)
      if (mv[size_t(i % 8)]) ref.push_back(xv[size_t(i)]);
    EXPECT_EQ(out.dim(), 1);
    EXPECT_EQ(to_vec(out), ref) << name(dt);
  }
  // x broadcast against a larger mask; non-contiguous x.
  Tensor x = arange(0, 6, 1, DType::Float32).reshape({2, 3}).t();  // [3, 2]
  Tensor m = bool_tensor({1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1}, {2, 3, 2});
  EXPECT_EQ(to_vec(masked_select(x, m)), (std::vector<double>{0, 4, 2, 5, 2, 5}));
  EXPECT_EQ(masked_select(empty({0}), bool_tensor({1}, {1})).sizes(), (Shape{0}));
  EXPECT_THROW(masked_select(x, bool_tensor({1, 0, 1}, {3})), ValueError);
  EXPECT_THROW(masked_select(x, ones({3, 2})), TypeError);
  // Large enough to take the chunked parallel path.
  const int64_t n = 300001;
  std::vector<int> bm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) bm[size_t(i)] = i % 3 == 0;
  Tensor sel = masked_select(arange(0, n, 1, DType::Int64), bool_tensor(bm, {n}));
  const auto sv = to_i64(sel);
  ASSERT_EQ(int64_t(sv.size()), (n + 2) / 3);
  for (size_t i = 0; i < sv.size(); ++i) ASSERT_EQ(sv[i], int64_t(3 * i));
  const auto nz = to_i64(nonzero(bool_tensor(bm, {n})));
  EXPECT_EQ(nz, sv);
}

TEST(Nonzero, ShapesDtypes) {
  std::mt19937 rng(7);
  for (DType dt : movement_dtypes()) {
    const std::vector<double> xv = roundtrip(random_vec(24, rng, -1, 1), dt);
    // Non-contiguous [4, 3, 2] view of a [2, 3, 4] tensor.
    Tensor x = from_vec(xv, {2, 3, 4}, dt).permute({2, 1, 0});
    const std::vector<double> xc = to_vec(x);
    std::vector<int64_t> ref;
    for (const Shape& c : coords({4, 3, 2}))
      if (xc[size_t(linear(c, {4, 3, 2}))] != 0) ref.insert(ref.end(), c.begin(), c.end());
    Tensor nz = nonzero(x);
    EXPECT_EQ(nz.dtype(), DType::Int64);
    EXPECT_EQ(nz.size(1), 3);
    EXPECT_EQ(to_i64(nz), ref) << name(dt);
  }
  EXPECT_EQ(nonzero(zeros({3, 0})).sizes(), (Shape{0, 2}));
  EXPECT_EQ(nonzero(scalar_tensor(2, DType::Float32)).sizes(), (Shape{1, 0}));
  EXPECT_EQ(nonzero(scalar_tensor(0, DType::Float32)).sizes(), (Shape{0, 0}));
  // NaN and complex with only an imaginary part count as non-zero; -0.0 does not.
  Tensor f = from_vec({0.0, -0.0, NAN, 1.0}, {4}, DType::Float32);
  EXPECT_EQ(to_i64(nonzero(f)), (std::vector<int64_t>{2, 3}));
  Tensor c = scalar_tensor(Scalar(complex128(0, 1)), DType::Complex64);
  EXPECT_EQ(nonzero(c).size(0), 1);
}
