// `kiln bench generate`, in two files: bench_generate.cc runs the whole
// benchmark (models, peers, table and JSON); bench_generate_case.cc measures
// one kiln case (model x weight dtype) in a child process of its own.
#pragma once

#include <string>
#include <vector>

#include "bench/harness.h"
#include "bench/options.h"

namespace kiln::cli::genbench {

using bench::json;

struct GenOptions : bench::CommonOptions {
  std::string peer_python, llama_python, default_model, model_dir;
  std::vector<std::string> models;  // "default", "moe", or paths
  std::vector<std::string> dtypes;  // kiln weight formats
  int tokens = 64, prompt_tokens = 32, moe_layers = 4;
  int hf_tokens = 16, hf_repeat = 1;  // transformers is slow: fewer tokens per timed run
  // --one: run a single kiln case in this process and print its JSON.
  bool one = false, split = false;
  std::string one_path, one_name;
};

double median(std::vector<double> v);

// Loads one model at one weight dtype (opt.one_path, opt.one_name, opt.dtypes[0])
// and measures it: memory, prefill, decode against the roof; the case's JSON.
json run_case(const GenOptions& opt);

}  // namespace kiln::cli::genbench
