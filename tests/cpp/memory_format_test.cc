// Memory formats: channels-last strides, torch's rules for ambiguous strides
// (expected values written from torch 2.15's answers), layout-preserving
// copies and factories, and elementwise ops that keep a channels-last layout
// with values equal to the contiguous computation.
#include "kiln/memory_format.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

using namespace kiln;

namespace {

constexpr auto CF = MemoryFormat::Contiguous;
constexpr auto CL = MemoryFormat::ChannelsLast;
constexpr auto CL3 = MemoryFormat::ChannelsLast3d;
constexpr auto PF = MemoryFormat::Preserve;

// A view with the given sizes and strides over a zeroed buffer large enough.
Tensor strided(const Shape& size, const Shape& stride) { return zeros({1000}).as_strided(size, stride, 0); }

// Values 0.25 * (i - numel / 2) in row-major order, laid out in format f.
Tensor ramp(const Shape& shape, MemoryFormat f = CF, DType dtype = DType::Float32) {
  Tensor c = arange(0, shape_numel(shape, "test")).reshape(shape).to(DType::Float64);
  c = mul(sub(c, Scalar(double(c.numel() / 2))), Scalar(0.25)).to(dtype);
  return contiguous(c, f);
}

// Element-by-element equality of the logical values (any layouts); rtol allows
// the last-ulp differences between a SIMD contiguous path and the strided one.
void expect_same_values(const Tensor& got, const Tensor& want, double rtol = 0) {
  ASSERT_EQ(got.sizes(), want.sizes());
  const Tensor g = got.to(DType::Float64).contiguous(), w = want.to(DType::Float64).contiguous();
  const double* gp = g.data<double>();
  const double* wp = w.data<double>();
  for (int64_t i = 0; i < g.numel(); ++i)
    ASSERT_LE(std::abs(gp[i] - wp[i]), rtol * std::abs(wp[i]))
        << gp[i] << " vs " << wp[i] << " at flat index " << i;
}

}  // namespace

TEST(MemoryFormat, ChannelsLastStrides) {
  // [N, C, H, W] -> [H*W*C, 1, W*C, C]
  EXPECT_EQ(memory_format_strides(Shape{2, 3, 4, 5}, CL), (Shape{60, 1, 15, 3}));
  EXPECT_EQ(memory_format_strides(Shape{2, 3, 4, 5, 6}, CL3), (Shape{360, 1, 90, 18, 3}));
  EXPECT_EQ(memory_format_strides(Shape{2, 3, 4, 5}, CF), (Shape{60, 20, 5, 1}));
  // torch: raw size products, so a size-0 dim zeroes the strides above it.
  EXPECT_EQ(memory_format_strides(Shape{2, 0, 4, 5}, CL), (Shape{0, 1, 0, 0}));
  EXPECT_EQ(memory_format_strides(Shape{2, 3, 0, 5}, CL), (Shape{0, 1, 15, 3}));
  EXPECT_EQ(memory_format_strides(Shape{2, 1, 4, 5}, CL), (Shape{20, 1, 5, 1}));
  EXPECT_EQ(memory_format_strides(Shape{2, 3, 1, 1}, CL), (Shape{3, 1, 3, 3}));

  const Tensor e = empty({2, 3, 4, 5}, DType::Float32, Device{}, CL);
  EXPECT_EQ(e.stride_vec(), (Shape{60, 1, 15, 3}));
  EXPECT_FALSE(e.is_contiguous());
  EXPECT_TRUE(is_contiguous(e, CL));
  EXPECT_FALSE(is_contiguous(e, CL3));
  EXPECT_EQ(e.storage()->nbytes(), size_t(120 * 4));
  EXPECT_EQ(empty({2, 3, 4, 5, 6}, DType::Float32, Device{}, CL3).stride_vec(), (Shape{360, 1, 90, 18, 3}));
}

TEST(MemoryFormat, RankAndPreserveErrors) {
  // torch: "required rank 4 tensor to use channels_last format".
  EXPECT_THROW(empty({2, 3, 4}, DType::Float32, Device{}, CL), ValueError);
  EXPECT_THROW(empty({2, 3, 4, 5}, DType::Float32, Device{}, CL3), ValueError);
  EXPECT_THROW(empty({2, 3, 4, 5}, DType::Float32, Device{}, PF), ValueError);
  EXPECT_THROW(contiguous(ramp({2, 3, 4}), CL), ValueError);
  EXPECT_THROW(contiguous(ramp({2, 3, 4, 5}), CL3), ValueError);
  EXPECT_THROW(clone(ramp({2, 3, 4}), CL), ValueError);
  EXPECT_THROW(empty_like(ramp({2, 3, 4}), CL), ValueError);
  try {
    contiguous(ramp({2, 3, 4}), CL);
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("[clone] required rank 4"), std::string::npos) << e.what();
  }
  // contiguous(preserve): itself when contiguous, else torch's error.
  const Tensor c = ramp({2, 3});
  EXPECT_EQ(contiguous(c, PF).data_ptr(), c.data_ptr());
  EXPECT_THROW(contiguous(c.t(), PF), ValueError);
  EXPECT_TRUE(is_contiguous(c, PF));
  // A format of another rank is simply false.
  EXPECT_FALSE(is_contiguous(ramp({2, 3, 4}), CL));
  EXPECT_FALSE(is_contiguous(ramp({2, 3, 4, 5}), CL3));
}

// Expected values: torch 2.15, torch._prims_common.suggest_memory_format and
// Tensor.is_contiguous(memory_format=...) on as_strided views.
TEST(MemoryFormat, AmbiguousStridesAsTorch) {
  struct Case {
    Shape size, stride;
    MemoryFormat suggest;
    bool is_cl, is_c;
  };
  const Case cases[] = {
      {{4, 1, 1, 1}, {1, 1, 1, 1}, CF, true, true},    // N111 contiguous: NCHW by default
      {{4, 1, 1, 1}, {7, 7, 7, 7}, CF, false, false},  // N11W sliced on W
      {{1, 3, 1, 5}, {15, 5, 5, 1}, CF, false, true},
      {{1, 5, 1, 3}, {15, 1, 5, 5}, CF, true, false},  // 1C1W transposed: not channels last
      {{2, 3, 4, 5}, {60, 1, 15, 3}, CL, true, false},
      {{2, 3, 4, 5}, {60, 0, 15, 3}, CF, false, false},  // no channel stride
      {{2, 3, 4, 5}, {60, 20, 5, 1}, CF, false, true},
      {{1, 3, 4, 5}, {60, 1, 15, 3}, CL, true, false},
      {{3, 1, 2, 2}, {4, 1, 2, 1}, CL, true, true},
      {{3, 1, 2, 2}, {4, 4, 2, 1}, CF, true, true},
      {{2, 3, 4, 5}, {120, 1, 30, 6}, CL, false, false},  // channels-last order, not dense
      {{2, 3, 4, 5}, {1, 2, 12, 48}, CF, false, false},
      {{2, 3, 4, 5}, {60, 1, 3, 12}, CF, false, false},
      {{2, 3, 1, 5}, {15, 1, 15, 3}, CL, true, false},
      {{2, 3, 4, 1}, {12, 1, 3, 3}, CL, true, false},
      // size 0: not channels-last ordered. (torch calls any empty tensor
      // contiguous; kiln's is_contiguous() checks its strides all the same.)
      {{0, 3, 4, 5}, {60, 1, 15, 3}, CF, true, false},
  };
  for (const Case& c : cases) {
    const Tensor t = strided(c.size, c.stride);
    SCOPED_TRACE(shape_to_string(c.size) + " @ " + shape_to_string(c.stride));
    EXPECT_EQ(suggest_memory_format(t), c.suggest);
    EXPECT_EQ(is_contiguous(t, CL), c.is_cl);
    EXPECT_EQ(t.is_contiguous(), c.is_c);
  }
  // exact match: channels-last order with other strides is not channels last.
  EXPECT_EQ(suggest_memory_format(strided({2, 3, 4, 5}, {120, 1, 30, 6}), true), CF);
  EXPECT_EQ(suggest_memory_format(strided({2, 3, 4, 5}, {60, 1, 15, 3}), true), CL);
  const Tensor t3 = strided({2, 3, 4, 5, 6}, {360, 1, 90, 18, 3});
  EXPECT_EQ(suggest_memory_format(t3), CL3);
  EXPECT_TRUE(is_contiguous(t3, CL3));
}

// Output strides torch gives exp(t) and t.clone() for those views.
TEST(MemoryFormat, PreservedLayoutsAsTorch) {
  struct Case {
    Shape size, stride, unary, clone;
  };
  const Case cases[] = {
      {{4, 1, 1, 1}, {7, 7, 7, 7}, {1, 1, 1, 1}, {1, 1, 1, 1}},
      {{1, 5, 1, 3}, {15, 1, 5, 5}, {15, 1, 15, 5}, {15, 1, 5, 5}},
      {{2, 3, 4, 5}, {60, 1, 15, 3}, {60, 1, 15, 3}, {60, 1, 15, 3}},
      {{2, 3, 4, 5}, {60, 0, 15, 3}, {60, 20, 5, 1}, {60, 20, 5, 1}},
      {{3, 1, 2, 2}, {4, 1, 2, 1}, {4, 4, 2, 1}, {4, 1, 2, 1}},
      {{2, 3, 4, 5}, {120, 1, 30, 6}, {60, 1, 15, 3}, {60, 1, 15, 3}},
      {{2, 3, 4, 5}, {1, 2, 12, 48}, {1, 2, 6, 24}, {1, 2, 6, 24}},
      {{2, 3, 4, 5}, {60, 1, 3, 12}, {60, 1, 3, 12}, {60, 1, 3, 12}},
      {{3, 4}, {1, 3}, {1, 3}, {1, 3}},  // a transposed matrix stays transposed
      {{6, 2}, {1, 12}, {1, 6}, {1, 6}},
  };
  for (const Case& c : cases) {
    const Tensor t = strided(c.size, c.stride);
    SCOPED_TRACE(shape_to_string(c.size) + " @ " + shape_to_string(c.stride));
    EXPECT_EQ(exp(t).stride_vec(), c.unary);
    EXPECT_EQ(t.clone().stride_vec(), c.clone);
    EXPECT_EQ(empty_like(t).stride_vec(), c.clone);
    EXPECT_EQ(t.to(DType::Float64).stride_vec(), c.clone);
    EXPECT_TRUE(clone(t, CF).is_contiguous());
  }
}

TEST(MemoryFormat, CopiesKeepChannelsLast) {
  const Tensor c = ramp({2, 3, 4, 5});
  const Tensor x = contiguous(c, CL);
  EXPECT_EQ(x.stride_vec(), (Shape{60, 1, 15, 3}));
  expect_same_values(x, c);
  EXPECT_EQ(contiguous(x, CL).data_ptr(), x.data_ptr());  // already so: itself
  EXPECT_TRUE(x.contiguous().is_contiguous());
  expect_same_values(x.contiguous(), c);

  EXPECT_EQ(x.clone().stride_vec(), x.stride_vec());
  expect_same_values(x.clone(), c);
  EXPECT_TRUE(clone(x, CF).is_contiguous());
  EXPECT_EQ(clone(c, CL).stride_vec(), x.stride_vec());
  EXPECT_EQ(x.to(DType::Float64).stride_vec(), x.stride_vec());
  expect_same_values(x.to(DType::Float64), c);
  EXPECT_EQ(to(x, DType::Float32, CL).data_ptr(), x.data_ptr());
  EXPECT_TRUE(to(x, DType::Float32, CF).is_contiguous());
  EXPECT_EQ(to(c, DType::Float32, CL).stride_vec(), x.stride_vec());
  EXPECT_EQ(x.to(Device{}).data_ptr(), x.data_ptr());

  EXPECT_EQ(empty_like(x).stride_vec(), x.stride_vec());
  EXPECT_TRUE(empty_like(x, CF).is_contiguous());
  EXPECT_EQ(empty_like(c, CL).stride_vec(), x.stride_vec());
  const Tensor z = zeros_like(x);
  EXPECT_EQ(z.stride_vec(), x.stride_vec());
  expect_same_values(z, zeros({2, 3, 4, 5}));
  // A non-dense channels-last-ordered view gives a dense channels-last copy.
  const Tensor s = ramp({2, 3, 4, 10}, CL).slice(3, 0, 10, 2);
  EXPECT_EQ(s.clone().stride_vec(), (Shape{60, 1, 15, 3}));
  expect_same_values(s.clone(), s);

  const Tensor x3 = contiguous(ramp({2, 3, 2, 3, 4}), CL3);
  EXPECT_EQ(x3.clone().stride_vec(), (Shape{72, 1, 36, 12, 3}));
  expect_same_values(x3.clone(), ramp({2, 3, 2, 3, 4}));
}

TEST(MemoryFormat, UnaryKeepsChannelsLast) {
  const Tensor c = ramp({2, 3, 4, 5});
  const Tensor x = contiguous(c, CL);
  for (const auto& [name, f] :
       std::initializer_list<std::pair<const char*, Tensor (*)(const Tensor&)>>{{"exp", &exp},
                                                                                {"neg", &neg},
                                                                                {"abs", &abs},
                                                                                {"sign", &sign},
                                                                                {"relu", &relu},
                                                                                {"isnan", &isnan}}) {
    SCOPED_TRACE(name);
    const Tensor y = f(x);
    EXPECT_EQ(y.stride_vec(), (Shape{60, 1, 15, 3}));
    expect_same_values(y, f(c), 1e-6);
    EXPECT_TRUE(f(c).is_contiguous());  // a contiguous input keeps a contiguous result
  }
  // Integer input to a float op: the float32 result is channels last too.
  const Tensor xi = contiguous(c.to(DType::Int64), CL);
  EXPECT_EQ(sqrt(abs(xi)).stride_vec(), (Shape{60, 1, 15, 3}));
  expect_same_values(sqrt(abs(xi)), sqrt(abs(c.to(DType::Int64))), 1e-6);
  // float64 and bfloat16 (kernels with other fast paths).
  for (DType d : {DType::Float64, DType::BFloat16}) {
    const Tensor cd = ramp({2, 3, 4, 5}, CF, d);
    const Tensor y = tanh(contiguous(cd, CL));
    EXPECT_EQ(y.stride_vec(), (Shape{60, 1, 15, 3}));
    expect_same_values(y, tanh(cd), 1e-2);
  }
}

TEST(MemoryFormat, BinaryKeepsChannelsLast) {
  const Tensor ca = ramp({2, 3, 4, 5});
  const Tensor cb = mul(ramp({2, 3, 4, 5}), Scalar(-0.5));
  const Tensor a = contiguous(ca, CL), b = contiguous(cb, CL);
  const Shape cl{60, 1, 15, 3}, cf{60, 20, 5, 1};
  EXPECT_EQ(add(a, b).stride_vec(), cl);
  expect_same_values(add(a, b), add(ca, cb));
  expect_same_values(mul(a, b), mul(ca, cb));
  // torch: the first operand's layout decides a tie between layouts.
  EXPECT_EQ(add(a, cb).stride_vec(), cl);
  EXPECT_EQ(add(cb, a).stride_vec(), cf);
  expect_same_values(add(cb, a), add(cb, ca));
  // A lower-rank broadcast operand (a per-channel bias) keeps channels last,
  // on either side; so do numbers and 0-dim tensors.
  const Tensor bias = ramp({3, 1, 1});
  EXPECT_EQ(add(a, bias).stride_vec(), cl);
  EXPECT_EQ(add(bias, a).stride_vec(), cl);
  expect_same_values(add(bias, a), add(bias, ca));
  EXPECT_EQ(add(a, ramp({5})).stride_vec(), cl);
  EXPECT_EQ(add(a, ramp({2, 1, 1, 1})).stride_vec(), cl);
  EXPECT_EQ(add(a, ramp({1, 3, 1, 1})).stride_vec(), cl);
  EXPECT_EQ(add(a, ramp({3, 4, 5})).stride_vec(), cl);
  EXPECT_EQ(mul(a, Scalar(2.0)).stride_vec(), cl);
  EXPECT_EQ(mul(a, scalar_tensor(Scalar(2.0), DType::Float32)).stride_vec(), cl);
  expect_same_values(mul(a, Scalar(2.0)), mul(ca, Scalar(2.0)));
  // Comparisons and where.
  const Tensor gt0 = gt(a, Scalar(0.0));
  EXPECT_EQ(gt0.stride_vec(), cl);
  expect_same_values(gt0, gt(ca, Scalar(0.0)));
  EXPECT_EQ(where(gt0, a, Scalar(0.0)).stride_vec(), cl);
  expect_same_values(where(gt0, a, Scalar(0.0)), where(gt(ca, Scalar(0.0)), ca, Scalar(0.0)));
  // Contiguous operands keep the contiguous result.
  EXPECT_EQ(add(ca, cb).stride_vec(), cf);
  EXPECT_EQ(add(ca, bias).stride_vec(), cf);
  // In place and out= keep the destination they are given.
  Tensor d = a.clone();
  add_(d, bias);
  EXPECT_EQ(d.stride_vec(), cl);
  expect_same_values(d, add(ca, bias));
  // Reductions are untouched: a sum over C is contiguous.
  EXPECT_TRUE(sum(a, std::vector<int>{1}).is_contiguous());
}

TEST(MemoryFormat, Autograd) {
  // Gradients flow through layout-preserving copies and channels-last ops.
  Tensor x = contiguous(ramp({2, 3, 2, 2}), CL);
  x.requires_grad_(true);
  Tensor y = mul(x.clone(), x);
  EXPECT_EQ(y.stride_vec(), x.stride_vec());
  sum(y).backward();
  expect_same_values(x.grad(), mul(ramp({2, 3, 2, 2}), Scalar(2.0)));
}
