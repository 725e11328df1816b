// `kiln tokenize --tokenizer PATH [--ids-only] TEXT|-`: the token ids (and
// tokens) of a text, or of standard input when TEXT is "-".
#include <filesystem>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "kiln/commands.h"
#include "kiln/io/gguf_tokenizer.h"
#include "kiln/tokenizer.h"

namespace kiln::cli {
namespace {

struct TokenizeOptions {
  std::string tokenizer;
  std::string text;
  bool ids_only = false;
  bool json = false;
  bool add_special = false;
};

int run_tokenize(const TokenizeOptions& opt) {
  std::string path = opt.tokenizer;
  if (std::filesystem::is_directory(path)) path += "/tokenizer.json";  // a model directory
  const Tokenizer tok = io::load_tokenizer(path);
  std::string text = opt.text;
  if (text == "-") text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
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
  app->add_option("--tokenizer", opt->tokenizer, "tokenizer.json, a GGUF model file, or a model directory holding tokenizer.json")->required();
  app->add_option("text", opt->text, "The text, or - to read standard input")->required();
  app->add_flag("--ids-only", opt->ids_only, "Print only the ids, space-separated on one line");
  app->add_flag("--json", opt->json, "Print {\"ids\": [...], \"tokens\": [...]}");
  app->add_flag("--add-special-tokens", opt->add_special, "Apply the post-processor (e.g. a BOS token)");
  return {app, [opt] { return run_tokenize(*opt); }};
}

}  // namespace kiln::cli
