// Python-style indexing (index / index_put_) against explicit loops: views for
// basic indices, advanced-index placement (adjacent vs separated), bool masks,
// bool scalars, broadcasting, accumulate with duplicates, and errors that must
// leave the destination untouched.
#include <gtest/gtest.h>

#include "index_test_util.h"

using namespace kiln;
using namespace kiln::indexing;
using namespace kiln::testing_index;

namespace {
const Shape kXs = {2, 3, 4};
std::vector<double> x_vals() {
  std::vector<double> v(24);
  for (int i = 0; i < 24; ++i) v[size_t(i)] = i;
  return v;
}
double xat(int64_t a, int64_t b, int64_t c) { return double(a * 12 + b * 4 + c); }
Tensor bool_tensor(const std::vector<int>& v, const Shape& s) {
  return from_vec(std::vector<double>(v.begin(), v.end()), s, DType::Bool);
}
}  // namespace

TEST(Index, BasicIsAView) {
  Tensor x = from_vec(x_vals(), kXs);
  Tensor v = index(x, {1, Slice{}, None, Slice{std::nullopt, std::nullopt, 2}});
  EXPECT_EQ(v.sizes(), (Shape{3, 1, 2}));
  EXPECT_EQ(v.storage(), x.storage());
  std::vector<double> ref;
  for (int b = 0; b < 3; ++b)
    for (int c = 0; c < 4; c += 2) ref.push_back(xat(1, b, c));
  EXPECT_EQ(to_vec(v), ref);
  EXPECT_EQ(index(x, {Ellipsis, 1}).sizes(), (Shape{2, 3}));
  // x[..., -1, 1:3] -> [2, 2]: x[a, 2, 1 + c]
  EXPECT_EQ(to_vec(index(x, {Ellipsis, -1, Slice{1, 3}})),
            (std::vector<double>{xat(0, 2, 1), xat(0, 2, 2), xat(1, 2, 1), xat(1, 2, 2)}));
  EXPECT_EQ(index(x, {0, Ellipsis}).sizes(), (Shape{3, 4}));
  EXPECT_EQ(index(x, {Ellipsis, None}).sizes(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(index(x, {}).sizes(), kXs);
  // Slices clamp like Python; negative bounds count from the end.
  EXPECT_EQ(index(x, {Slice{-100, 100}}).sizes(), kXs);
  EXPECT_EQ(index(x, {Slice{5, 1}}).sizes(), (Shape{0, 3, 4}));
  EXPECT_EQ(to_vec(index(x, {0, 0, Slice{-3, -1}})), (std::vector<double>{1, 2}));
}

TEST(Index, AdvancedAdjacentAndSeparated) {
  Tensor x = from_vec(x_vals(), kXs);
  // x[:, i1, i2] with i1: [2, 1], i2: [3] -> [2, 2, 3] (B stays in place).
  const std::vector<int64_t> i1 = {0, 2}, i2 = {1, -1, 3};
  Tensor out = index(x, {Slice{}, from_i64(i1, {2, 1}), from_i64(i2)});
  ASSERT_EQ(out.sizes(), (Shape{2, 2, 3}));
  std::vector<double> ref;
  for (int a = 0; a < 2; ++a)
    for (int p = 0; p < 2; ++p)
      for (int q = 0; q < 3; ++q) ref.push_back(xat(a, i1[size_t(p)], (i2[size_t(q)] + 4) % 4));
  EXPECT_EQ(to_vec(out), ref);
  // x[j1, :, j2]: separated by a slice -> B first: [2, 3].
  const std::vector<int64_t> j1 = {1, 0}, j2 = {3, -4};
  out = index(x, {from_i64(j1), Slice{}, from_i64(j2)});
  ASSERT_EQ(out.sizes(), (Shape{2, 3}));
  ref.clear();
  for (int p = 0; p < 2; ++p)
    for (int b = 0; b < 3; ++b) ref.push_back(xat(j1[size_t(p)], b, (j2[size_t(p)] + 4) % 4));
  EXPECT_EQ(to_vec(out), ref);
  // Separated by None: x[j1, None, j2] -> [2, 1, 3] (NumPy places B first).
  EXPECT_EQ(index(x, {from_i64(j1), None, Slice{}, from_i64({3, 2})}).sizes(), (Shape{2, 1, 3}));
  // Adjacent after a leading slice and with a trailing one: x[:, i, :] -> [2, 3, 4].
  out = index(x, {Slice{}, from_i64({2, 2, 0})});
  ASSERT_EQ(out.sizes(), (Shape{2, 3, 4}));
  EXPECT_EQ(to_vec(out)[4], xat(0, 2, 0));
  // An integer is a select (torch): x[1, i] -> [len(i), 4].
  out = index(x, {1, from_i64({2, 0})});
  ASSERT_EQ(out.sizes(), (Shape{2, 4}));
  EXPECT_EQ(to_vec(out)[4], xat(1, 0, 0));
  // A 0-dim integer tensor removes the dim (as an advanced index, a copy).
  out = index(x, {scalar_tensor(1, DType::Int64)});
  EXPECT_EQ(out.sizes(), (Shape{3, 4}));
  EXPECT_NE(out.storage(), x.storage());
  EXPECT_EQ(to_vec(out)[0], xat(1, 0, 0));
  // Non-contiguous source and index (int32).
  Tensor xt = x.permute({2, 0, 1});                                       // [4, 2, 3]
  Tensor it = from_i64({3, 9, 0, 9}).slice(0, 0, 4, 2).to(DType::Int32);  // [3, 0]
  out = index(xt, {it, Slice{}, 2});
  ASSERT_EQ(out.sizes(), (Shape{2, 2}));
  EXPECT_EQ(to_vec(out), (std::vector<double>{xat(0, 2, 3), xat(1, 2, 3), xat(0, 2, 0), xat(1, 2, 0)}));
  // Empty index tensors.
  EXPECT_EQ(index(x, {empty({0}, DType::Int64)}).sizes(), (Shape{0, 3, 4}));
  EXPECT_EQ(index(x, {Slice{}, empty({0, 2}, DType::Int64)}).sizes(), (Shape{2, 0, 2, 4}));
}

TEST(Index, BoolMasksAndScalars) {
  Tensor x = from_vec(x_vals(), kXs);
  const std::vector<int> m = {1, 0, 1, 0, 0, 1};  // [2, 3]
  Tensor out = index(x, {bool_tensor(m, {2, 3})});
  ASSERT_EQ(out.sizes(), (Shape{3, 4}));
  std::vector<double> ref;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      if (m[size_t(a * 3 + b)])
        for (int c = 0; c < 4; ++c) ref.push_back(xat(a, b, c));
  EXPECT_EQ(to_vec(out), ref);
  // x[:, mask3]: [2, N, 4]
  out = index(x, {Slice{}, bool_tensor({0, 1, 1}, {3})});
  ASSERT_EQ(out.sizes(), (Shape{2, 2, 4}));
  EXPECT_EQ(to_vec(out)[0], xat(0, 1, 0));
  // Full-shape mask -> 1-D.
  std::vector<int> full(24);
  for (int i = 0; i < 24; ++i) full[size_t(i)] = i % 5 == 0;
  out = index(x, {bool_tensor(full, kXs)});
  EXPECT_EQ(to_vec(out), (std::vector<double>{0, 5, 10, 15, 20}));
  // Bool scalars add a dim of 1 (true) or 0 (false).
  EXPECT_EQ(index(x, {true}).sizes(), (Shape{1, 2, 3, 4}));
  EXPECT_EQ(index(x, {false}).sizes(), (Shape{0, 2, 3, 4}));
  EXPECT_EQ(index(x, {Slice{}, true, 1}).sizes(), (Shape{2, 1, 4}));
  EXPECT_EQ(index(x, {scalar_tensor(true, DType::Bool)}).sizes(), (Shape{1, 2, 3, 4}));
  EXPECT_EQ(index(scalar_tensor(3, DType::Float32), {true}).sizes(), (Shape{1}));
  // Mask combined with an integer tensor broadcasts with the mask's nonzero().
  out = index(x, {bool_tensor({1, 0}, {2}), Slice{}, from_i64({3})});
  ASSERT_EQ(out.sizes(), (Shape{1, 3}));
  EXPECT_EQ(to_vec(out), (std::vector<double>{xat(0, 0, 3), xat(0, 1, 3), xat(0, 2, 3)}));
}

TEST(Index, AllDtypes) {
  std::mt19937 rng(8);
  const std::vector<double> base = random_vec(24, rng);
  for (DType dt : movement_dtypes()) {
    const std::vector<double> xv = roundtrip(base, dt);
    Tensor x = from_vec(xv, kXs, dt);
    Tensor out = index(x, {from_i64({1, 0, 1}), Slice{}, from_i64({2})});
    ASSERT_EQ(out.sizes(), (Shape{3, 3}));
    std::vector<double> ref;
    for (int64_t a : {1, 0, 1})
      for (int b = 0; b < 3; ++b) ref.push_back(xv[size_t(a * 12 + b * 4 + 2)]);
    EXPECT_EQ(to_vec(out), ref) << name(dt);
    // x[i, j] = v, then read back.
    Tensor y = x.clone();
    index_put_(y, {from_i64({0, 1}), from_i64({2, 0})}, from_vec({7, 8, 9, 10}, {1, 4}, dt));
    std::vector<double> yref = xv;
    for (int c = 0; c < 4; ++c) {
      yref[size_t(0 * 12 + 2 * 4 + c)] = to_vec(from_vec({7, 8, 9, 10}, {4}, dt))[size_t(c)];
      yref[size_t(1 * 12 + 0 * 4 + c)] = yref[size_t(0 * 12 + 2 * 4 + c)];
    }
    EXPECT_EQ(to_vec(y), yref) << name(dt);
  }
}

TEST(Index, Errors) {
  Tensor x = from_vec(x_vals(), kXs);
  EXPECT_THROW(index(x, {0, 0, 0, 0}), IndexError);
  EXPECT_THROW(index(x, {2}), IndexError);
  EXPECT_THROW(index(x, {-3}), IndexError);
  EXPECT_THROW(index(x, {Ellipsis, Ellipsis}), IndexError);
  try {
    index(x, {Slice{}, from_i64({0, 3})});
    FAIL();
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("index 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("size 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(index(x, {from_i64({-3})}), IndexError);
  EXPECT_THROW(index(x, {from_vec({0.0}, {1})}), IndexError);
  EXPECT_THROW(index(x, {from_i64({0, 1}), from_i64({0, 1, 2})}), IndexError);
  EXPECT_THROW(index(x, {bool_tensor({1, 0}, {2, 1})}), IndexError);
  EXPECT_THROW(index(x, {Slice{0, 2, 0}}), ValueError);
  EXPECT_THROW(index(x, {Slice{0, 2, -1}}), ValueError);
}

TEST(IndexPut, AccumulateDuplicatesAndPlacement) {
  for (DType dt : {DType::Float32, DType::Int64, DType::BFloat16, DType::Complex64, DType::UInt8}) {
    Tensor x = zeros(kXs, dt);
    // x[:, [1, 1, 2], [0, 0, -1]] += 1  (duplicate pair (1, 0) counts twice)
    index_put_(x, {Slice{}, from_i64({1, 1, 2}), from_i64({0, 0, -1})}, Scalar(int64_t(1)), true);
    std::vector<double> ref(24, 0.0);
    for (int a = 0; a < 2; ++a) {
      ref[size_t(a * 12 + 1 * 4 + 0)] += 2;
      ref[size_t(a * 12 + 2 * 4 + 3)] += 1;
    }
    EXPECT_EQ(to_vec(x), ref) << name(dt);
  }
  // Separated indices with a value broadcast over the [B, 3] result.
  Tensor x = zeros(kXs);
  Tensor val = from_vec({1, 2, 3}, {3}, DType::Float32);
  index_put_(x, {from_i64({0, 1, 0}), Slice{}, from_i64({1, 2, 1})}, val, true);
  std::vector<double> ref(24, 0.0);
  for (auto [a, c] : std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {0, 1}})
    for (int b = 0; b < 3; ++b) ref[size_t(a * 12 + b * 4 + c)] += b + 1;
  EXPECT_EQ(to_vec(x), ref);
  // A full value tensor [B, 3] (non-contiguous) without accumulate: last write wins.
  Tensor y = zeros(kXs);
  Tensor v2 = from_vec({1, 2, 3, 4, 5, 6}, {3, 2}).t();  // [2, 3]
  index_put_(y, {from_i64({1, 1}), Slice{}, from_i64({0, 0})}, v2);
  std::vector<double> yref(24, 0.0);
  for (int b = 0; b < 3; ++b) yref[size_t(12 + b * 4)] = to_vec(v2)[size_t(3 + b)];
  EXPECT_EQ(to_vec(y), yref);
  // Mask assignment with a scalar.
  Tensor z = from_vec(x_vals(), kXs);
  std::vector<int> m(24);
  for (int i = 0; i < 24; ++i) m[size_t(i)] = i % 2;
  index_put_(z, {bool_tensor(m, kXs)}, Scalar(-1.0));
  for (int i = 0; i < 24; ++i) EXPECT_EQ(to_vec(z)[size_t(i)], i % 2 ? -1.0 : i);
}

TEST(IndexPut, BasicWritesThroughViewAndErrorsWriteNothing) {
  Tensor x = zeros(kXs);
  index_put_(x, {1, Slice{1, 3}}, from_vec({1, 2, 3, 4}, {4}));
  EXPECT_EQ(to_vec(index(x, {1, 1})), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(to_vec(index(x, {1, 2})), (std::vector<double>{1, 2, 3, 4}));
  index_put_(x, {1, Slice{1, 3}}, Scalar(1.0), true);
  EXPECT_EQ(to_vec(index(x, {1, 2})), (std::vector<double>{2, 3, 4, 5}));
  // Errors: nothing written.
  Tensor before = x.clone();
  EXPECT_THROW(index_put_(x, {from_i64({0, 5})}, Scalar(9.0)), IndexError);
  EXPECT_THROW(index_put_(x, {Slice{}, from_i64({0, 1})}, from_vec({1, 2, 3}, {3}), true), ValueError);
  EXPECT_THROW(index_put_(x, {0, 0, 0, 0}, Scalar(1.0)), IndexError);
  EXPECT_THROW(index_put_(x, {from_i64({0})}, Scalar(complex128(1, 1))), TypeError);
  EXPECT_EQ(to_vec(x), to_vec(before));
  // Value aliasing the destination: x[[1, 0]] = x.
  Tensor w = arange(0, 4, 1, DType::Float32);
  index_put_(w, {from_i64({3, 2, 1, 0})}, w);
  EXPECT_EQ(to_vec(w), (std::vector<double>{3, 2, 1, 0}));
  // Empty index: nothing to do.
  index_put_(w, {empty({0}, DType::Int64)}, Scalar(5.0));
  EXPECT_EQ(to_vec(w), (std::vector<double>{3, 2, 1, 0}));
}
