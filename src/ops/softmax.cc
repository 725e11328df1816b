// softmax / log_softmax front-ends: validate the dtypes, wrap the dim, cast
// the input to the result dtype where needed, allocate and call the op
// (ops/registry/softmax.h).
#include "kiln/softmax.h"

#include <string>

#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/error.h"
#include "kiln/reduce.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

const char* op_name(bool log) { return log ? "log_softmax" : "softmax"; }

bool softmax_dtype(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64;
}

DType result_dtype(const Tensor& x, std::optional<DType> dtype, const char* op) {
  const DType rd = dtype.value_or(x.dtype());
  if (!softmax_dtype(rd)) {
    const std::string what =
        dtype ? std::string("dtype=") + name(rd) : std::string("input dtype ") + name(rd);
    throw TypeError(std::string("[") + op + "] unsupported " + what +
                    "; expected float16, bfloat16, float32 or float64 (pass dtype= to cast)");
  }
  if (is_complex(x.dtype()) || is_fp8(x.dtype()))
    throw TypeError(std::string("[") + op + "] unsupported input dtype " + name(x.dtype()));
  return rd;
}

// Runs the op on x (cast by the caller) into out; a 0-d tensor is one row.
void run(const Tensor& x, int dim, const Tensor& out, bool log) {
  const char* op = op_name(log);
  const Device device = common_device(op, {&x, &out});
  if (x.numel() == 0) return;
  const bool scalar = x.dim() == 0;
  const int d = wrap_dim(dim, scalar ? 1 : x.dim(), op);
  const Tensor xv = scalar ? x.view({1}) : x;
  const Tensor yv = out.dim() == 0 ? out.view({1}) : out;
  (log ? ops::log_softmax : ops::softmax)(device, xv, d, yv);
}

Tensor softmax_impl(const Tensor& x, int dim, std::optional<DType> dtype, bool log) {
  const char* op = op_name(log);
  const DType rd = result_dtype(x, dtype, op);
  const int d = wrap_dim(dim, x.dim() == 0 ? 1 : x.dim(), op);
  autograd::Record rec(op, {&x});
  Tensor out = empty(x.sizes(), rd, x.device());
  run(x.dtype() == rd ? x : x.to(rd), dim, out, log);
  // Both formulas read only the output y: softmax y (g - sum(g y)); log_softmax
  // g - exp(y) sum(g), with exp(y) taken as softmax(y) (equal, as y's
  // exponentials sum to 1) so that it differentiates again.
  if (rec)
    rec.finish(log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", {&out}, {out},
               [d, log](autograd::FnNode& n, autograd::Grads& g) {
                 const Tensor y = n.saved(0);
                 const DimList dims = std::vector<int>{d};
                 if (log)
                   return autograd::Grads{sub(g[0], mul(softmax(y, d), sum(g[0], dims, /*keepdim=*/true)))};
                 return autograd::Grads{mul(y, sub(g[0], sum(mul(g[0], y), dims, /*keepdim=*/true)))};
               });
  return out;
}

void softmax_out_impl(const Tensor& x, int dim, const Tensor& out, bool log) {
  const char* op = op_name(log);
  const DType rd = result_dtype(x, out.dtype(), op);
  KILN_CHECK(out.sizes() == x.sizes(), ValueError,
             "[" << op << "] out has shape " << out.shape_str() << ", expected " << x.shape_str());
  wrap_dim(dim, x.dim() == 0 ? 1 : x.dim(), op);
  assert_no_internal_overlap(out, op);
  autograd::Record rec(op, {&x});
  if (rec) rec.no_out(out);
  autograd::wrote(out);
  run(x.dtype() == rd || x.dtype() == DType::Float32 ? x : x.to(rd), dim, out, log);
}

}  // namespace

Tensor softmax(const Tensor& x, int dim, std::optional<DType> dtype) {
  return softmax_impl(x, dim, dtype, false);
}
Tensor log_softmax(const Tensor& x, int dim, std::optional<DType> dtype) {
  return softmax_impl(x, dim, dtype, true);
}
void softmax_out(const Tensor& x, int dim, const Tensor& out) { softmax_out_impl(x, dim, out, false); }
void log_softmax_out(const Tensor& x, int dim, const Tensor& out) { softmax_out_impl(x, dim, out, true); }

}  // namespace kiln
