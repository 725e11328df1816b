// tokenizer.ggml.* metadata -> TokenizerParts -> Tokenizer.
#include "kiln/io/gguf_tokenizer.h"

#include <fstream>
#include <string_view>

#include "kiln/error.h"

namespace kiln::io {

Tokenizer load_gguf_tokenizer(const GGUFFile& f) {
  TokenizerParts p;
  const std::vector<std::string>* tokens = f.get_string_array("tokenizer.ggml.tokens");
  KILN_CHECK(tokens != nullptr, ValueError, "[tokenizer] the GGUF file has no tokenizer (tokenizer.ggml.tokens)");
  p.model = f.get_string("tokenizer.ggml.model").value_or("gpt2");
  p.pre = f.get_string("tokenizer.ggml.pre").value_or("default");
  p.tokens = *tokens;
  if (const auto* merges = f.get_string_array("tokenizer.ggml.merges")) p.merges = *merges;
  if (const auto* types = f.get_int_array("tokenizer.ggml.token_type")) {
    KILN_CHECK(types->size() == tokens->size(), ValueError,
               "[tokenizer] GGUF tokenizer.ggml.token_type has " << types->size() << " entries for "
                                                                  << tokens->size() << " tokens");
    p.token_types.reserve(types->size());
    for (int64_t t : *types) {
      KILN_CHECK(t >= 0 && t <= 6, ValueError, "[tokenizer] GGUF token type " << t << " is not one of 0..6");
      p.token_types.push_back(int32_t(t));
    }
  }
  const auto id = [&](const char* key) -> int32_t {
    const std::optional<int64_t> v = f.get_int(key);
    if (!v) return -1;
    KILN_CHECK(*v >= 0 && *v < int64_t(tokens->size()), ValueError,
               "[tokenizer] GGUF " << key << " = " << *v << " is outside the " << tokens->size() << "-token vocabulary");
    return int32_t(*v);
  };
  p.bos_id = id("tokenizer.ggml.bos_token_id");
  p.eos_id = id("tokenizer.ggml.eos_token_id");
  p.pad_id = id("tokenizer.ggml.padding_token_id");
  p.add_bos = f.get_bool("tokenizer.ggml.add_bos_token").value_or(false);
  p.add_eos = f.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  p.chat_template = f.get_string("tokenizer.chat_template").value_or("");
  return Tokenizer::from_parts(p);
}

Tokenizer load_tokenizer(const std::string& path) {
  char magic[4] = {};
  std::ifstream f(path, std::ios::binary);
  if (f.read(magic, 4) && std::string_view(magic, 4) == "GGUF") return load_gguf_tokenizer(GGUFFile::open(path));
  return Tokenizer::from_file(path);
}

}  // namespace kiln::io
