// Sign and magnitude ops that keep integer dtypes: neg, abs, sign, relu. The
// kernels are the ops of ops/registry/unary.h.
#include "core/dense_layout.h"
#include "kiln/unary.h"
#include "ops/registry/all.h"
#include "ops/unary_common.h"
#include "ops/unary_grad.h"

namespace kiln {
namespace {

using unary_detail::check_dtype;
using unary_detail::check_inplace;
using unary_detail::inplace_recorded;
using unary_detail::recorded;

void check_neg(const Tensor& x, const char* op) {
  if (x.dtype() == DType::Bool)
    throw TypeError(std::string("[") + op +
                    "] negation of a bool tensor is not supported; use logical_not or ~ to invert a mask");
}

void check_sign(const Tensor& x, const char* op) {
  if (is_complex(x.dtype()))
    throw TypeError(std::string("[") + op + "] is not defined for complex tensors (dtype " + name(x.dtype()) +
                    "); use sgn");
  check_dtype(op, x.dtype(), kBoolSet | kIntSet | kFloatSet);
}

void check_relu(const Tensor& x, const char* op) {
  if (x.dtype() == DType::Bool) throw TypeError(std::string("[") + op + "] boolean inputs are not supported");
  check_dtype(op, x.dtype(), kIntSet | kFloatSet);
}

}  // namespace

Tensor neg(const Tensor& x) {
  check_neg(x, "neg");
  return recorded("neg", unary_detail::neg_grad, x, [&] {
    Tensor out = empty_following(x.sizes(), x.dtype(), x.device(), {&x});
    ops::neg(common_device("neg", {&x, &out}), x, out);
    return out;
  });
}
Tensor& neg_(Tensor& x) {
  check_neg(x, "neg_");
  check_inplace("neg_", x.dtype(), x);
  if (inplace_recorded("neg_", unary_detail::neg_grad, x, [](const Tensor& t) { return neg(t); })) return x;
  ops::neg(common_device("neg_", {&x}), x, x);
  return x;
}

Tensor abs(const Tensor& x) {
  return recorded("abs", unary_detail::abs_grad, x, [&] {
    Tensor out = empty_following(x.sizes(), to_real(x.dtype()), x.device(), {&x});
    ops::abs(common_device("abs", {&x, &out}), x, out);
    return out;
  });
}
Tensor& abs_(Tensor& x) {
  check_inplace("abs_", to_real(x.dtype()), x);
  if (inplace_recorded("abs_", unary_detail::abs_grad, x, [](const Tensor& t) { return abs(t); })) return x;
  ops::abs(common_device("abs_", {&x}), x, x);
  return x;
}

Tensor sign(const Tensor& x) {
  check_sign(x, "sign");
  return recorded("sign", unary_detail::sign_grad, x, [&] {
    Tensor out = empty_following(x.sizes(), x.dtype(), x.device(), {&x});
    ops::sign(common_device("sign", {&x, &out}), x, out);
    return out;
  });
}
Tensor& sign_(Tensor& x) {
  check_inplace("sign_", x.dtype(), x);
  check_sign(x, "sign_");
  if (inplace_recorded("sign_", unary_detail::sign_grad, x, [](const Tensor& t) { return sign(t); }))
    return x;
  ops::sign(common_device("sign_", {&x}), x, x);
  return x;
}

Tensor relu(const Tensor& x) {
  check_relu(x, "relu");
  return recorded("relu", unary_detail::relu_grad, x, [&] {
    Tensor out = empty_following(x.sizes(), x.dtype(), x.device(), {&x});
    ops::relu(common_device("relu", {&x, &out}), x, out);
    return out;
  });
}
Tensor& relu_(Tensor& x) {
  check_inplace("relu_", x.dtype(), x);
  check_relu(x, "relu_");
  if (inplace_recorded("relu_", unary_detail::relu_grad, x, [](const Tensor& t) { return relu(t); }))
    return x;
  ops::relu(common_device("relu_", {&x}), x, x);
  return x;
}

}  // namespace kiln
