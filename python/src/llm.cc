// kiln.llm: load a language model, run it on token ids, generate text.
//
//   m = kiln.llm.load("model.gguf", dtype="fp8")  # or "native": a GGUF file's blocks as stored
//   for piece in m.generate("Once upon a time", max_tokens=32, temperature=0):
//       print(piece, end="")
//
// Threads: every call that runs the model releases the GIL and holds the model
// (Model::Use) for its whole length, taken and given back with the GIL
// released, so a second thread's call on the same model waits for it and
// never sees its scratch or cache half written. A generation holds the model
// per step: a call from elsewhere between two of its steps ends it with an
// error (one model per thread runs generations in parallel).
#include <nanobind/stl/pair.h>
#include <nanobind/stl/unique_ptr.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <mutex>
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

// A Python int argument as int64. Past int64: `clamp` gives INT64_MAX (a bound
// such as max_tokens, where 10**30 means "no bound"), else OverflowError.
int64_t int_arg(nb::handle h, const char* name, bool clamp) {
  if (!PyIndex_Check(h.ptr()))
    throw kiln::TypeError(std::string("[llm] ") + name + " must be an int, got " +
                          nb::type_name(h.type()).c_str());
  nb::object i = nb::steal(PyNumber_Index(h.ptr()));
  if (!i.is_valid()) throw nb::python_error();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow > 0 && clamp) return INT64_MAX;
  if (overflow != 0) {
    const std::string text = nb::str(i).c_str();
    PyErr_SetString(
        PyExc_OverflowError,
        (std::string("[llm] ") + name + " " + text + " does not fit in a signed 64-bit integer").c_str());
    throw nb::python_error();
  }
  return v;
}

// stop=: None, one string, or an iterable of strings.
std::vector<std::string> to_stop_strings(nb::handle h) {
  std::vector<std::string> v;
  if (h.is_none()) return v;
  if (nb::isinstance<nb::str>(h)) {
    v.push_back(nb::cast<std::string>(h));
    return v;
  }
  KILN_CHECK(!nb::isinstance<nb::bytes>(h), kiln::TypeError,
             "[generate] stop must be a str or a list of str, got bytes");
  for (nb::handle x : h) {
    KILN_CHECK(nb::isinstance<nb::str>(x), kiln::TypeError,
               "[generate] stop strings must be str, got " << nb::inst_name(x).c_str());
    v.push_back(nb::cast<std::string>(x));
  }
  return v;
}

// A Python iterator over the text pieces of one generation. Threads sharing
// one iterator take turns (mu): each piece goes to one of them.
struct PyGeneration {
  std::unique_ptr<kiln::llm::Generation> g;
  std::atomic<bool> cancel{false};
  std::mutex mu;  // guards g's state and finished; taken with the GIL released
  bool finished = false;

  std::string next() {
    std::string piece;
    bool stop = false;
    {
      nb::gil_scoped_release release;
      const std::lock_guard<std::mutex> lock(mu);
      if (finished) {
        stop = true;
      } else {
        bool more;
        do {  // an empty piece (a character split across tokens): step again
          more = g->next(piece);
        } while (more && piece.empty());
        finished = !more;
        stop = finished && piece.empty();
      }
    }
    if (stop) throw nb::stop_iteration();
    return piece;
  }

  // Reads of the generation's state, in turn with the steps.
  template <typename F>
  auto read(F&& fn) {
    nb::gil_scoped_release release;
    const std::lock_guard<std::mutex> lock(mu);
    return fn(*g);
  }
};

// Runs fn with the GIL released and the model held by this thread.
template <typename F>
auto holding(Model& md, const char* op, F&& fn) {
  nb::gil_scoped_release release;
  const Model::Use use(md, op);
  return fn();
}

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
      .def_prop_ro("stats",
                   [](PyGeneration& g) { return stats_dict(g.read([](auto& x) { return x.stats(); })); })
      .def_prop_ro(
          "tokens", [](PyGeneration& g) { return g.read([](auto& x) { return x.generated(); }); },
          "The token ids generated so far (an end-of-sequence token included).");

  nb::class_<Model>(m, "LanguageModel",
                    "A loaded language model (kiln.llm.load): config, tokenizer, weights and a KV cache.")
      .def_prop_ro("config", [](const Model& md) { return config_dict(md.config()); })
      .def_prop_ro("tokenizer", [](const Model& md) { return md.tokenizer(); })
      .def_prop_ro(
          "dtype",
          [](const Model& md) { return std::string(kiln::llm::weight_format_name(md.weight_format())); })
      .def_prop_ro("max_context", &Model::max_context)
      .def_prop_ro(
          "position",
          [](Model& md) { return holding(md, "[LanguageModel.position]", [&] { return md.position(); }); },
          "Tokens in the KV cache.")
      .def_prop_ro("weight_bytes", &Model::weight_bytes)
      .def_prop_ro("kv_cache_bytes",
                   [](Model& md) {
                     return holding(md, "[LanguageModel.kv_cache_bytes]",
                                    [&] { return md.kv_cache_bytes(); });
                   })
      .def_prop_ro("bytes_read_last_forward",
                   [](Model& md) {
                     return holding(md, "[LanguageModel.bytes_read_last_forward]",
                                    [&] { return md.bytes_read_last_forward(); });
                   })
      .def(
          "reset",
          [](Model& md, int64_t position) {
            holding(md, "[LanguageModel.reset]", [&] { md.reset(position); });
          },
          "position"_a = 0, "Forgets cached positions from `position` on.")
      .def(
          "forward",
          [](Model& md, nb::handle ids, bool all_logits) {
            const std::vector<int32_t> v = to_ids(ids);
            // The clone is taken before another thread's call can overwrite the scratch.
            return holding(md, "[LanguageModel.forward]", [&] { return md.forward(v, all_logits).clone(); });
          },
          "token_ids"_a, "all_logits"_a = false,
          "Runs token ids after the cached ones; float32 logits [n, V] (all_logits) or [1, V].")
      .def(
          "logits",
          [](Model& md, nb::handle ids) {
            const std::vector<int32_t> v = to_ids(ids);
            return holding(md, "[LanguageModel.logits]", [&] {
              md.reset(0);
              return md.forward(v, true).clone();
            });
          },
          "token_ids"_a, "float32 logits [n, V] of token ids from a fresh cache.")
      .def(
          "perplexity",
          [](Model& md, nb::handle ids, nb::handle window_arg) {
            const int64_t window = int_arg(window_arg, "window", /*clamp=*/true);
            const std::vector<int32_t> v = to_ids(ids);
            nb::gil_scoped_release release;
            return kiln::llm::perplexity(md, v, window);  // holds the model itself
          },
          "token_ids"_a, "window"_a = 0, "exp(mean NLL) of ids[1:] given the ids before them.")
      .def(
          "generate",
          [](Model& md, nb::handle prompt, nb::handle max_tokens, double temperature, int64_t top_k,
             double top_p, double min_p, double repetition_penalty, double presence_penalty,
             double frequency_penalty, uint64_t seed, bool stop_at_eos, bool reset, bool add_special_tokens,
             nb::handle stop) {
            std::vector<int32_t> ids;
            if (nb::isinstance<nb::str>(prompt)) {
              const std::string text(kiln::py::utf8(prompt, "generate", "prompt"));
              nb::gil_scoped_release release;
              ids = md.tokenizer().encode(text, add_special_tokens);
            } else {
              ids = to_ids(prompt);
            }
            kiln::llm::GenerateOptions o;
            o.max_tokens = int_arg(max_tokens, "max_tokens", /*clamp=*/true);
            o.sampling.temperature = temperature;
            o.sampling.top_k = top_k;
            o.sampling.top_p = top_p;
            o.sampling.min_p = min_p;
            o.sampling.repetition_penalty = repetition_penalty;
            o.sampling.presence_penalty = presence_penalty;
            o.sampling.frequency_penalty = frequency_penalty;
            o.seed = seed;
            o.stop_at_eos = stop_at_eos;
            o.stop = to_stop_strings(stop);
            // Checked before reset so a refused call leaves the cache as it was.
            KILN_CHECK(o.max_tokens >= 0, kiln::ValueError,
                       "[llm] max_tokens must be >= 0 (the most tokens to generate), got " << o.max_tokens);
            auto g = std::make_unique<PyGeneration>();
            o.cancel = &g->cancel;
            // The reset and the generation's start state are taken together.
            holding(md, "[LanguageModel.generate]", [&] {
              if (reset) md.reset(0);
              g->g = std::make_unique<kiln::llm::Generation>(md, std::move(ids), o);
            });
            return g;
          },
          "prompt"_a, "max_tokens"_a = kDefaults.max_tokens, "temperature"_a = kDefaults.sampling.temperature,
          "top_k"_a = kDefaults.sampling.top_k, "top_p"_a = kDefaults.sampling.top_p,
          "min_p"_a = kDefaults.sampling.min_p,
          "repetition_penalty"_a = kDefaults.sampling.repetition_penalty,
          "presence_penalty"_a = kDefaults.sampling.presence_penalty,
          "frequency_penalty"_a = kDefaults.sampling.frequency_penalty, "seed"_a = kDefaults.seed,
          "stop_at_eos"_a = true, "reset"_a = true, "add_special_tokens"_a = true, "stop"_a = nb::none(),
          nb::keep_alive<0, 1>(),
          "An iterator over text pieces. prompt: text (encoded with the tokenizer) or token ids. The "
          "defaults are kiln generate's: 128 tokens, temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, "
          "seed 0; temperature 0 is greedy. reset=False continues after the cached tokens. stop: a string "
          "or a list of them; generation ends when the text produces one, and the text ends just before "
          "it (stats['stop_reason'] == 'stop').")
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
      [](nb::handle path_arg, nb::handle dtype, nb::handle max_context, nb::handle kv_dtype,
         nb::handle adapter) {
        kiln::llm::LoadOptions o;
        o.weights = kiln::llm::weight_format_from_name(std::string(kiln::py::utf8(dtype, "llm", "dtype")));
        o.max_context = int_arg(max_context, "max_context", /*clamp=*/false);
        if (!kv_dtype.is_none()) o.kv_dtype = kiln::py::to_dtype(kv_dtype);
        if (!adapter.is_none()) {
          o.adapter = kiln::py::to_path(adapter, "llm");
          struct stat ast {};
          if (::stat(o.adapter.c_str(), &ast) != 0) kiln::throw_os_error("llm", o.adapter, errno);
        }
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
      "adapter"_a = nb::none(),
      "Loads a model: a .gguf file, a Hugging Face / kiln model directory or a LoRA adapter directory "
      "(run on the base model it names) (None or \"default\": the "
      "default model, SmolLM2-135M-Instruct, fetched on first use). adapter: a LoRA adapter directory "
      "(PEFT's layout) merged into the weights at load. dtype: the linear weights "
      "as fp8 (per-row e4m3fn), native (a GGUF file's ggml blocks as stored, the rest as fp8), bf16 or f32. "
      "max_context: KV-cache positions (0: the length the model "
      "was trained for, lowered to what fits in memory); one whose cache cannot fit in the memory "
      "available is a ValueError naming the bytes it needs.");
}
