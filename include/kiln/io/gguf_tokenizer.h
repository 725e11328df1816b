// The tokenizer a GGUF file embeds (tokenizer.ggml.*, tokenizer.chat_template),
// as the same kiln::Tokenizer that the model's tokenizer.json gives.
#pragma once

#include <string>

#include "kiln/io/gguf.h"
#include "kiln/tokenizer.h"

namespace kiln::io {

// ValueError when the file holds no tokenizer; NotImplementedError for a
// tokenizer model other than byte-level BPE ("gpt2"), named.
Tokenizer load_gguf_tokenizer(const GGUFFile& file);

// The tokenizer of a model file: a GGUF file's embedded one (by its magic),
// else tokenizer.json (Tokenizer::from_file). Kept here, not in Tokenizer, so
// the tokenizer itself does not depend on the GGUF reader.
Tokenizer load_tokenizer(const std::string& path);

}  // namespace kiln::io
