// The kiln CLI's subcommands. Each file registers its options on a CLI11 app
// and returns the function that runs it once the command line has parsed.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace kiln::cli {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;  // returns the exit status
};

Command add_info(CLI::App& parent);       // info.cc
Command add_bench_ops(CLI::App& bench);   // bench_ops.cc
Command add_bench_linalg(CLI::App& bench);  // bench_linalg.cc

}  // namespace kiln::cli
