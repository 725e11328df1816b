// The dtype table and PyTorch's type promotion rules.
#include <gtest/gtest.h>

#include "kiln/kiln.h"

using namespace kiln;
using D = DType;

TEST(DType, Table) {
  EXPECT_EQ(itemsize(D::BFloat16), 2u);
  EXPECT_EQ(itemsize(D::Float8_e4m3fn), 1u);
  EXPECT_EQ(itemsize(D::Complex128), 16u);
  for (int i = 0; i < kNumDTypes; ++i) EXPECT_EQ(dtype_from_name(name(DType(i))), DType(i));
  EXPECT_EQ(dtype_from_name("half"), D::Float16);
  EXPECT_THROW(dtype_from_name("float7"), TypeError);
  EXPECT_TRUE(is_floating(D::Float8_e5m2));
  EXPECT_FALSE(is_floating(D::Complex64));
  EXPECT_TRUE(is_integral(D::Bool, true));
  EXPECT_FALSE(is_integral(D::Bool, false));
  EXPECT_FALSE(is_signed(D::UInt64));
}

// Expected values are torch.promote_types results (torch 2.x).
TEST(DType, PromoteTypes) {
  EXPECT_EQ(promote_types(D::UInt8, D::Int8), D::Int16);
  EXPECT_EQ(promote_types(D::UInt8, D::Int32), D::Int32);
  EXPECT_EQ(promote_types(D::Bool, D::UInt8), D::UInt8);
  EXPECT_EQ(promote_types(D::Int64, D::Float16), D::Float16);
  EXPECT_EQ(promote_types(D::Float16, D::BFloat16), D::Float32);
  EXPECT_EQ(promote_types(D::BFloat16, D::Float64), D::Float64);
  EXPECT_EQ(promote_types(D::Float64, D::Complex64), D::Complex128);
  EXPECT_EQ(promote_types(D::Float32, D::Complex64), D::Complex64);
  EXPECT_EQ(promote_types(D::Int64, D::Complex64), D::Complex64);
  EXPECT_EQ(promote_types(D::UInt16, D::Float32), D::Float32);
  EXPECT_EQ(promote_types(D::UInt16, D::Int16), D::Int32);  // torch refuses; kiln widens
  EXPECT_THROW(promote_types(D::UInt64, D::Int64), TypeError);
  EXPECT_THROW(promote_types(D::Float8_e4m3fn, D::Float32), TypeError);
  EXPECT_THROW(promote_types(D::Float8_e4m3fn, D::Float8_e5m2), TypeError);
  EXPECT_EQ(promote_types(D::Float8_e4m3fn, D::Float8_e4m3fn), D::Float8_e4m3fn);
}

// torch.result_type: scalars and 0-dim tensors only raise the category.
TEST(DType, ResultType) {
  auto rt = [](std::initializer_list<std::pair<D, Priority>> ops) {
    ResultType r;
    for (auto [d, p] : ops) r.add(d, p);
    return r.get();
  };
  using P = Priority;
  EXPECT_EQ(rt({{D::Int32, P::Dimensioned}, {D::Int64, P::Scalar}}), D::Int32);      // int32 + 1
  EXPECT_EQ(rt({{D::Int32, P::Dimensioned}, {D::Float32, P::Scalar}}), D::Float32);  // int32 + 1.0
  EXPECT_EQ(rt({{D::Float16, P::Dimensioned}, {D::Float32, P::Scalar}}), D::Float16);
  EXPECT_EQ(rt({{D::Float16, P::Dimensioned}, {D::Float64, P::ZeroDim}}), D::Float16);
  EXPECT_EQ(rt({{D::Int32, P::Dimensioned}, {D::Float64, P::ZeroDim}}), D::Float64);
  EXPECT_EQ(rt({{D::UInt8, P::Dimensioned}, {D::Int64, P::Scalar}}), D::UInt8);
  EXPECT_EQ(rt({{D::Bool, P::Dimensioned}, {D::Int64, P::Scalar}}), D::Int64);
  EXPECT_EQ(rt({{D::Float32, P::Dimensioned}, {D::Complex64, P::Scalar}}), D::Complex64);
  EXPECT_EQ(rt({{D::Float64, P::Dimensioned}, {D::Complex64, P::Scalar}}), D::Complex128);
  EXPECT_EQ(rt({{D::Int64, P::ZeroDim}, {D::Float32, P::Scalar}}), D::Float32);
  EXPECT_EQ(rt({{D::Int8, P::ZeroDim}, {D::Int64, P::Scalar}}), D::Int8);
  EXPECT_EQ(rt({{D::Int64, P::Scalar}, {D::Int64, P::Scalar}}), D::Int64);
  EXPECT_EQ(rt({{D::Float32, P::Scalar}}), D::Float32);
  EXPECT_THROW(ResultType().get(), ValueError);
}
