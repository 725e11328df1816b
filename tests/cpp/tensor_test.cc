#include <gtest/gtest.h>

#include "kiln/kiln.h"

using namespace kiln;

TEST(Tensor, FactoriesAndViews) {
  Tensor a = arange(0, 24).reshape({2, 3, 4});
  EXPECT_EQ(a.dtype(), DType::Int64);
  EXPECT_EQ(a.sizes(), (Shape{2, 3, 4}));
  EXPECT_TRUE(a.is_contiguous());
  Tensor t = a.transpose(0, 2);
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.select(0, 1).select(0, 2).select(0, 1).item<int64_t>(), 12 + 8 + 1);
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.select(0, 3).select(0, 2).select(0, 1).item<int64_t>(), 12 + 8 + 3);
  EXPECT_THROW(t.view({24}), ValueError);
  EXPECT_EQ(t.reshape({24}).numel(), 24);
}
