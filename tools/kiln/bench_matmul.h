// What `kiln bench linear|scaled_mm` (bench_matmul.cc) and `kiln bench moe`
// (bench_moe.cc) share: the options, the run context and a few helpers.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench/harness.h"
#include "bench/options.h"
#include "kiln/dtype.h"
#include "kiln/tensor.h"

namespace kiln::cli::matbench {

using bench::json;

struct MatOptions : bench::CommonOptions {
  std::string what;  // linear | scaled_mm | moe
  std::string cases, peer_python, dtypes = "f32,bf16,fp8";
  std::string prefill_rows = "64,512,2048";  // linear: M of the prefill cases over the decode shapes
  std::string prefill_dtypes;                // linear: weight kinds the prefill cases add
  std::string gguf_types;                    // linear: ggml block types of the decode cases
  int threads = 0, limit = 0;
  bool no_prefill = false;
  bool exact_too = false;  // linear: also time bf16/FP8 cases with the dot kernel off
  std::string plot;
};

struct Ctx {
  const MatOptions& opt;
  bench::Runner& runner;
  json& results;
  json& summary;
};

// Appends r to the results (and prints a line unless --json).
void record(Ctx& c, bench::Result r);

json read_json(const std::string& path);

// Memory a case may take: a third of what is free now.
double mem_budget();

struct WeightKind {
  std::string label;  // f32 | bf16 | bf16-bf16x | f16 | fp8 (e4m3, row scales) | fp8-block | fp8-tensor
  DType dtype;
  int scale;                   // 0 none, 1 tensor, 2 row, 3 block
  DType act = DType::Float32;  // x and y of the decode cases
};
WeightKind weight_kind(const std::string& s);

double geomean(const std::vector<double>& v);

// One MoE layer per config and token count, with the PyTorch peers
// (torch._grouped_mm, a per-expert F.linear loop) when --peer-python is given.
void moe_cases(Ctx& c);

// One-token block_linear per --gguf-types type over the decode shapes (bench_gguf.cc).
void gguf_decode_cases(Ctx& c);

}  // namespace kiln::cli::matbench
