// The kiln._C extension: one init_<area> per binding file.
#include <nanobind/nanobind.h>

#include <string>

namespace nb = nanobind;

void init_tensor(nb::module_& m);   // tensor.cc (+ dtype, factories, interop, runtime .cc)
void init_unary(nb::module_& m);    // unary.cc
void init_unary_extra(nb::module_& m);  // unary_extra.cc: acos, erf, digamma, nan_to_num, ...
void init_binary(nb::module_& m);   // binary.cc
void init_complex(nb::module_& m);  // complex.cc: conj, real, imag, angle, complex, polar
void init_binary_extra(nb::module_& m);  // binary_extra.cc: hypot, logaddexp, gcd, isclose, ...
void init_reduce(nb::module_& m);   // reduce.cc
void init_index(nb::module_& m);    // index.cc: indexing, gather/scatter, sort/topk, bincount
void init_io(nb::module_& m);       // io.cc: safetensors, GGUF, model configs (kiln.io)
void init_matmul(nb::module_& m);   // matmul.cc: matmul, linear, FP8 quantize, scaled_mm, grouped_mm, MoE
void init_nn(nb::module_& m);       // nn.cc: softmax, attention, norms, rope, embedding, KV cache, sampling
void init_tokenizer(nb::module_& m);  // tokenizer.cc: Tokenizer, StreamDecoder, chat templates
void init_linalg(nb::module_& m);   // linalg.cc: kiln.linalg
void init_llm(nb::module_& m);      // llm.cc: kiln.llm (load, LanguageModel, Generation)
void init_serve(nb::module_& m);    // serve.cc: kiln.llm.Server (kiln.serve)
void init_shape(nb::module_& m);  // shape.cc: cat, stack, the split family
void init_interpolate(nb::module_& m);  // interpolate.cc: interpolate, upsample_*
void init_optim(nb::module_& m);  // optim.cc: the fused optimizer steps (kiln.optim)
void init_conv(nb::module_& m);  // conv.cc: convolutions (kiln.nn.functional.conv*)
void init_pad(nb::module_& m);    // pad.cc: F.pad, pixel_shuffle, pixel_unshuffle
void init_pool(nb::module_& m);   // pool.cc: max/avg/adaptive pooling (kiln.nn.functional)
void init_memory_format(nb::module_& m);  // memory_format.cc: kiln.channels_last, ...
void init_norm_fold(nb::module_& m);  // norm_fold.cc: group_norm, instance_norm, unfold, fold
void init_dropout(nb::module_& m);  // dropout.cc: F.dropout and its channel / alpha forms
void init_fft(nb::module_& m);      // fft.cc: kiln.fft
void init_special(nb::module_& m);  // special.cc: Bessel, Airy, ndtri, zeta, polygamma, gammainc
void init_products(nb::module_& m);  // products.cc: dot, mv, addmm, kron, tensordot, multi_dot, ...
namespace kiln::py {
void register_error_translators();  // errors.cc
}

NB_MODULE(_C, m) {
  m.doc() = "kiln: tensors, FP8 and LLM kernels for the CPU";
  // kiln's typed errors (and the std:: exceptions that can escape) become Python ones.
  kiln::py::register_error_translators();
  init_tensor(m);
  init_unary(m);
  init_unary_extra(m);
  init_binary(m);
  init_complex(m);
  init_binary_extra(m);
  init_reduce(m);
  init_index(m);
  init_io(m);
  init_matmul(m);
  init_nn(m);
  init_conv(m);
  init_tokenizer(m);
  init_linalg(m);
  init_llm(m);
  init_serve(m);
  init_shape(m);
  init_optim(m);
  init_pad(m);
  init_pool(m);
  init_memory_format(m);
  init_interpolate(m);
  init_norm_fold(m);
  init_dropout(m);
  init_fft(m);
  init_products(m);
  init_special(m);
  // kiln.special names of ops bound above by other areas (torch.special.softmax ...).
  for (const char* f : {"softmax", "log_softmax", "logsumexp"})
    m.attr((std::string("special_") + f).c_str()) = m.attr(f);
}
