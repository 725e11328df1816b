// The kiln CLI's subcommands. Each file registers its options on a CLI11 app
// and returns the function that runs it once the command line has parsed.
#pragma once

#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

namespace kiln::cli {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;  // returns the exit status
};

Command add_info(CLI::App& parent);       // info.cc
Command add_bench_ops(CLI::App& bench);   // bench_ops.cc
Command add_bench_load(CLI::App& bench);  // bench_load.cc
std::vector<Command> add_bench_matmul(CLI::App& bench);  // bench_matmul.cc: linear, scaled_mm, moe
Command add_bench_softmax(CLI::App& bench);    // bench_softmax.cc
Command add_bench_attention(CLI::App& bench);  // bench_attention.cc
Command add_bench_conv(CLI::App& bench);       // bench_conv.cc
Command add_bench_sample(CLI::App& bench);     // bench_sample.cc
Command add_tokenize(CLI::App& parent);   // tokenize.cc
Command add_bench_tokenizer(CLI::App& bench);  // bench_tokenizer.cc
Command add_bench_linalg(CLI::App& bench);  // bench_linalg.cc
Command add_generate(CLI::App& parent);     // generate.cc
Command add_chat(CLI::App& parent);         // chat.cc
Command add_serve(CLI::App& parent);        // serve.cc
Command add_perplexity(CLI::App& parent);   // perplexity.cc
Command add_convert(CLI::App& parent);      // convert.cc
Command add_quantize(CLI::App& parent);     // quantize.cc
Command add_bench_generate(CLI::App& bench);  // bench_generate.cc
Command add_bench_train(CLI::App& bench);     // bench_train.cc
Command add_bench_vae(CLI::App& bench);       // bench_vae.cc
Command add_bench_serve(CLI::App& bench);     // bench_serve.cc

}  // namespace kiln::cli
