// kiln: the command-line front end. `kiln --help` lists the commands.
#include <cstdio>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli_io.h"
#include "commands.h"
#include "finetune.h"
#include "kiln/version.h"
#include "openblas_restart.h"

namespace {

// "kiln generate", "kiln bench ops": how error lines name the command.
std::string command_name(const CLI::App& app) {
  std::string name = app.get_name();
  for (const CLI::App* p = app.get_parent(); p != nullptr; p = p->get_parent())
    name = (p->get_parent() == nullptr ? std::string("kiln") : p->get_name()) + " " + name;
  return name;
}

// Flushes stdout; a write that failed turns `status` into 1 with one line on stderr.
int report_output_error(const std::string& command, int status) {
  try {
    kiln::cli::flush_stdout();
  } catch (const kiln::cli::OutputError& e) {
    std::fprintf(stderr, "%s: %s\n", command.c_str(), e.what());
    return status != 0 ? status : 1;
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  if (const int status = kiln::cli::maybe_exec_python_command(argc, argv); status >= 0) return status;
  kiln::cli::maybe_restart_for_openblas();  // before any GEMM or LAPACK call
  CLI::App app{"kiln: tensors, FP8 and LLM kernels for the CPU.", "kiln"};
  app.set_version_flag("--version", std::string("kiln ") + kiln::kVersion);
  app.require_subcommand(0, 1);

  std::vector<kiln::cli::Command> commands;
  commands.push_back(kiln::cli::add_info(app));
  commands.push_back(kiln::cli::add_tokenize(app));
  commands.push_back(kiln::cli::add_generate(app));
  commands.push_back(kiln::cli::add_chat(app));
  commands.push_back(kiln::cli::add_serve(app));
  commands.push_back(kiln::cli::add_perplexity(app));
  commands.push_back(kiln::cli::add_convert(app));
  commands.push_back(kiln::cli::add_quantize(app));
  // Listed for --help; `kiln finetune|vae ...` run python -m kiln.finetune|vae before parsing.
  app.add_subcommand("finetune",
                     "LoRA fine-tuning in Python (python -m kiln.finetune; see kiln finetune --help).");
  app.add_subcommand("vae",
                     "Encode images to latents / decode latents to PNG with a diffusers AutoencoderKL "
                     "(python -m kiln.vae; see kiln vae --help).");
  CLI::App* bench = app.add_subcommand("bench", "Measure kiln's speed against the machine's memory roof.");
  bench->require_subcommand(0, 1);
  commands.push_back(kiln::cli::add_bench_ops(*bench));
  commands.push_back(kiln::cli::add_bench_load(*bench));
  for (auto& c : kiln::cli::add_bench_matmul(*bench)) commands.push_back(c);
  commands.push_back(kiln::cli::add_bench_softmax(*bench));
  commands.push_back(kiln::cli::add_bench_attention(*bench));
  commands.push_back(kiln::cli::add_bench_conv(*bench));
  commands.push_back(kiln::cli::add_bench_sample(*bench));
  commands.push_back(kiln::cli::add_bench_tokenizer(*bench));
  commands.push_back(kiln::cli::add_bench_linalg(*bench));
  commands.push_back(kiln::cli::add_bench_generate(*bench));
  commands.push_back(kiln::cli::add_bench_train(*bench));
  commands.push_back(kiln::cli::add_bench_vae(*bench));
  commands.push_back(kiln::cli::add_bench_serve(*bench));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version
      const int status = app.exit(e);
      return report_output_error("kiln", status);
    }
    std::fprintf(stderr, "kiln: error: %s (see 'kiln --help')\n", e.what());
    return 2;
  }

  for (const auto& c : commands) {
    if (!c.app->parsed()) continue;
    const std::string running = command_name(*c.app);
    int status = 1;
    try {
      status = c.run();
    } catch (const kiln::cli::OutputError& e) {
      std::fprintf(stderr, "%s: %s\n", running.c_str(), e.what());
      return 1;
    } catch (const kiln::cli::UsageError& e) {
      std::fprintf(stderr, "kiln: error: %s\n", e.what());
      return 2;
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "kiln: error: %s ran out of memory (an allocation failed)\n", running.c_str());
      status = 1;
    } catch (const std::logic_error& e) {  // std::length_error, std::out_of_range, ...: a size out of range
      std::fprintf(stderr, "kiln: error: %s: a size or value out of range (%s)\n", running.c_str(), e.what());
      status = 1;
    } catch (const std::bad_cast& e) {
      std::fprintf(stderr, "kiln: error: %s: a value of the wrong type (%s)\n", running.c_str(), e.what());
      status = 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kiln: error: %s\n", e.what());
      status = 1;
    }
    // What is still buffered for stdout must reach it too: `kiln info > /dev/full` fails.
    return report_output_error(running, status);
  }
  // A group without its subcommand (`kiln`, `kiln bench`): show what there is.
  const CLI::App* shown = bench->parsed() ? bench : &app;
  std::fputs(shown->help().c_str(), stderr);
  return 2;
}
