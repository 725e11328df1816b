// take/put_, gather/scatter/scatter_add, index_select/index_add against
// double-loop references, over dtypes, dims, non-contiguous inputs, empty
// tensors and bad indices (which must leave the destination untouched).
#include <gtest/gtest.h>

#include "index_test_util.h"

using namespace kiln;
using namespace kiln::testing_index;

TEST(Take, AllDtypesNonContiguousNegative) {
  std::mt19937 rng(1);
  const std::vector<double> base = random_vec(12, rng);
  for (DType dt : movement_dtypes()) {
    const std::vector<double> xv = roundtrip(base, dt);
    // x: [3, 4] transposed -> [4, 3], logical row-major order differs from memory.
    Tensor x = from_vec(xv, {3, 4}, dt).t();
    Tensor idx = from_i64({0, 5, -1, 11, -12, 3}, {2, 3});
    Tensor out = take(x, idx);
    EXPECT_EQ(out.sizes(), (Shape{2, 3}));
    EXPECT_EQ(out.dtype(), dt);
    std::vector<double> logical;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 3; ++j) logical.push_back(xv[size_t(j * 4 + i)]);
    const std::vector<int64_t> iv = {0, 5, 11, 11, 0, 3};
    const auto got = to_vec(out);
    for (size_t k = 0; k < iv.size(); ++k) EXPECT_EQ(got[k], logical[size_t(iv[k])]) << name(dt) << " " << k;
  }
}

TEST(Take, ErrorsAndEmpty) {
  Tensor x = arange(0, 6).reshape({2, 3});
  try {
    take(x, from_i64({1, 6}));
    FAIL();
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("6"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("size 6"), std::string::npos);
  }
  EXPECT_THROW(take(x, from_i64({-7})), IndexError);
  EXPECT_THROW(take(x, from_vec({1.0}, {1})), TypeError);
  EXPECT_EQ(take(x, empty({0}, DType::Int64)).numel(), 0);
  EXPECT_THROW(take(empty({0}), from_i64({0})), IndexError);
  // int32 indices are accepted.
  EXPECT_EQ(to_vec(take(x, from_i64({4, -1}).to(DType::Int32))), (std::vector<double>{4, 5}));
}

TEST(Put, AccumulateAndLastWins) {
  for (DType dt : {DType::Float32, DType::Int64, DType::BFloat16, DType::Complex64, DType::Float8_e5m2}) {
    Tensor x = zeros({2, 3}, dt);
    Tensor idx = from_i64({1, -5, 4, 1});  // -5 wraps to 1
    Tensor src = from_vec({1, 2, 3, 4}, {2, 2}, dt);
    put_(x, idx, src, true);
    EXPECT_EQ(to_vec(x), (std::vector<double>{0, 7, 0, 0, 3, 0})) << name(dt);
    Tensor y = zeros({2, 3}, dt);
    put_(y, idx, src, false);
    EXPECT_EQ(to_vec(y), (std::vector<double>{0, 4, 0, 0, 3, 0})) << name(dt);
  }
  // Non-contiguous destination: logical order.
  Tensor base = zeros({3, 2});
  Tensor xt = base.t();  // [2, 3]
  put_(xt, from_i64({1, 3}), from_vec({5, 6}, {2}, DType::Float32));
  EXPECT_EQ(to_vec(xt), (std::vector<double>{0, 5, 0, 6, 0, 0}));
  // Bad index: nothing written.
  Tensor z = zeros({4});
  EXPECT_THROW(put_(z, from_i64({0, 1, 4}), from_vec({1, 1, 1}, {3}, DType::Float32)), IndexError);
  EXPECT_EQ(to_vec(z), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_THROW(put_(z, from_i64({0, 1}), from_vec({1}, {1}, DType::Float32)), ValueError);
  EXPECT_THROW(put_(z, from_i64({0}), from_vec({1}, {1}, DType::Float64)), TypeError);
}

namespace {
// gather reference: out[c] = x[c with c[dim] = idx[c]].
std::vector<double> gather_ref(const std::vector<double>& x, const Shape& xs, int dim,
                               const std::vector<int64_t>& idx, const Shape& is) {
  std::vector<double> out;
  for (const Shape& c : coords(is)) {
    Shape xc = c;
    xc[size_t(dim)] = idx[size_t(linear(c, is))];
    out.push_back(x[size_t(linear(xc, xs))]);
  }
  return out;
}
}  // namespace

TEST(Gather, DimsDtypesNonContiguous) {
  std::mt19937 rng(2);
  const Shape xs = {3, 4, 5};
  const std::vector<double> base = random_vec(60, rng);
  for (DType dt : movement_dtypes()) {
    const std::vector<double> xv = roundtrip(base, dt);
    for (int dim = -3; dim < 3; ++dim) {
      const int d = (dim + 3) % 3;
      Shape is = {2, 3, 4};
      is[size_t(d)] = 6;  // larger than x along dim is fine
      std::uniform_int_distribution<int64_t> u(0, xs[size_t(d)] - 1);
      std::vector<int64_t> iv(static_cast<size_t>(is[0] * is[1] * is[2]));
      for (auto& v : iv) v = u(rng);
      Tensor out = gather(from_vec(xv, xs, dt), dim, from_i64(iv, is));
      EXPECT_EQ(out.sizes(), is);
      EXPECT_EQ(to_vec(out), gather_ref(xv, xs, d, iv, is)) << name(dt) << " dim " << dim;
    }
  }
  // Non-contiguous x and index.
  std::vector<double> xv = random_vec(60, rng);
  Tensor x = from_vec(xv, {5, 4, 3}).permute({2, 1, 0});  // [3, 4, 5]
  std::vector<double> xc = to_vec(x);
  Tensor idx = from_i64({0, 1, 2, 3, 2, 1, 0, 3, 3, 3, 1, 1}, {4, 3}).t();  // [3, 4] non-contiguous
  Tensor out = gather(x.select(2, 1), 1, idx);
  std::vector<double> x2;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) x2.push_back(xc[size_t(i * 20 + j * 5 + 1)]);
  EXPECT_EQ(to_vec(out), gather_ref(x2, {3, 4}, 1, to_i64(idx), {3, 4}));
}

TEST(Gather, Errors) {
  Tensor x = arange(0, 6).reshape({2, 3});
  try {
    gather(x, 1, from_i64({0, 3}, {1, 2}));
    FAIL();
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("index 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("size 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gather(x, 1, from_i64({-1}, {1, 1})), IndexError);  // gather does not wrap
  EXPECT_THROW(gather(x, 1, from_i64({0}, {1})), ValueError);      // rank mismatch
  EXPECT_THROW(gather(x, 1, from_i64({0, 0, 0}, {3, 1})), ValueError);
  EXPECT_THROW(gather(x, 2, from_i64({0}, {1, 1})), IndexError);
  EXPECT_THROW(gather(x, 1, from_vec({0}, {1, 1})), TypeError);
  EXPECT_EQ(gather(x, 0, empty({0, 3}, DType::Int64)).sizes(), (Shape{0, 3}));
  // 0-dim input with 0-dim index.
  EXPECT_EQ(gather(scalar_tensor(7, DType::Float32), 0, scalar_tensor(0, DType::Int64)).item<double>(), 7);
}

namespace {
// scatter / scatter_add reference on a [R, C] tensor, in index order.
void scatter_ref(std::vector<double>& x, const Shape& xs, int dim, const std::vector<int64_t>& idx,
                 const Shape& is, const std::vector<double>& src, const Shape& ss, bool add) {
  for (const Shape& c : coords(is)) {
    Shape xc = c;
    xc[size_t(dim)] = idx[size_t(linear(c, is))];
    double& dst = x[size_t(linear(xc, xs))];
    const double v = src[size_t(linear(c, ss))];
    dst = add ? dst + v : v;
  }
}
}  // namespace

TEST(Scatter, SrcValueAddDuplicates) {
  std::mt19937 rng(3);
  for (DType dt : {DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::BFloat16,
                   DType::Float16, DType::Int8, DType::Complex128}) {
    for (int dim = -2; dim < 2; ++dim) {
      const int d = (dim + 2) % 2;
      const Shape xs = {4, 5}, ss = {5, 6};
      Shape is = {3, 4};
      std::uniform_int_distribution<int64_t> u(0, xs[size_t(d)] - 1);
      std::vector<int64_t> iv(12);
      for (auto& v : iv) v = u(rng);  // duplicates likely
      const std::vector<double> xv = roundtrip(random_vec(20, rng, -5, 5), dt);
      const std::vector<double> sv = roundtrip(random_vec(30, rng, -5, 5), dt);
      Tensor src = from_vec(sv, ss, dt);
      Tensor idx = from_i64(iv, is);
      // scatter_add: duplicates sum.
      std::vector<double> ref = xv;
      scatter_ref(ref, xs, d, iv, is, sv, ss, true);
      EXPECT_EQ(to_vec(scatter_add(from_vec(xv, xs, dt), dim, idx, src)), ref) << name(dt) << dim;
      // scatter: last write wins (kiln writes in index order).
      ref = xv;
      scatter_ref(ref, xs, d, iv, is, sv, ss, false);
      EXPECT_EQ(to_vec(scatter(from_vec(xv, xs, dt), dim, idx, src)), ref) << name(dt) << dim;
      // scalar value.
      ref = xv;
      scatter_ref(ref, xs, d, iv, is, std::vector<double>(30, 3.0), ss, false);
      EXPECT_EQ(to_vec(scatter(from_vec(xv, xs, dt), dim, idx, Scalar(int64_t(3)))), ref) << name(dt) << dim;
    }
  }
}

TEST(Scatter, NonContiguousAndErrorsWriteNothing) {
  Tensor base = zeros({5, 4});
  Tensor x = base.t();                                                // [4, 5] non-contiguous destination
  Tensor src = arange(1, 13, 1, DType::Float32).reshape({4, 3}).t();  // [3, 4] non-contiguous
  Tensor idx = from_i64({0, 1, 2, 3, 3, 2, 1, 0}, {2, 4});
  scatter_add_(x, 0, idx, src);
  std::vector<double> ref(20, 0.0);
  scatter_ref(ref, {4, 5}, 0, to_i64(idx), {2, 4}, to_vec(src), {3, 4}, true);
  EXPECT_EQ(to_vec(x), ref);
  // Out of range anywhere: nothing written.
  Tensor y = zeros({3, 3});
  EXPECT_THROW(scatter_(y, 1, from_i64({0, 1, 3}, {1, 3}), ones({1, 3})), IndexError);
  EXPECT_THROW(scatter_add_(y, 1, from_i64({0, 1, -1}, {1, 3}), ones({1, 3})), IndexError);
  EXPECT_EQ(to_vec(y), std::vector<double>(9, 0.0));
  EXPECT_THROW(scatter_(y, 1, from_i64({0}, {1, 1}), ones({1, 1}, DType::Float64)), TypeError);
  EXPECT_THROW(scatter_(y, 1, from_i64({0, 0}, {1, 2}), ones({1, 1})), ValueError);  // index larger than src
  EXPECT_THROW(scatter_(y, 1, from_i64({0, 0, 0, 0}, {4, 1}), ones({4, 1})), ValueError);     // larger than self
  // Empty index: no-op.
  scatter_(y, 0, empty({0, 3}, DType::Int64), ones({0, 3}));
  EXPECT_EQ(to_vec(y), std::vector<double>(9, 0.0));
  // In-place scatter with src aliasing self.
  Tensor z = arange(0, 4, 1, DType::Float32);
  scatter_(z, 0, from_i64({3, 2, 1, 0}), z);
  EXPECT_EQ(to_vec(z), (std::vector<double>{3, 2, 1, 0}));
}

TEST(IndexSelect, DtypesDimsNonContiguous) {
  std::mt19937 rng(4);
  const std::vector<double> base = random_vec(24, rng);
  for (DType dt : movement_dtypes()) {
    const std::vector<double> xv = roundtrip(base, dt);
    const Shape xs = {2, 3, 4};
    for (int dim = -3; dim < 3; ++dim) {
      const int d = (dim + 3) % 3;
      std::vector<int64_t> iv = {xs[size_t(d)] - 1, 0, 1, 0};
      Tensor out = index_select(from_vec(xv, xs, dt), dim, from_i64(iv));
      Shape os = xs;
      os[size_t(d)] = 4;
      ASSERT_EQ(out.sizes(), os);
      std::vector<double> ref;
      for (const Shape& c : coords(os)) {
        Shape xc = c;
        xc[size_t(d)] = iv[size_t(c[size_t(d)])];
        ref.push_back(xv[size_t(linear(xc, xs))]);
      }
      EXPECT_EQ(to_vec(out), ref) << name(dt) << " dim " << dim;
    }
  }
  // Non-contiguous x and index (every other element).
  Tensor x = arange(0, 24, 1, DType::Float32).reshape({4, 6}).t();  // [6, 4]
  Tensor idx = from_i64({5, 9, 0, 9, 2, 9}).slice(0, 0, 6, 2);      // [5, 0, 2]
  std::vector<double> ref;
  for (int64_t r : {5, 0, 2})
    for (int c = 0; c < 4; ++c) ref.push_back(double(c * 6 + r));
  EXPECT_EQ(to_vec(index_select(x, 0, idx)), ref);
  // Errors and empties.
  EXPECT_THROW(index_select(x, 0, from_i64({6})), IndexError);
  EXPECT_THROW(index_select(x, 0, from_i64({-1})), IndexError);
  EXPECT_THROW(index_select(x, 0, from_i64({0}, {1, 1})), ValueError);
  EXPECT_THROW(index_select(x, 2, from_i64({0})), IndexError);
  EXPECT_EQ(index_select(x, 1, empty({0}, DType::Int64)).sizes(), (Shape{6, 0}));
  EXPECT_EQ(index_select(x, 0, scalar_tensor(1, DType::Int64)).sizes(), (Shape{1, 4}));
}

TEST(IndexAdd, AlphaDuplicatesErrors) {
  for (DType dt :
       {DType::Float32, DType::Float64, DType::Int64, DType::Int16, DType::BFloat16, DType::Complex64}) {
    for (int dim : {0, 1, -1}) {
      const int d = dim < 0 ? 1 : dim;
      Tensor x = ones({3, 4}, dt);
      std::vector<int64_t> iv = {2, 0, 2};
      Shape ss = {3, 4};
      ss[size_t(d)] = 3;
      Tensor src = arange(0, ss[0] * ss[1], 1, dt).reshape(ss);
      const bool integral = is_integral(dt, false);
      Scalar alpha = integral ? Scalar(int64_t(2)) : Scalar(0.5);
      Tensor out = index_add(x, dim, from_i64(iv), src, alpha);
      std::vector<double> ref(12, 1.0);
      const std::vector<double> sv = to_vec(src);
      for (const Shape& c : coords(ss)) {
        Shape xc = c;
        xc[size_t(d)] = iv[size_t(c[size_t(d)])];
        ref[size_t(linear(xc, {3, 4}))] += sv[size_t(linear(c, ss))] * alpha.to_double();
      }
      EXPECT_EQ(to_vec(out), ref) << name(dt) << " dim " << dim;
      EXPECT_EQ(to_vec(x), std::vector<double>(12, 1.0));  // out-of-place
    }
  }
  Tensor x = zeros({3, 2});
  EXPECT_THROW(index_add_(x, 0, from_i64({0, 3}), ones({2, 2})), IndexError);
  EXPECT_EQ(to_vec(x), std::vector<double>(6, 0.0));
  EXPECT_THROW(index_add_(x, 0, from_i64({0, 1}), ones({2, 3})), ValueError);
  EXPECT_THROW(index_add_(x, 0, from_i64({0, 1}), ones({3, 2})), ValueError);
  EXPECT_THROW(index_add_(x, 0, from_i64({0}), ones({1, 2}, DType::Float64)), TypeError);
  Tensor xi = zeros({2}, DType::Int32);
  EXPECT_THROW(index_add_(xi, 0, from_i64({0}), ones({1}, DType::Int32), Scalar(0.5)), TypeError);
  // Non-contiguous self.
  Tensor base = zeros({4, 3});
  Tensor xt = base.t();  // [3, 4]
  index_add_(xt, 1, from_i64({3, 3}), ones({3, 2}));
  EXPECT_EQ(to_vec(base.select(0, 3)), (std::vector<double>{2, 2, 2}));
}
