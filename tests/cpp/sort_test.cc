// sort/argsort/topk against std::stable_sort on doubles (NaN largest), and
// bincount against a counting loop.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "index_test_util.h"

using namespace kiln;
using namespace kiln::testing_index;

namespace {
// Stable ascending/descending permutation of one row, NaN largest.
std::vector<int64_t> ref_order(const std::vector<double>& row, bool descending) {
  std::vector<int64_t> p(row.size());
  std::iota(p.begin(), p.end(), 0);
  auto key_less = [](double a, double b) { return a < b || (!std::isnan(a) && std::isnan(b)); };
  std::stable_sort(p.begin(), p.end(), [&](int64_t i, int64_t j) {
    return descending ? key_less(row[size_t(j)], row[size_t(i)]) : key_less(row[size_t(i)], row[size_t(j)]);
  });
  return p;
}
bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }
}  // namespace

TEST(Sort, DtypesDimsStableTies) {
  std::mt19937 rng(9);
  const Shape xs = {3, 5, 7};
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int8, DType::UInt8,
                   DType::Int32, DType::Int64, DType::UInt64, DType::Bool, DType::Float8_e4m3fn}) {
    const std::vector<double> xv = roundtrip(random_vec(105, rng, -4, 4), dt);  // many ties
    Tensor x = from_vec(xv, xs, dt);
    for (int dim = -3; dim < 3; ++dim) {
      const int d = (dim + 3) % 3;
      for (bool desc : {false, true}) {
        SortResult r = sort(x, dim, desc);
        ASSERT_EQ(r.values.sizes(), xs);
        ASSERT_EQ(r.indices.dtype(), DType::Int64);
        const auto vals = to_vec(r.values);
        const auto idx = to_i64(r.indices);
        // Every row along d.
        Shape rows = xs;
        rows[size_t(d)] = 1;
        for (const Shape& c0 : coords(rows)) {
          std::vector<double> row;
          for (int64_t i = 0; i < xs[size_t(d)]; ++i) {
            Shape c = c0;
            c[size_t(d)] = i;
            row.push_back(xv[size_t(linear(c, xs))]);
          }
          const auto p = ref_order(row, desc);
          for (int64_t i = 0; i < xs[size_t(d)]; ++i) {
            Shape c = c0;
            c[size_t(d)] = i;
            const size_t l = size_t(linear(c, xs));
            ASSERT_EQ(idx[l], p[size_t(i)]) << name(dt) << " dim " << dim << " desc " << desc;
            ASSERT_EQ(vals[l], row[size_t(p[size_t(i)])]);
          }
        }
        EXPECT_EQ(to_i64(argsort(x, dim, desc)), idx);
      }
    }
  }
}

TEST(Sort, NaNNonContiguousEmpty) {
  const std::vector<double> v = {3, NAN, -1, INFINITY, -0.0, NAN, 0.0, -INFINITY};
  for (DType dt : {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16}) {
    Tensor x = from_vec(v, {8}, dt);
    for (bool desc : {false, true}) {
      SortResult r = sort(x, 0, desc);
      const auto p = ref_order(v, desc);
      EXPECT_EQ(to_i64(r.indices), p) << name(dt) << desc;
      const auto vals = to_vec(r.values);
      for (size_t i = 0; i < v.size(); ++i) EXPECT_TRUE(same(vals[i], v[size_t(p[i])]));
    }
  }
  // Non-contiguous: sort the columns of a transposed matrix.
  Tensor m = from_vec({5, 1, 4, 2, 3, 0}, {2, 3}).t();  // [3, 2]: columns {5, 1, 4}, {2, 3, 0}
  SortResult r = sort(m, 0);
  EXPECT_EQ(to_vec(r.values), (std::vector<double>{1, 0, 4, 2, 5, 3}));
  EXPECT_EQ(to_i64(r.indices), (std::vector<int64_t>{1, 2, 2, 0, 0, 1}));
  EXPECT_EQ(sort(empty({3, 0})).values.sizes(), (Shape{3, 0}));
  EXPECT_EQ(sort(empty({0, 4}), 1).indices.sizes(), (Shape{0, 4}));
  SortResult s = sort(scalar_tensor(2, DType::Float32));
  EXPECT_EQ(s.values.dim(), 0);
  EXPECT_EQ(s.indices.item<int64_t>(), 0);
  EXPECT_THROW(sort(zeros({2}, DType::Complex64)), TypeError);
  EXPECT_THROW(sort(zeros({2}), 1), IndexError);
}

TEST(TopK, KZeroToNLargestSmallest) {
  std::mt19937 rng(10);
  const int64_t n = 9;
  for (DType dt : {DType::Float32, DType::Int32, DType::BFloat16, DType::Float64}) {
    std::vector<double> xv = roundtrip(random_vec(size_t(4 * n), rng, -3, 3), dt);
    if (is_floating(dt)) xv[5] = NAN;
    Tensor x = from_vec(xv, {4, n}, dt);
    for (int64_t k = 0; k <= n; ++k) {
      for (bool largest : {true, false}) {
        SortResult r = topk(x, k, -1, largest, true);
        ASSERT_EQ(r.values.sizes(), (Shape{4, k}));
        const auto vals = to_vec(r.values);
        const auto idx = to_i64(r.indices);
        for (int64_t row = 0; row < 4; ++row) {
          std::vector<double> rv(xv.begin() + row * n, xv.begin() + (row + 1) * n);
          const auto p = ref_order(rv, largest);  // stable: ties keep the lower index first
          for (int64_t i = 0; i < k; ++i) {
            EXPECT_EQ(idx[size_t(row * k + i)], p[size_t(i)])
                << name(dt) << " k " << k << " largest " << largest;
            EXPECT_TRUE(same(vals[size_t(row * k + i)], rv[size_t(p[size_t(i)])]));
          }
        }
        // Unsorted: the same set.
        SortResult u = topk(x, k, 1, largest, false);
        auto ui = to_i64(u.indices), si = idx;
        for (int64_t row = 0; row < 4; ++row) {
          std::sort(ui.begin() + row * k, ui.begin() + (row + 1) * k);
          std::sort(si.begin() + row * k, si.begin() + (row + 1) * k);
        }
        EXPECT_EQ(ui, si);
      }
    }
  }
  // Along dim 0 of a non-contiguous tensor.
  Tensor m = from_vec({5, 1, 4, 2, 3, 0}, {2, 3}).t();  // [3, 2]
  SortResult r = topk(m, 2, 0);
  EXPECT_EQ(to_vec(r.values), (std::vector<double>{5, 3, 4, 2}));
  EXPECT_EQ(to_i64(r.indices), (std::vector<int64_t>{0, 1, 2, 0}));
  EXPECT_THROW(topk(m, 4, 0), ValueError);
  EXPECT_THROW(topk(m, -1, 0), ValueError);
  EXPECT_EQ(topk(empty({2, 0}), 0).values.sizes(), (Shape{2, 0}));
}

TEST(Bincount, CountsWeightsMinlength) {
  std::mt19937 rng(11);
  for (DType dt : {DType::Int64, DType::Int32, DType::UInt8, DType::Int16}) {
    std::vector<double> xv(1000);
    for (auto& v : xv) v = double(rng() % 37);
    Tensor x = from_vec(xv, {1000}, dt);
    std::vector<double> ref(37, 0.0);
    for (double v : xv) ref[size_t(v)] += 1;
    Tensor c = bincount(x);
    EXPECT_EQ(c.dtype(), DType::Int64);
    EXPECT_EQ(to_vec(c), ref);
    // minlength larger than the data.
    Tensor c2 = bincount(x, Tensor(), 50);
    EXPECT_EQ(c2.size(0), 50);
    EXPECT_EQ(to_vec(c2.slice(0, 0, 37)), ref);
    // weights: float32 stays float32, others become float64.
    std::vector<double> wv(1000), wref(37, 0.0);
    for (size_t i = 0; i < wv.size(); ++i) {
      wv[i] = double(rng() % 7) * 0.5;
      wref[size_t(xv[i])] += wv[i];
    }
    Tensor w32 = bincount(x, from_vec(wv, {1000}, DType::Float32));
    EXPECT_EQ(w32.dtype(), DType::Float32);
    EXPECT_EQ(to_vec(w32), wref);
    EXPECT_EQ(bincount(x, from_vec(wv, {1000}, DType::Float64)).dtype(), DType::Float64);
    Tensor wi = bincount(x, from_vec(wv, {1000}, DType::Int32));
    EXPECT_EQ(wi.dtype(), DType::Float64);
    EXPECT_EQ(bincount(x, from_vec(wv, {1000}, DType::Float16)).dtype(), DType::Float64);
  }
  // Skewed and large: takes the multi-chunk path.
  const int64_t n = 1 << 20;
  Tensor big = zeros({n}, DType::Int64);
  put_(big, from_i64({5, 77, n - 1}), from_i64({3, 1, 3}));
  const auto bc = to_i64(bincount(big));
  ASSERT_EQ(bc.size(), 4u);
  EXPECT_EQ(bc, (std::vector<int64_t>{n - 3, 1, 0, 2}));
  // Non-contiguous input.
  Tensor nc = from_i64({1, 9, 1, 9, 2, 9}).slice(0, 0, 6, 2);
  EXPECT_EQ(to_i64(bincount(nc)), (std::vector<int64_t>{0, 2, 1}));
  // Empty input, errors.
  EXPECT_EQ(bincount(empty({0}, DType::Int64)).sizes(), (Shape{0}));
  EXPECT_EQ(to_i64(bincount(empty({0}, DType::Int64), Tensor(), 3)), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(bincount(empty({0}, DType::Int64), empty({0}, DType::Float32)).dtype(), DType::Float32);
  EXPECT_THROW(bincount(from_i64({1, -1})), ValueError);
  EXPECT_THROW(bincount(from_i64({1, 2}, {1, 2})), ValueError);
  EXPECT_THROW(bincount(zeros({2})), TypeError);
  EXPECT_THROW(bincount(from_i64({1, 2}), ones({3})), ValueError);
  EXPECT_THROW(bincount(from_i64({1, 2}), Tensor(), -1), ValueError);
}
