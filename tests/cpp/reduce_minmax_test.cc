// max/min/amax/amin/argmax/argmin against double references.
#include "reduce_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {
// NaN wins; otherwise the first occurrence of the best value.
int64_t ref_arg(const std::vector<double>& g, bool is_max) {
  int64_t best = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i])) return int64_t(i);
    if (is_max ? g[i] > g[size_t(best)] : g[i] < g[size_t(best)]) best = int64_t(i);
  }
  return best;
}
double ref_ext(const std::vector<double>& g, bool is_max) { return g[size_t(ref_arg(g, is_max))]; }
}  // namespace

TEST(ReduceMinMax, DtypesDimsLayouts) {
  for (DType dt : all_real_dtypes()) {
    for (const Tensor& x : inputs_345(dt, 3)) {  // small integers: many ties
      const std::string what = name(dt);
      for (bool is_max : {true, false}) {
        // Whole tensor.
        const Tensor w = is_max ? max(x) : min(x);
        EXPECT_EQ(w.dim(), 0);
        EXPECT_EQ(w.dtype(), dt);
        expect_close(w, {ref_ext(values(x), is_max)}, 1, what);
        const Tensor aw = is_max ? argmax(x) : argmin(x);
        EXPECT_EQ(aw.dtype(), DType::Int64);
        EXPECT_EQ(aw.item<int64_t>(), ref_arg(values(x), is_max)) << what;
        EXPECT_EQ((is_max ? argmax(x, std::nullopt, true) : argmin(x, std::nullopt, true)).sizes(), (Shape{1, 1, 1}));
        for (int d : {0, 1, 2, -1}) {
          for (bool keepdim : {false, true}) {
            const ValuesIndices vi = is_max ? max(x, d, keepdim) : min(x, d, keepdim);
            const Tensor ai = is_max ? argmax(x, d, keepdim) : argmin(x, d, keepdim);
            const DimList dl = std::vector<int>{d};
            expect_close(vi.values, ref_reduce(x, dl, [&](const auto& g) { return ref_ext(g, is_max); }), 1, what);
            const auto ri = ref_reduce(x, dl, [&](const auto& g) { return double(ref_arg(g, is_max)); });
            expect_close(vi.indices, ri, 1, what + " indices");
            expect_close(ai, ri, 1, what + " arg");
            EXPECT_EQ(vi.values.sizes(), ai.sizes());
          }
        }
        for (const DimList& dims : dim_sets()) {
          const Tensor a = is_max ? amax(x, dims, true) : amin(x, dims, true);
          EXPECT_EQ(a.dtype(), dt);
          expect_close(a, ref_reduce(x, dims, [&](const auto& g) { return ref_ext(g, is_max); }), 1,
                       what + dims_str(dims));
        }
      }
    }
  }
}

TEST(ReduceMinMax, NaNPropagatesWithItsIndex) {
  std::vector<float> v = {1, 5, NAN, 7, 0, -INFINITY, 2, INFINITY};
  const Tensor x = from_buffer_copy(v.data(), {2, 4}, DType::Float32);
  EXPECT_TRUE(std::isnan(max(x).item<float>()));
  EXPECT_TRUE(std::isnan(min(x).item<float>()));
  EXPECT_EQ(argmax(x).item<int64_t>(), 2);
  EXPECT_EQ(argmin(x).item<int64_t>(), 2);
  const ValuesIndices r = max(x, 1);
  expect_close(r.values, {NAN, INFINITY});
  expect_close(r.indices, {2, 3});
  expect_close(min(x, 1).values, {NAN, -INFINITY});
  expect_close(min(x, 1).indices, {2, 1});
  expect_close(amax(x, std::vector<int>{0}), {1, 5, NAN, INFINITY});
  expect_close(argmin(x, 0), {1, 1, 0, 0});
}

TEST(ReduceMinMax, LongRunsSplitKeepFirstOccurrence) {
  // Split across threads: ties in both halves must report the first index.
  const int64_t n = 400001;
  Tensor x = zeros({n}, DType::Float32);
  x.select(0, 123).fill_(Scalar(3.0));
  x.select(0, 300000).fill_(Scalar(3.0));
  x.select(0, 200).fill_(Scalar(-1.0));
  x.select(0, 399999).fill_(Scalar(-1.0));
  EXPECT_EQ(argmax(x).item<int64_t>(), 123);
  EXPECT_EQ(argmin(x).item<int64_t>(), 200);
  x.select(0, 350000).fill_(Scalar(NAN));
  EXPECT_EQ(argmax(x).item<int64_t>(), 350000);
  // Column layout, long dim 0.
  const Tensor c = random_tensor({100003, 3}, DType::Float64, 4);
  const DimList d0 = std::vector<int>{0};
  expect_close(argmax(c, 0), ref_reduce(c, d0, [](const auto& g) { return double(ref_arg(g, true)); }));
  expect_close(amin(c, d0), ref_reduce(c, d0, [](const auto& g) { return ref_ext(g, false); }));
  // Flattened argmax over a transposed tensor indexes its logical (row-major) order.
  const Tensor t = random_tensor({300, 400}, DType::Float32, 5).t();
  EXPECT_EQ(argmax(t).item<int64_t>(), ref_arg(values(t), true));
}

TEST(ReduceMinMax, EmptyAndErrors) {
  const Tensor e = empty({0, 3}, DType::Float32);
  EXPECT_THROW(max(e), ValueError);
  EXPECT_THROW(argmin(e), ValueError);
  EXPECT_THROW(max(e, 0), IndexError);
  EXPECT_THROW(amax(e, std::vector<int>{0}), IndexError);
  EXPECT_THROW(amin(e), IndexError);
  EXPECT_THROW(argmax(e, 0), IndexError);
  // Reducing a non-empty dim of an empty tensor is fine.
  const ValuesIndices r = max(e, 1);
  EXPECT_EQ(r.values.sizes(), (Shape{0}));
  EXPECT_EQ(amax(e, std::vector<int>{1}).sizes(), (Shape{0}));
  const Tensor z = empty({2}, DType::Complex64);
  EXPECT_THROW(max(z), TypeError);
  EXPECT_THROW(argmax(z), TypeError);
  EXPECT_THROW(amax(random_tensor({2}, DType::Float32).to(DType::Float8_e4m3fn)), TypeError);
  EXPECT_THROW(max(random_tensor({2, 3}, DType::Float32), 2), IndexError);
  // 0-dim
  const Tensor s = scalar_tensor(Scalar(4.0), DType::Float64);
  EXPECT_EQ(argmax(s).item<int64_t>(), 0);
  EXPECT_EQ(max(s, 0).indices.item<int64_t>(), 0);
  EXPECT_DOUBLE_EQ(max(s, -1).values.item<double>(), 4.0);
}
