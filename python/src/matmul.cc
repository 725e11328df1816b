// Bindings for the matmul family: kiln.matmul/mm/bmm (and Tensor.matmul, @),
// kiln.nn.functional.linear, kiln.quantize_fp8 / dequantize,
// kiln.nn.functional.scaled_mm (= kiln._scaled_mm), grouped_mm
// (= kiln._grouped_mm) and the MoE blocks under kiln.nn.functional.
#include "kiln/matmul.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>

#include "bind_util.h"
#include "kiln/grouped_mm.h"
#include "kiln/linear.h"
#include "kiln/moe.h"
#include "kiln/quantize.h"
#include "kiln/scaled_mm.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

// None -> undefined tensor, else to_tensor.
Tensor opt_tensor(nb::handle h) { return h.is_none() ? Tensor() : to_tensor(h); }

Tensor scaled_mm_py(nb::handle a, nb::handle b, nb::handle scale_a, nb::handle scale_b, nb::handle bias,
                    nb::handle scale_result, nb::handle out_dtype, bool use_fast_accum) {
  return scaled_mm(to_tensor(a), to_tensor(b), to_tensor(scale_a), to_tensor(scale_b), opt_tensor(bias),
                   opt_tensor(scale_result), to_optional_dtype(out_dtype), use_fast_accum);
}

Tensor grouped_mm_py(nb::handle a, nb::handle b, nb::handle offs, nb::handle bias, nb::handle out_dtype,
                     nb::handle b_scale) {
  return grouped_mm(to_tensor(a), to_tensor(b), opt_tensor(offs), opt_tensor(bias), opt_tensor(b_scale),
                    to_optional_dtype(out_dtype));
}

}  // namespace
}  // namespace kiln::py

void init_matmul(nb::module_& m) {
  using namespace kiln;
  using namespace kiln::py;

  m.def(
      "matmul", [](nb::handle a, nb::handle b) { return matmul(to_tensor(a), to_tensor(b)); }, "input"_a,
      "other"_a);
  m.def(
      "mm", [](nb::handle a, nb::handle b) { return mm(to_tensor(a), to_tensor(b)); }, "input"_a, "mat2"_a);
  m.def(
      "bmm", [](nb::handle a, nb::handle b) { return bmm(to_tensor(a), to_tensor(b)); }, "input"_a, "mat2"_a);
  def_tensor_method(m, "matmul");
  def_tensor_method(m, "mm");
  def_tensor_method(m, "bmm");
  def_tensor_method(m, "__matmul__", "matmul");
  m.def("_rmatmul",
        [](nb::handle self, nb::handle other) { return matmul(to_tensor(other), to_tensor(self)); });
  def_tensor_method(m, "__rmatmul__", "_rmatmul");

  m.def(
      "nn_functional_linear",
      [](nb::handle x, nb::handle w, nb::handle bias, nb::handle weight_scale) {
        return linear(to_tensor(x), to_tensor(w), opt_tensor(bias), opt_tensor(weight_scale));
      },
      "input"_a, "weight"_a, "bias"_a = nb::none(), nb::kw_only(), "weight_scale"_a = nb::none(),
      "y = input @ (weight * weight_scale)^T + bias; weight in float32/bfloat16/float16/FP8, weight_scale "
      "per tensor (1 element), per row ([N] or [N, 1]) or per 128x128 block ([ceil(N/128), ceil(K/128)]).");

  m.def(
      "quantize_fp8",
      [](nb::handle w, nb::handle granularity, nb::handle dtype) {
        const DType d = dtype.is_none() ? DType::Float8_e4m3fn : to_dtype(dtype);
        return quantize_fp8(
            to_tensor(w),
            granularity_from_name(std::string(utf8(granularity, "quantize_fp8", "granularity"))), d);
      },
      "w"_a, "granularity"_a = "tensor", "dtype"_a = nb::none(),
      "(w_fp8, scale) with scale = amax / fp8_max per tensor ([]), row ([..., N, 1]) or 128x128 block "
      "([..., ceil(N/128), ceil(K/128)]); saturating.");
  m.def(
      "dequantize",
      [](nb::handle q, nb::handle scale, nb::handle dtype) {
        return dequantize(to_tensor(q), to_tensor(scale), dtype.is_none() ? DType::Float32 : to_dtype(dtype));
      },
      "input"_a, "scale"_a, "dtype"_a = nb::none());

  for (const char* nm : {"nn_functional_scaled_mm", "_scaled_mm"})
    m.def(nm, &scaled_mm_py, "mat1"_a, "mat2"_a, "scale_a"_a, "scale_b"_a, "bias"_a = nb::none(),
          "scale_result"_a = nb::none(), "out_dtype"_a = nb::none(), "use_fast_accum"_a = false);
  // torch.nn.functional.grouped_mm takes offs and the rest by keyword only;
  // torch._grouped_mm(mat_a, mat_b, offs=None, bias=None, out_dtype=None) also by position.
  m.def("nn_functional_grouped_mm", &grouped_mm_py, "mat_a"_a, "mat_b"_a, nb::kw_only(), "offs"_a = nb::none(),
        "bias"_a = nb::none(), "out_dtype"_a = nb::none(), "b_scale"_a = nb::none());
  m.def("_grouped_mm", &grouped_mm_py, "mat_a"_a, "mat_b"_a, "offs"_a = nb::none(), "bias"_a = nb::none(),
        "out_dtype"_a = nb::none(), nb::kw_only(), "b_scale"_a = nb::none());

  m.def(
      "nn_functional_moe_route",
      [](nb::handle logits, int64_t top_k, bool norm) { return moe_route(to_tensor(logits), top_k, norm); },
      "router_logits"_a, "top_k"_a, "norm_topk_prob"_a = true);
  m.def(
      "nn_functional_moe_permute",
      [](nb::handle ids, int64_t num_experts) { return moe_permute(to_tensor(ids), num_experts); }, "ids"_a,
      "num_experts"_a);
  m.def(
      "nn_functional_moe_unpermute",
      [](nb::handle y, nb::handle perm, nb::handle w) {
        return moe_unpermute(to_tensor(y), to_tensor(perm), to_tensor(w));
      },
      "y_perm"_a, "perm"_a, "weights"_a);
  m.def(
      "nn_functional_moe_ffn",
      [](nb::handle x, nb::handle router_w, nb::handle gate_up_w, nb::handle down_w, int64_t top_k, bool norm,
         nb::handle gate_up_scale, nb::handle down_scale) {
        return moe_ffn(to_tensor(x), to_tensor(router_w), to_tensor(gate_up_w), to_tensor(down_w), top_k,
                       norm, opt_tensor(gate_up_scale), opt_tensor(down_scale));
      },
      "x"_a, "router_w"_a, "gate_up_w"_a, "down_w"_a, "top_k"_a, "norm_topk_prob"_a = true,
      "gate_up_scale"_a = nb::none(), "down_scale"_a = nb::none());
}
