// `kiln tokenize [--tokenizer PATH] [--ids-only] TEXT|-`: the token ids (and
// tokens) of a text, or of standard input when TEXT is "-".
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_io.h"
#include "commands.h"
#include "kiln/io/gguf_tokenizer.h"
#include "kiln/tokenizer.h"
#include "llm_common.h"

namespace kiln::cli {
namespace {

struct TokenizeOptions {
  std::string tokenizer;  // "" or "default": the default model's
  std::string text;
  bool ids_only = false;
  bool json = false;
  bool add_special = false;
  bool quiet = false;
};

int run_tokenize(const TokenizeOptions& opt) {
  const Tokenizer tok = io::load_tokenizer(resolve_tokenizer_path(opt.tokenizer, opt.quiet));
  // Standard input as `kiln generate --prompt -` reads it: one trailing newline dropped.
  const std::string text = opt.text == "-" ? strip_one_newline(read_text_input("-")) : opt.text;
  const std::vector<int32_t> ids = tok.encode(text, opt.add_special);
  if (opt.json) {
    nlohmann::json j{{"ids", ids}, {"tokens", nlohmann::json::array()}};
    for (int32_t id : ids) j["tokens"].push_back(tok.id_to_token(id).value_or(""));
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (opt.ids_only) {
    for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
    std::printf("\n");
  } else {
    for (int32_t id : ids) std::printf("%d\t%s\n", id, tok.id_to_token(id).value_or("").c_str());
  }
  return 0;
}

}  // namespace

Command add_tokenize(CLI::App& parent) {
  auto opt = std::make_shared<TokenizeOptions>();
  CLI::App* app = parent.add_subcommand("tokenize", "Print the token ids (and tokens) of a text.");
  app->footer(
      "The tokenizer is that of a MODEL as every command names one: a .gguf file, a model directory "
      "(its tokenizer.json), a tokenizer.json, or \"default\"; without --tokenizer, the default model's.");
  app->add_option(
      "--tokenizer", opt->tokenizer,
      "tokenizer.json, a GGUF model file, a model directory holding tokenizer.json, or \"default\" "
      "(the default)");
  app->add_option("text", opt->text,
                  "The text, or - to read standard input (one trailing newline is dropped, as generate does)")
      ->required();
  app->add_flag("--ids-only", opt->ids_only, "Print only the ids, space-separated on one line");
  app->add_flag("--json", opt->json, "Print {\"ids\": [...], \"tokens\": [...]}");
  app->add_flag("--add-special-tokens", opt->add_special, "Apply the post-processor (e.g. a BOS token)");
  app->add_flag("-q,--quiet", opt->quiet, "No progress lines on stderr (when the default model is fetched)");
  return {app, [opt] { return run_tokenize(*opt); }};
}

}  // namespace kiln::cli
