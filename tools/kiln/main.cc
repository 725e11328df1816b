// kiln: the command-line front end. `kiln --help` lists the commands.
#include <cstdio>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

#include <CLI/CLI.hpp>

#include "kiln/commands.h"
#include "kiln/openblas_restart.h"
#include "kiln/version.h"

int main(int argc, char** argv) {
  kiln::cli::maybe_restart_for_openblas();  // before any GEMM or LAPACK call
  CLI::App app{"kiln: tensors, FP8 and LLM kernels for the CPU.", "kiln"};
  app.set_version_flag("--version", std::string("kiln ") + kiln::kVersion);
  app.require_subcommand(0, 1);

  std::vector<kiln::cli::Command> commands;
  commands.push_back(kiln::cli::add_info(app));
  commands.push_back(kiln::cli::add_tokenize(app));
  commands.push_back(kiln::cli::add_generate(app));
  commands.push_back(kiln::cli::add_chat(app));
  commands.push_back(kiln::cli::add_perplexity(app));
  commands.push_back(kiln::cli::add_convert(app));
  CLI::App* bench = app.add_subcommand("bench", "Measure kiln's speed against the machine's memory roof.");
  bench->require_subcommand(0, 1);
  commands.push_back(kiln::cli::add_bench_ops(*bench));
  commands.push_back(kiln::cli::add_bench_load(*bench));
  for (auto& c : kiln::cli::add_bench_matmul(*bench)) commands.push_back(c);
  commands.push_back(kiln::cli::add_bench_softmax(*bench));
  commands.push_back(kiln::cli::add_bench_attention(*bench));
  commands.push_back(kiln::cli::add_bench_sample(*bench));
  commands.push_back(kiln::cli::add_bench_tokenizer(*bench));
  commands.push_back(kiln::cli::add_bench_linalg(*bench));
  commands.push_back(kiln::cli::add_bench_generate(*bench));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "kiln: error: %s (see 'kiln --help')\n", e.what());
    return 2;
  }

  std::string running = "kiln";  // the command, for errors that do not name it
  try {
    for (const auto& c : commands)
      if (c.app->parsed()) {
        running = c.app->get_name();
        return c.run();
      }
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "kiln: error: %s ran out of memory (an allocation failed)\n", running.c_str());
    return 1;
  } catch (const std::logic_error& e) {  // std::length_error, std::out_of_range, ...: a size out of range
    std::fprintf(stderr, "kiln: error: %s: a size or value out of range (%s)\n", running.c_str(), e.what());
    return 1;
  } catch (const std::bad_cast& e) {
    std::fprintf(stderr, "kiln: error: %s: a value of the wrong type (%s)\n", running.c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln: error: %s\n", e.what());
    return 1;
  }
  // A group without its subcommand (`kiln`, `kiln bench`): show what there is.
  const CLI::App* shown = bench->parsed() ? bench : &app;
  std::fputs(shown->help().c_str(), stderr);
  return 2;
}
