// The tokenizer part of `kiln bench tokenizer` and `kiln bench load --tokenizer`:
// tokenizer.json load time, encode and decode MB/s on a generated multilingual corpus.
#pragma once

#include <string>

#include "bench/harness.h"
#include "bench/options.h"

namespace kiln::cli {

struct TokenizerBenchOptions : bench::CommonOptions {
  std::string tokenizer;  // tokenizer.json, a GGUF file, a directory holding tokenizer.json; "" or "default"
};

// {machine, threads, tokenizer, vocab_size, corpus_bytes, results: [load, encode_first_pass, encode, decode]}
bench::json bench_tokenizer(const TokenizerBenchOptions& opt);

}  // namespace kiln::cli
