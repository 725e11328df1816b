// kiln.softmax / log_softmax (+ Tensor methods), kiln.nn.functional.{softmax,
// log_softmax, scaled_dot_product_attention, rms_norm, layer_norm, batch_norm,
// mse_loss, embedding, silu_and_mul}, the rotary helpers, kiln.KVCache and
// kiln.sample, with torch's argument names.
#include "kiln/nn.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>

#include <climits>
#include <string>

#include "bind_util.h"
#include "kiln/attention.h"
#include "kiln/embedding.h"
#include "kiln/kv_cache.h"
#include "kiln/loss.h"
#include "kiln/sampling.h"
#include "kiln/softmax.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

// F.softmax's legacy implicit dim (dim=None): 0 for 0-, 1- and 3-D inputs, else 1.
int implicit_dim(const Tensor& x, nb::handle dim) {
  if (!dim.is_none()) {
    // An integer (anything with __index__), as torch: a tuple, list or float
    // is a TypeError, not a bad_cast.
    if (!PyIndex_Check(dim.ptr()))
      throw TypeError(std::string("[softmax] dim must be an int or None, got ") +
                      nb::type_name(dim.type()).c_str());
    const Py_ssize_t d = PyNumber_AsSsize_t(dim.ptr(), PyExc_OverflowError);
    if (d == -1 && PyErr_Occurred()) throw nb::python_error();
    if (d < INT_MIN || d > INT_MAX) throw IndexError("[softmax] dim " + std::to_string(d) + " is out of range");
    return int(d);
  }
  const int nd = x.dim();
  return (nd == 0 || nd == 1 || nd == 3) ? 0 : 1;
}

// None -> an undefined Tensor (an absent optional argument).
Tensor opt_tensor(nb::handle h) { return h.is_none() ? Tensor() : to_tensor(h); }

Shape norm_shape(nb::handle h) { return to_shape(h, "normalized_shape"); }

Generator* gen_ptr(std::optional<Generator*> g) { return g ? *g : nullptr; }

}  // namespace
}  // namespace kiln::py

void init_nn(nb::module_& m) {
  using namespace kiln;
  using namespace kiln::py;

  // ---- softmax ----
  m.def(
      "softmax",
      [](nb::handle x, nb::handle dim, nb::handle dtype) {
        const Tensor t = to_tensor(x);
        return kiln::softmax(t, implicit_dim(t, dim), to_optional_dtype(dtype));
      },
      "input"_a, "dim"_a = nb::none(), "dtype"_a = nb::none(), "softmax over dim (torch.softmax).");
  m.def(
      "log_softmax",
      [](nb::handle x, nb::handle dim, nb::handle dtype) {
        const Tensor t = to_tensor(x);
        return kiln::log_softmax(t, implicit_dim(t, dim), to_optional_dtype(dtype));
      },
      "input"_a, "dim"_a = nb::none(), "dtype"_a = nb::none(), "log_softmax over dim (torch.log_softmax).");
  m.def(
      "nn_functional_softmax",
      [](nb::handle x, nb::handle dim, int, nb::handle dtype) {
        const Tensor t = to_tensor(x);
        return kiln::softmax(t, implicit_dim(t, dim), to_optional_dtype(dtype));
      },
      "input"_a, "dim"_a = nb::none(), "_stacklevel"_a = 3, "dtype"_a = nb::none());
  m.def(
      "nn_functional_log_softmax",
      [](nb::handle x, nb::handle dim, int, nb::handle dtype) {
        const Tensor t = to_tensor(x);
        return kiln::log_softmax(t, implicit_dim(t, dim), to_optional_dtype(dtype));
      },
      "input"_a, "dim"_a = nb::none(), "_stacklevel"_a = 3, "dtype"_a = nb::none());
  def_tensor_method(m, "softmax");
  def_tensor_method(m, "log_softmax");

  // ---- attention ----
  m.def(
      "nn_functional_scaled_dot_product_attention",
      [](nb::handle q, nb::handle k, nb::handle v, nb::handle attn_mask, double dropout_p, bool is_causal,
         std::optional<double> scale, bool enable_gqa, std::optional<Generator*> generator) {
        return kiln::scaled_dot_product_attention(to_tensor(q), to_tensor(k), to_tensor(v),
                                                  opt_tensor(attn_mask), dropout_p, is_causal, scale,
                                                  enable_gqa, gen_ptr(generator));
      },
      "query"_a, "key"_a, "value"_a, "attn_mask"_a = nb::none(), "dropout_p"_a = 0.0, "is_causal"_a = false,
      "scale"_a = nb::none(), "enable_gqa"_a = false, nb::kw_only(), "generator"_a = nb::none(),
      "torch.nn.functional.scaled_dot_product_attention (online softmax, tiled; GQA; bool/additive masks).");

  // ---- norms, activations, losses ----
  m.def(
      "nn_functional_rms_norm",
      [](nb::handle x, nb::handle shape, nb::handle weight, std::optional<double> eps) {
        return kiln::rms_norm(to_tensor(x), norm_shape(shape), opt_tensor(weight), eps);
      },
      "input"_a, "normalized_shape"_a, "weight"_a = nb::none(), "eps"_a = nb::none());
  m.def(
      "nn_functional_layer_norm",
      [](nb::handle x, nb::handle shape, nb::handle weight, nb::handle bias, double eps) {
        return kiln::layer_norm(to_tensor(x), norm_shape(shape), opt_tensor(weight), opt_tensor(bias), eps);
      },
      "input"_a, "normalized_shape"_a, "weight"_a = nb::none(), "bias"_a = nb::none(), "eps"_a = 1e-5);
  m.def(
      "nn_functional_batch_norm",
      [](nb::handle x, nb::handle rm, nb::handle rv, nb::handle weight, nb::handle bias, bool training,
         double momentum, double eps) {
        return kiln::batch_norm(to_tensor(x), opt_tensor(rm), opt_tensor(rv), opt_tensor(weight),
                                opt_tensor(bias), training, momentum, eps);
      },
      "input"_a, "running_mean"_a.none(), "running_var"_a.none(), "weight"_a = nb::none(),
      "bias"_a = nb::none(), "training"_a = false, "momentum"_a = 0.1, "eps"_a = 1e-5);
  m.def(
      "nn_functional_mse_loss",
      [](nb::handle x, nb::handle y, nb::handle reduction) {
        return kiln::mse_loss(to_tensor(x), to_tensor(y),
                              std::string(utf8(reduction, "mse_loss", "reduction")));
      },
      "input"_a, "target"_a, "reduction"_a = "mean");
  m.def(
      "nn_functional_nll_loss",
      [](nb::handle x, nb::handle target, nb::handle weight, int64_t ignore_index, nb::handle reduction) {
        return kiln::nll_loss(to_tensor(x), to_tensor(target), opt_tensor(weight), ignore_index,
                              std::string(utf8(reduction, "nll_loss", "reduction")));
      },
      "input"_a, "target"_a, "weight"_a = nb::none(), "ignore_index"_a = -100, "reduction"_a = "mean");
  m.def(
      "nn_functional_cross_entropy",
      [](nb::handle x, nb::handle target, nb::handle weight, int64_t ignore_index, nb::handle reduction,
         double label_smoothing) {
        return kiln::cross_entropy(to_tensor(x), to_tensor(target), opt_tensor(weight), ignore_index,
                                   std::string(utf8(reduction, "cross_entropy", "reduction")),
                                   label_smoothing);
      },
      "input"_a, "target"_a, "weight"_a = nb::none(), "ignore_index"_a = -100, "reduction"_a = "mean",
      "label_smoothing"_a = 0.0);
  m.def(
      "nn_functional_silu_and_mul",
      [](nb::handle gate, nb::handle up) { return kiln::swiglu(to_tensor(gate), to_tensor(up)); }, "gate"_a,
      "up"_a, "silu(gate) * up, fused (the SwiGLU MLP).");
  m.def(
      "nn_functional_swiglu",
      [](nb::handle gate, nb::handle up) { return kiln::swiglu(to_tensor(gate), to_tensor(up)); }, "gate"_a,
      "up"_a, "silu(gate) * up, fused (the SwiGLU MLP).");
  m.def(
      "nn_functional_embedding",
      [](nb::handle input, nb::handle weight, std::optional<int64_t> padding_idx, nb::handle row_scale,
         nb::handle dtype) {
        if (padding_idx)
          return kiln::embedding(to_tensor(input), to_tensor(weight), *padding_idx, opt_tensor(row_scale),
                                 to_optional_dtype(dtype));
        return kiln::embedding(to_tensor(input), to_tensor(weight), opt_tensor(row_scale),
                               to_optional_dtype(dtype));
      },
      "input"_a, "weight"_a, "padding_idx"_a = nb::none(), nb::kw_only(), "row_scale"_a = nb::none(),
      "dtype"_a = nb::none(), "F.embedding; FP8 tables are widened and scaled per row (row_scale [V]).");

  // ---- rotary embeddings ----
  m.def(
      "nn_functional_rope_inv_freq",
      [](int64_t rotary_dim, double theta, nb::handle rope_type_arg, double factor, double low_freq_factor,
         double high_freq_factor, int64_t original_max_position_embeddings) {
        const std::string rope_type(utf8(rope_type_arg, "rope_inv_freq", "rope_type"));
        RopeScaling s;
        if (rope_type == "linear")
          s.kind = RopeScaling::Kind::Linear;
        else if (rope_type == "llama3")
          s.kind = RopeScaling::Kind::Llama3;
        else if (rope_type != "default" && rope_type != "none")
          throw ValueError("[rope_inv_freq] rope_type must be 'default', 'linear' or 'llama3', got '" +
                           rope_type + "'");
        s.factor = factor;
        s.low_freq_factor = low_freq_factor;
        s.high_freq_factor = high_freq_factor;
        s.original_max_position_embeddings = original_max_position_embeddings;
        return kiln::rope_inv_freq(rotary_dim, theta, s);
      },
      "rotary_dim"_a, "theta"_a = 10000.0, "rope_type"_a = "default", "factor"_a = 1.0,
      "low_freq_factor"_a = 1.0, "high_freq_factor"_a = 4.0, "original_max_position_embeddings"_a = 8192);
  m.def(
      "nn_functional_rope_cos_sin",
      [](nb::handle positions, nb::handle inv_freq) {
        const RopeTables t = kiln::rope_cos_sin(to_tensor(positions), to_tensor(inv_freq));
        return nb::make_tuple(t.cos, t.sin);
      },
      "positions"_a, "inv_freq"_a, "cos/sin [T, rotary_dim/2] of positions * inv_freq.");
  m.def(
      "nn_functional_apply_rotary_emb",
      [](nb::handle x, nb::handle cos, nb::handle sin, bool interleaved) {
        return kiln::apply_rotary_emb(to_tensor(x), to_tensor(cos), to_tensor(sin), interleaved);
      },
      "x"_a, "cos"_a, "sin"_a, "interleaved"_a = false,
      "Rotates x [..., T, H, D] (or [T, D]); partial when 2*cos.shape[-1] < D.");

  // ---- KV cache ----
  nb::class_<KVCache>(m, "KVCache",
                      "Preallocated per-layer K/V storage [batch, kv_heads, max_len, head_dim].")
      .def(nb::init<int64_t, int64_t, int64_t, int64_t, int64_t, DType>(), "layers"_a, "batch"_a,
           "kv_heads"_a, "max_len"_a, "head_dim"_a, "dtype"_a = DType::BFloat16)
      .def(
          "append",
          [](KVCache& c, int64_t layer, nb::handle k, nb::handle v) {
            return c.append(layer, to_tensor(k), to_tensor(v));
          },
          "layer"_a, "key"_a, "value"_a)
      .def("keys", &KVCache::keys, "layer"_a, "length"_a = -1)
      .def("values", &KVCache::values, "layer"_a, "length"_a = -1)
      .def("length", &KVCache::length, "layer"_a)
      .def("truncate", &KVCache::truncate, "length"_a)
      .def("reset", &KVCache::reset)
      .def_prop_ro("max_len", &KVCache::max_len)
      .def_prop_ro("dtype", &KVCache::dtype);

  // ---- sampling ----
  m.def(
      "sample",
      [](nb::handle logits, double temperature, int64_t top_k, double top_p, double min_p,
         double repetition_penalty, double presence_penalty, double frequency_penalty, nb::handle prev_tokens,
         std::optional<Generator*> generator) {
        SamplingParams p;
        p.temperature = temperature;
        p.top_k = top_k;
        p.top_p = top_p;
        p.min_p = min_p;
        p.repetition_penalty = repetition_penalty;
        p.presence_penalty = presence_penalty;
        p.frequency_penalty = frequency_penalty;
        return kiln::sample(to_tensor(logits), p, opt_tensor(prev_tokens), gen_ptr(generator));
      },
      "logits"_a, nb::kw_only(), "temperature"_a = 1.0, "top_k"_a = 0, "top_p"_a = 1.0, "min_p"_a = 0.0,
      "repetition_penalty"_a = 1.0, "presence_penalty"_a = 0.0, "frequency_penalty"_a = 0.0,
      "prev_tokens"_a = nb::none(), "generator"_a = nb::none(),
      "Next-token ids from logits [V] or [B, V] (temperature 0: argmax).");
}
