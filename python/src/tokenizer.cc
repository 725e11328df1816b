// kiln.Tokenizer and kiln.StreamDecoder: Hugging Face tokenizer.json byte-level BPE.
// A Tokenizer is immutable and thread-safe: encode, encode_batch and decode
// release the GIL so threads tokenize in parallel. StreamDecoder and
// ChatTemplate calls keep the GIL (short, and a StreamDecoder holds state).
#include <nanobind/stl/string_view.h>

#include "bind_util.h"
#include "kiln/chat_template.h"
#include "kiln/io/gguf_tokenizer.h"
#include "kiln/tokenizer.h"

namespace nb = nanobind;
using namespace nb::literals;

using kiln::StreamDecoder;
using kiln::Tokenizer;

namespace {

namespace jinja = kiln::jinja;

// A str argument of the chat template (text, dict keys) as UTF-8.
std::string text(nb::handle h, const char* what) {
  return std::string(kiln::py::utf8(h, "chat_template", what));
}

// Python data (dict, list, tuple, str, int, float, bool, None) -> template value.
jinja::Value to_value(nb::handle h, int depth = 0) {
  if (depth > 100) throw kiln::ValueError("[chat_template] the data is nested too deeply");
  if (h.is_none()) return jinja::Value::none();
  if (nb::isinstance<nb::bool_>(h)) return jinja::Value(nb::cast<bool>(h));
  if (nb::isinstance<nb::int_>(h)) return jinja::Value(kiln::py::to_int64(h, "chat_template", "integer"));
  if (nb::isinstance<nb::float_>(h)) return jinja::Value(nb::cast<double>(h));
  if (nb::isinstance<nb::str>(h)) return jinja::Value(text(h, "text"));
  if (nb::isinstance<nb::dict>(h)) {
    jinja::Dict d;
    for (auto [k, v] : nb::borrow<nb::dict>(h))
      d.set(nb::isinstance<nb::str>(k) ? text(k, "key") : kiln::py::py_str(k), to_value(v, depth + 1));
    return jinja::Value(std::move(d));
  }
  if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)) {
    jinja::List l;
    for (nb::handle x : h) l.push_back(to_value(x, depth + 1));
    return jinja::Value(std::move(l));
  }
  throw kiln::TypeError("[chat_template] cannot pass a " + kiln::py::py_type_name(h) + " to a template");
}

jinja::Value kwargs_value(const nb::kwargs& kw) {
  jinja::Dict d;
  for (auto [k, v] : kw) d.set(text(k, "keyword"), to_value(v));
  return jinja::Value(std::move(d));
}

void init_tokenizer_chat(nb::module_& m, nb::class_<Tokenizer>& cls) {
  nb::class_<jinja::Template>(
      m, "ChatTemplate",
      "A chat template (the Jinja2 subset chat templates use), rendered as transformers "
      "renders it: ChatTemplate(source).render(messages=[...], add_generation_prompt=True).")
      .def(
          "__init__",
          [](jinja::Template* t, nb::handle source) {
            new (t) jinja::Template(kiln::py::utf8(source, "chat_template", "source"));
          },
          "source"_a)
      .def("render",
           [](const jinja::Template& t, const nb::kwargs& kw) { return t.render(kwargs_value(kw)); });
  cls.def(
      "apply_chat_template",
      [](const Tokenizer& t, nb::handle messages, bool add_generation_prompt, bool tokenize, nb::handle tools,
         const nb::kwargs& kw) -> nb::object {
        jinja::Value extra = kwargs_value(kw);
        extra.dict->set("tools", to_value(tools));
        const std::string text = kiln::apply_chat_template(t, to_value(messages), add_generation_prompt, extra);
        if (!tokenize) return nb::cast(text);
        std::vector<int32_t> ids;
        {
          nb::gil_scoped_release release;
          ids = t.encode(text);
        }
        return nb::cast(ids);
      },
      "messages"_a, "add_generation_prompt"_a = false, "tokenize"_a = false, "tools"_a = nb::none(), "kwargs"_a,
      "Renders the chat template with messages, add_generation_prompt, tools, the special tokens and any "
      "further keyword (enable_thinking=False, date_string=...); tokenize=True returns ids.");
}

}  // namespace

void init_tokenizer(nb::module_& m) {
  auto cls = nb::class_<Tokenizer>(m, "Tokenizer",
                                   "A byte-level BPE tokenizer (Qwen2/Qwen3, Llama 3, SmolLM2, GPT-2) read from "
                                   "Hugging Face's tokenizer.json.");
  cls.def_static(
         "from_file",
         [](nb::handle path) { return kiln::io::load_tokenizer(kiln::py::to_path(path, "tokenizer")); },
         "path"_a,
         "Reads tokenizer.json (with tokenizer_config.json beside it when present: chat template, "
         "bos/eos/pad tokens), or the tokenizer a GGUF model file embeds.")
      .def_static(
          "from_str",
          [](nb::handle json, nb::handle config) {
            return Tokenizer::from_json(
                kiln::py::utf8(json, "tokenizer", "json"),
                config.is_none() ? std::string_view() : kiln::py::utf8(config, "tokenizer", "config"));
          },
          "json"_a, "config"_a = "", "A tokenizer from tokenizer.json text (and tokenizer_config.json text).")
      .def(
          "encode",
          [](const Tokenizer& t, nb::handle text, bool add_special_tokens) {
            const std::string_view s = kiln::py::utf8(text, "encode", "text");  // valid while text lives
            nb::gil_scoped_release release;
            return t.encode(s, add_special_tokens);
          },
          "text"_a, "add_special_tokens"_a = false,
          "Token ids of text. Added/special tokens written in the text are matched; add_special_tokens "
          "applies the post-processor (e.g. Llama 3's <|begin_of_text|>).")
      .def(
          "encode_batch",
          [](const Tokenizer& t, nb::handle texts, bool add_special_tokens) {
            if (!PyList_Check(texts.ptr()) && !PyTuple_Check(texts.ptr()))
              throw kiln::TypeError("[encode_batch] texts must be a list or tuple of str, got " +
                                    kiln::py::py_type_name(texts));
            // Views into the str objects, which `keep` holds while the GIL is released.
            std::vector<nb::object> keep;
            std::vector<std::string_view> views;
            for (nb::handle item : texts) {
              keep.push_back(nb::borrow(item));
              views.push_back(kiln::py::utf8(item, "encode_batch",
                                             ("texts[" + std::to_string(views.size()) + "]").c_str()));
            }
            nb::gil_scoped_release release;
            std::vector<std::vector<int32_t>> out;
            out.reserve(views.size());
            for (std::string_view s : views) out.push_back(t.encode(s, add_special_tokens));
            return out;
          },
          "texts"_a, "add_special_tokens"_a = false)
      .def(
          "decode",
          [](const Tokenizer& t, const std::vector<int32_t>& ids, bool skip) {
            nb::gil_scoped_release release;
            return t.decode(ids, skip);
          },
          "ids"_a, "skip_special_tokens"_a = false,
          "Text of ids; bytes that are not valid UTF-8 become U+FFFD, unknown ids are skipped (as HF).")
      .def(
          "token_to_id",
          [](const Tokenizer& t, nb::handle token) {
            return t.token_to_id(kiln::py::utf8(token, "token_to_id", "token"));
          },
          "token"_a, "The id of a token in vocabulary form ('Ġthe'), or None.")
      .def("id_to_token", &Tokenizer::id_to_token, "id"_a, "The vocabulary form of an id, or None.")
      .def("is_special", &Tokenizer::is_special, "id"_a)
      .def("get_vocab_size", &Tokenizer::vocab_size)
      .def_prop_ro("vocab_size", &Tokenizer::vocab_size)
      .def_prop_ro("bos_token_id", &Tokenizer::bos_id)
      .def_prop_ro("eos_token_id", &Tokenizer::eos_id)
      .def_prop_ro("pad_token_id", &Tokenizer::pad_id)
      .def_prop_ro("bos_token", &Tokenizer::bos_token)
      .def_prop_ro("eos_token", &Tokenizer::eos_token)
      .def_prop_ro("chat_template",
                   [](const Tokenizer& t) -> std::optional<std::string> {
                     if (t.chat_template().empty()) return std::nullopt;
                     return t.chat_template();
                   })
      .def(
          "stream_decoder", [](const Tokenizer& t, bool skip) { return StreamDecoder(t, skip); },
          "skip_special_tokens"_a = false, "A StreamDecoder for this tokenizer.")
      .def("__repr__", [](const Tokenizer& t) {
        return "kiln.Tokenizer(vocab_size=" + std::to_string(t.vocab_size()) + ")";
      });
  init_tokenizer_chat(m, cls);

  nb::class_<StreamDecoder>(m, "StreamDecoder",
                            "Incremental detokenization: push(id) returns the text that is complete so far, "
                            "never half a UTF-8 character; flush() returns what is held.")
      .def(nb::init<Tokenizer, bool>(), "tokenizer"_a, "skip_special_tokens"_a = false)
      .def("push", &StreamDecoder::push, "id"_a)
      .def(
          "push_many",
          [](StreamDecoder& s, const std::vector<int32_t>& ids) {
            std::string out;
            for (int32_t id : ids) out += s.push(id);
            return out;
          },
          "ids"_a)
      .def("flush", &StreamDecoder::flush)
      .def_prop_ro("pending_bytes", &StreamDecoder::pending_bytes);
}
