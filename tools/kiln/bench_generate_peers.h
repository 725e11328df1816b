// Peers for `kiln bench generate`: llama.cpp (through llama-cpp-python) and
// Hugging Face transformers + PyTorch on the CPU, each run as a small script
// under a user-named Python, one model and dtype per process (so its peak
// memory is its own). Both feed the same prompt token ids kiln used, decode
// greedily for the same number of tokens with the same thread count, and time
// prefill and every decode step. A missing python or package is a missing
// column, never a failure.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "bench/python_side.h"

namespace kiln::cli {

using GeneratePeer = bench::PythonRun;  // {ok, why (one line when !ok), doc (the script's JSON)}

// config: {"kind": "llama_cpp" | "transformers", "path", "dtype" ("bf16"|"f32",
// transformers only), "prompt_ids": [...], "tokens", "repeat", "threads"}.
// transformers loads a .gguf through gguf_file= (dequantized) or a HF directory.
GeneratePeer run_generate_peer(const std::string& python, const nlohmann::json& config);

}  // namespace kiln::cli
