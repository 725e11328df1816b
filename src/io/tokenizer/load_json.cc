// tokenizer.json (+ tokenizer_config.json) -> tok::Impl, parsed with simdjson.
// Anything the file asks for that kiln does not implement is refused by name.
#include <simdjson.h>

#include "io/tokenizer/impl.h"

namespace kiln::tok {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

[[noreturn]] void bad(const std::string& what) { throw ValueError("[tokenizer] tokenizer.json: " + what); }

template <typename T>
T get(simdjson::simdjson_result<T> r, const char* what) {
  T v;
  if (std::move(r).get(v) != simdjson::SUCCESS) bad(std::string("expected ") + what);
  return v;
}

std::string get_str(element e, const char* what) { return std::string(get<std::string_view>(e.get_string(), what)); }

// Optional field: missing or null -> fallback.
bool opt_bool(object o, const char* key, bool fallback) {
  element e;
  if (o[key].get(e) != simdjson::SUCCESS || e.is_null()) return fallback;
  return get<bool>(e.get_bool(), key);
}
std::string opt_str(object o, const char* key) {
  element e;
  if (o[key].get(e) != simdjson::SUCCESS || e.is_null()) return {};
  return get_str(e, key);
}
bool has(object o, const char* key, element* e) {
  return o[key].get(*e) == simdjson::SUCCESS && !e->is_null();
}
std::string type_of(object o) { return opt_str(o, "type"); }

Normalization normalizer(element e) {
  if (e.is_null()) return Normalization::none;
  const object o = get<object>(e.get_object(), "normalizer object");
  const std::string t = type_of(o);
  if (t == "NFC") return Normalization::nfc;
  if (t == "NFD") return Normalization::nfd;
  if (t == "NFKC") return Normalization::nfkc;
  if (t == "NFKD") return Normalization::nfkd;
  if (t == "Sequence") {
    Normalization n = Normalization::none;
    for (element x : get<array>(o["normalizers"].get_array(), "normalizers array")) {
      const Normalization m = normalizer(x);
      if (m != Normalization::none && n != Normalization::none)
        throw NotImplementedError("[tokenizer] more than one normalizer in a Sequence is not supported");
      if (m != Normalization::none) n = m;
    }
    return n;
  }
  throw NotImplementedError("[tokenizer] normalizer '" + t + "' is not supported (NFC, NFD, NFKC, NFKD)");
}

SplitBehavior behavior(const std::string& b) {
  if (b == "Isolated") return SplitBehavior::isolated;
  if (b == "Removed") return SplitBehavior::removed;
  if (b == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
  if (b == "MergedWithNext") return SplitBehavior::merged_with_next;
  if (b == "Contiguous") return SplitBehavior::contiguous;
  bad("unknown Split behavior '" + b + "'");
}

void pre_tokenizer(element e, std::vector<PreStep>& steps) {
  if (e.is_null()) return;
  const object o = get<object>(e.get_object(), "pre_tokenizer object");
  const std::string t = type_of(o);
  if (t == "Sequence") {
    for (element x : get<array>(o["pretokenizers"].get_array(), "pretokenizers array")) pre_tokenizer(x, steps);
  } else if (t == "Split") {
    const object pat = get<object>(o["pattern"].get_object(), "Split pattern object");
    PreStep s;
    element r;
    if (has(pat, "Regex", &r))
      s.regex = compile_regex(get_str(r, "Regex string"), false);
    else if (has(pat, "String", &r))
      s.regex = compile_regex(get_str(r, "String pattern"), true);
    else
      bad("Split pattern needs Regex or String");
    s.behavior = behavior(opt_str(o, "behavior"));
    s.invert = opt_bool(o, "invert", false);
    steps.push_back(std::move(s));
  } else if (t == "ByteLevel") {
    PreStep s;
    s.kind = PreStep::byte_level;
    s.add_prefix_space = opt_bool(o, "add_prefix_space", true);
    if (opt_bool(o, "use_regex", true)) s.regex = compile_regex(kGpt2Pattern, false);
    steps.push_back(std::move(s));
  } else if (t == "Digits") {
    PreStep s;
    s.regex = compile_regex(opt_bool(o, "individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)", false);
    steps.push_back(std::move(s));
  } else {
    throw NotImplementedError("[tokenizer] pre-tokenizer '" + t +
                              "' is not supported (Sequence, Split, ByteLevel, Digits)");
  }
}

void check_decoder(element e) {
  if (e.is_null()) return;
  const object o = get<object>(e.get_object(), "decoder object");
  const std::string t = type_of(o);
  if (t == "ByteLevel") return;
  if (t == "Sequence") {
    for (element x : get<array>(o["decoders"].get_array(), "decoders array")) check_decoder(x);
    return;
  }
  throw NotImplementedError("[tokenizer] decoder '" + t + "' is not supported (ByteLevel)");
}

void post_processor(element e, Impl& impl) {
  if (e.is_null()) return;
  const object o = get<object>(e.get_object(), "post_processor object");
  const std::string t = type_of(o);
  if (t == "ByteLevel") return;  // offsets only
  if (t == "Sequence") {
    for (element x : get<array>(o["processors"].get_array(), "processors array")) post_processor(x, impl);
    return;
  }
  if (t == "TemplateProcessing") {
    const object specials = get<object>(o["special_tokens"].get_object(), "special_tokens object");
    bool seen_sequence = false;
    for (element item : get<array>(o["single"].get_array(), "single template array")) {
      const object it = get<object>(item.get_object(), "template item");
      element x;
      if (has(it, "Sequence", &x)) {
        seen_sequence = true;
      } else if (has(it, "SpecialToken", &x)) {
        const std::string name = get_str(get<object>(x.get_object(), "SpecialToken")["id"], "SpecialToken id");
        const object st = get<object>(specials[name].get_object(), "special_tokens entry");
        for (element id : get<array>(st["ids"].get_array(), "special token ids"))
          (seen_sequence ? impl.suffix_ids : impl.prefix_ids).push_back(int32_t(get<int64_t>(id.get_int64(), "id")));
      }
    }
    return;
  }
  if (t == "RobertaProcessing" || t == "BertProcessing") {
    auto pair_id = [&](const char* key) {
      array a = get<array>(o[key].get_array(), key);
      return int32_t(get<int64_t>(a.at(1).get_int64(), "token id"));
    };
    impl.prefix_ids.push_back(pair_id("cls"));
    impl.suffix_ids.push_back(pair_id("sep"));
    return;
  }
  throw NotImplementedError("[tokenizer] post-processor '" + t + "' is not supported");
}

// "<s>" or {"content": "<s>", ...}
std::string token_string(element e) {
  if (e.is_string()) return get_str(e, "token");
  if (e.is_object()) return opt_str(get<object>(e.get_object(), "token"), "content");
  return {};
}

void read_config(std::string_view text, Impl& impl) {
  simdjson::dom::parser parser;
  element root;
  if (parser.parse(simdjson::padded_string(text)).get(root) != simdjson::SUCCESS)
    throw ValueError("[tokenizer] tokenizer_config.json is not valid JSON");
  object o;
  if (root.get_object().get(o) != simdjson::SUCCESS) throw ValueError("[tokenizer] tokenizer_config.json is not an object");
  element e;
  if (has(o, "chat_template", &e)) {
    if (e.is_string()) {
      impl.chat_template = get_str(e, "chat_template");
    } else if (e.is_array()) {  // [{"name": "default", "template": ...}, ...]
      for (element x : get<array>(e.get_array(), "chat_template list")) {
        const object t = get<object>(x.get_object(), "chat_template entry");
        if (opt_str(t, "name") == "default" || impl.chat_template.empty()) impl.chat_template = opt_str(t, "template");
      }
    }
  }
  auto id_of = [&](const char* key) -> std::optional<int32_t> {
    element x;
    if (!has(o, key, &x)) return std::nullopt;
    const int32_t id = impl.vocab.find(token_string(x));
    if (id < 0) return std::nullopt;
    return id;
  };
  if (auto id = id_of("bos_token")) impl.bos = id;
  if (auto id = id_of("eos_token")) impl.eos = id;
  if (auto id = id_of("pad_token")) impl.pad = id;
}

}  // namespace

std::shared_ptr<Impl> load_tokenizer_json(std::string_view json, std::string_view config_json) {
  simdjson::dom::parser parser;
  element root;
  const auto err = parser.parse(simdjson::padded_string(json)).get(root);
  if (err) bad(std::string("not valid JSON (") + simdjson::error_message(err) + ")");
  const object top = get<object>(root.get_object(), "a JSON object at the top");
  auto impl = std::make_shared<Impl>();

  const object model = get<object>(top["model"].get_object(), "a \"model\" object");
  const std::string mtype = type_of(model);
  if (!mtype.empty() && mtype != "BPE")
    throw NotImplementedError("[tokenizer] model type '" + mtype + "' is not supported (BPE)");
  if (!opt_str(model, "continuing_subword_prefix").empty() || !opt_str(model, "end_of_word_suffix").empty())
    throw NotImplementedError("[tokenizer] BPE continuing_subword_prefix/end_of_word_suffix are not supported");
  if (opt_bool(model, "byte_fallback", false))
    throw NotImplementedError("[tokenizer] BPE byte_fallback (SentencePiece-style vocabularies) is not supported");
  impl->ignore_merges = opt_bool(model, "ignore_merges", false);

  const object vocab = get<object>(model["vocab"].get_object(), "a model.vocab object");
  element added_el;
  const bool has_added = has(top, "added_tokens", &added_el);
  size_t n_added = 0;
  if (has_added) n_added = get<array>(added_el.get_array(), "added_tokens array").size();
  impl->max_id = int64_t(vocab.size() + n_added) + 1024;
  impl->vocab.reserve(vocab.size() + 512);
  impl->id_to_vocab.reserve(vocab.size() + 512);
  for (auto field : vocab) {
    const int64_t id = get<int64_t>(field.value.get_int64(), "integer ids in model.vocab");
    if (id < 0 || id > impl->max_id) bad("vocabulary id " + std::to_string(id) + " out of range");
    impl->add_vocab_token(std::string(field.key), int32_t(id));
    impl->in_model[size_t(id)] = 1;
  }

  std::vector<AddedToken> added;
  if (has_added) {
    for (element x : get<array>(added_el.get_array(), "added_tokens array")) {
      const object a = get<object>(x.get_object(), "added token object");
      AddedToken t;
      t.id = int32_t(get<int64_t>(a["id"].get_int64(), "added token id"));
      t.content = std::string(get<std::string_view>(a["content"].get_string(), "added token content"));
      t.special = opt_bool(a, "special", false);
      t.lstrip = opt_bool(a, "lstrip", false);
      t.rstrip = opt_bool(a, "rstrip", false);
      t.single_word = opt_bool(a, "single_word", false);
      t.normalized = opt_bool(a, "normalized", !t.special);
      impl->add_vocab_token(t.content, t.id);
      impl->in_model[size_t(t.id)] = 0;
      added.push_back(std::move(t));
    }
  }
  impl->build_bpe_tables();

  const array merges = get<array>(model["merges"].get_array(), "a model.merges array");
  impl->merges.reserve(merges.size());
  int32_t rank = 0;
  for (element m : merges) {
    std::string_view a, b;
    if (m.is_string()) {  // "a b"
      const std::string_view s = get<std::string_view>(m.get_string(), "merge string");
      const size_t sp = s.find(' ', 1);
      if (sp == std::string_view::npos) bad("merge " + std::to_string(rank) + " '" + std::string(s) + "' has no space");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else {  // ["a", "b"]
      const array p = get<array>(m.get_array(), "merges as strings or pairs");
      if (p.size() != 2) bad("merge " + std::to_string(rank) + " is not a pair");
      a = get<std::string_view>(p.at(0).get_string(), "merge pair strings");
      b = get<std::string_view>(p.at(1).get_string(), "merge pair strings");
    }
    impl->add_merge(a, b, rank++);
  }
  impl->added = std::move(added);

  element e;
  if (top["normalizer"].get(e) == simdjson::SUCCESS) impl->normalization = normalizer(e);
  if (top["pre_tokenizer"].get(e) == simdjson::SUCCESS) pre_tokenizer(e, impl->pre_steps);
  bool byte_level = false;
  for (const PreStep& s : impl->pre_steps) byte_level |= s.kind == PreStep::byte_level;
  if (!byte_level)
    throw NotImplementedError("[tokenizer] only byte-level BPE is supported (no ByteLevel pre-tokenizer found)");
  if (top["post_processor"].get(e) == simdjson::SUCCESS) post_processor(e, *impl);
  if (top["decoder"].get(e) == simdjson::SUCCESS) check_decoder(e);

  if (!config_json.empty()) read_config(config_json, *impl);
  impl->finish();
  return impl;
}

}  // namespace kiln::tok
