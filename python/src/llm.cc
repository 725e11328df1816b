// kiln.llm: load a language model, run it on token ids, generate text.
//
//   m = kiln.llm.load("model.gguf", dtype="fp8")
//   for piece in m.generate("Once upon a time", max_tokens=32, temperature=0):
//       print(piece, end="")
#include <nanobind/stl/pair.h>
#include <nanobind/stl/unique_ptr.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bind_util.h"
#include "config_dict.h"
#include "kiln/llm/default_model.h"
#include "kiln/llm/generate.h"
#include "kiln/llm/model.h"

namespace nb = nanobind;
using namespace nb::literals;
using kiln::Tensor;
using kiln::llm::Model;

namespace {

std::vector<int32_t> to_ids(nb::handle h) {
  const Tensor given = kiln::py::to_tensor(h);
  KILN_CHECK(given.numel() == 0 || kiln::is_integral(given.dtype(), /*include_bool=*/false), kiln::TypeError,
             "[llm] token ids must be integers, got " << kiln::name(given.dtype()));
  const Tensor t = given.to(kiln::DType::Int64).contiguous();
  KILN_CHECK(t.dim() <= 1 || (t.dim() == 2 && t.size(0) == 1), kiln::ValueError,
             "[llm] token ids must be 1-D (or [1, n]), got " << t.shape_str());
  std::vector<int32_t> v(size_t(t.numel()));
  const int64_t* p = t.data<int64_t>();
  for (size_t i = 0; i < v.size(); ++i) {
    KILN_CHECK(p[i] >= INT32_MIN && p[i] <= INT32_MAX, kiln::ValueError,
               "[llm] token id " << p[i] << " at index " << i << " is out of range");
    v[i] = int32_t(p[i]);
  }
  return v;
}

// A Python iterator over the text pieces of one generation.
struct PyGeneration {
  std::unique_ptr<kiln::llm::Generation> g;
  std::atomic<bool> cancel{false};
  bool finished = false;

  std::string next() {
    if (finished) throw nb::stop_iteration();
    std::string piece;
    for (;;) {
      bool more;
      {
        nb::gil_scoped_release release;
        more = g->next(piece);
      }
      if (!more) {
        finished = true;
        if (piece.empty()) throw nb::stop_iteration();
        return piece;
      }
      if (!piece.empty()) return piece;
      // An empty piece (a character split across tokens): step again.
    }
  }
};

nb::dict stats_dict(const kiln::llm::GenerateStats& s) {
  nb::dict d;
  d["prompt_tokens"] = s.prompt_tokens;
  d["generated_tokens"] = s.generated_tokens;
  d["prefill_seconds"] = s.prefill_seconds;
  d["decode_seconds"] = s.decode_seconds;
  d["prefill_tokens_per_second"] = s.prefill_tokens_per_second();
  d["decode_tokens_per_second"] = s.decode_tokens_per_second();
  d["stop_reason"] = s.stop_reason;
  return d;
}

}  // namespace

void init_llm(nb::module_& m) {
  static const kiln::llm::GenerateOptions kDefaults{};
  nb::class_<PyGeneration>(m, "Generation", "An iterator over the text pieces of one generation.")
      .def("__iter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__next__", &PyGeneration::next)
      .def(
          "cancel", [](PyGeneration& g) { g.cancel = true; }, "Stops after the current token.")
      .def_prop_ro("stats", [](const PyGeneration& g) { return stats_dict(g.g->stats()); })
      .def_prop_ro(
          "tokens", [](const PyGeneration& g) { return g.g->generated(); },
          "The token ids generated so far (an end-of-sequence token included).");

  nb::class_<Model>(m, "LanguageModel",
                    "A loaded language model (kiln.llm.load): config, tokenizer, weights and a KV cache.")
      .def_prop_ro("config", [](const Model& md) { return config_dict(md.config()); })
      .def_prop_ro("tokenizer", [](const Model& md) { return md.tokenizer(); })
      .def_prop_ro(
          "dtype",
          [](const Model& md) { return std::string(kiln::llm::weight_format_name(md.weight_format())); })
      .def_prop_ro("max_context", &Model::max_context)
      .def_prop_ro("position", &Model::position, "Tokens in the KV cache.")
      .def_prop_ro("weight_bytes", &Model::weight_bytes)
      .def_prop_ro("kv_cache_bytes", &Model::kv_cache_bytes)
      .def_prop_ro("bytes_read_last_forward", &Model::bytes_read_last_forward)
      .def(
          "reset", [](Model& md, int64_t position) { md.reset(position); }, "position"_a = 0,
          "Forgets cached positions from `position` on.")
      .def(
          "forward",
          [](Model& md, nb::handle ids, bool all_logits) {
            const std::vector<int32_t> v = to_ids(ids);
            Tensor out;
            {
              nb::gil_scoped_release release;
              out = md.forward(v, all_logits).clone();
            }
            return out;
          },
          "token_ids"_a, "all_logits"_a = false,
          "Runs token ids after the cached ones; float32 logits [n, V] (all_logits) or [1, V].")
      .def(
          "logits",
          [](Model& md, nb::handle ids) {
            const std::vector<int32_t> v = to_ids(ids);
            Tensor out;
            {
              nb::gil_scoped_release release;
              md.reset(0);
              out = md.forward(v, true).clone();
            }
            return out;
          },
          "token_ids"_a, "float32 logits [n, V] of token ids from a fresh cache.")
      .def(
          "perplexity",
          [](Model& md, nb::handle ids, int64_t window) {
            const std::vector<int32_t> v = to_ids(ids);
            nb::gil_scoped_release release;
            return kiln::llm::perplexity(md, v, window);
          },
          "token_ids"_a, "window"_a = 0, "exp(mean NLL) of ids[1:] given the ids before them.")
      .def(
          "generate",
          [](Model& md, nb::handle prompt, int64_t max_tokens, double temperature, int64_t top_k,
             double top_p, double min_p, double repetition_penalty, double presence_penalty,
             double frequency_penalty, uint64_t seed, bool stop_at_eos, bool reset, bool add_special_tokens) {
            std::vector<int32_t> ids;
            if (nb::isinstance<nb::str>(prompt))
              ids = md.tokenizer().encode(kiln::py::utf8(prompt, "generate", "prompt"), add_special_tokens);
            else
              ids = to_ids(prompt);
            if (reset) md.reset(0);
            kiln::llm::GenerateOptions o;
            o.max_tokens = max_tokens;
            o.sampling.temperature = temperature;
            o.sampling.top_k = top_k;
            o.sampling.top_p = top_p;
            o.sampling.min_p = min_p;
            o.sampling.repetition_penalty = repetition_penalty;
            o.sampling.presence_penalty = presence_penalty;
            o.sampling.frequency_penalty = frequency_penalty;
            o.seed = seed;
            o.stop_at_eos = stop_at_eos;
            auto g = std::make_unique<PyGeneration>();
            o.cancel = &g->cancel;
            g->g = std::make_unique<kiln::llm::Generation>(md, std::move(ids), o);
            return g;
          },
          "prompt"_a, "max_tokens"_a = kDefaults.max_tokens, "temperature"_a = kDefaults.sampling.temperature,
          "top_k"_a = kDefaults.sampling.top_k, "top_p"_a = kDefaults.sampling.top_p,
          "min_p"_a = kDefaults.sampling.min_p,
          "repetition_penalty"_a = kDefaults.sampling.repetition_penalty,
          "presence_penalty"_a = kDefaults.sampling.presence_penalty,
          "frequency_penalty"_a = kDefaults.sampling.frequency_penalty, "seed"_a = kDefaults.seed,
          "stop_at_eos"_a = true, "reset"_a = true, "add_special_tokens"_a = true, nb::keep_alive<0, 1>(),
          "An iterator over text pieces. prompt: text (encoded with the tokenizer) or token ids. The "
          "defaults are kiln generate's: 128 tokens, temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, "
          "seed 0; temperature 0 is greedy. reset=False continues after the cached tokens.")
      .def("named_weights", &Model::named_weights, "The weights as held, under Hugging Face names.")
      .def("__repr__", [](const Model& md) {
        return "kiln.llm.LanguageModel(" + md.config().architecture + ", " +
               kiln::llm::weight_format_name(md.weight_format()) + ", " + std::to_string(md.weight_bytes()) +
               " weight bytes)";
      });

  m.def("llm_default_model_path", &kiln::llm::default_model_cached_path,
        "Where the default model's GGUF is cached (whether or not it has been fetched yet).");
  m.def(
      "llm_load",
      [](nb::handle path_arg, nb::handle dtype, int64_t max_context, nb::handle kv_dtype) {
        kiln::llm::LoadOptions o;
        o.weights = kiln::llm::weight_format_from_name(std::string(kiln::py::utf8(dtype, "llm", "dtype")));
        o.max_context = max_context;
        if (!kv_dtype.is_none()) o.kv_dtype = kiln::py::to_dtype(kv_dtype);
        std::string p = path_arg.is_none() ? std::string() : kiln::py::to_path(path_arg, "llm");
        // A path that is not there: FileNotFoundError / PermissionError with the OS's reason.
        struct stat st {};
        if (!p.empty() && p != "default" && ::stat(p.c_str(), &st) != 0)
          kiln::throw_os_error("llm", p, errno);
        nb::gil_scoped_release release;
        // None / "default": the default model, fetched into the cache on first use.
        if (p.empty() || p == "default")
          p = kiln::llm::ensure_default_model(
              [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
        return Model::load(p, o);
      },
      "path"_a = nb::none(), "dtype"_a = "fp8", "max_context"_a = 0, "kv_dtype"_a = nb::none(),
      "Loads a model: a .gguf file or a Hugging Face / kiln model directory (None or \"default\": the "
      "default model, SmolLM2-135M-Instruct, fetched on first use). dtype: the linear weights "
      "as fp8 (per-row e4m3fn), bf16 or f32.");
}
