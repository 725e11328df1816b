// `kiln perplexity [MODEL] FILE`: exp(mean negative log-likelihood) of a
// text's tokens under a model, with the token count and speed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cli_io.h"
#include "commands.h"
#include "kiln/error.h"
#include "kiln/llm/generate.h"
#include "llm_common.h"

namespace kiln::cli {
namespace {

struct PerplexityFlags {
  ModelFlags model;
  std::vector<std::string> positional;  // [MODEL] FILE
  std::string file;
  int64_t window = 0;
  bool json = false;
};

// A file kiln would load as a model: a directory, or a file that starts with GGUF's magic.
bool looks_like_model(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return true;
  char magic[4] = {};
  std::ifstream f(path, std::ios::binary);
  return f.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

int run_perplexity(PerplexityFlags& p) {
  const auto& pos = p.positional;
  if (pos.empty()) throw UsageError("no text file: expected [MODEL] FILE");
  if (pos.size() > 2) throw UsageError("too many arguments: expected [MODEL] FILE");
  if (pos.size() == 2) {
    p.model.model = pos[0];
    p.file = pos[1];
  } else {
    // One argument is the FILE (the model is then the default one); a model
    // there means the text was forgotten.
    p.file = pos[0];
    if (looks_like_model(p.file))
      throw UsageError(p.file + " is a model, not a text file: give the text too, kiln perplexity " + p.file +
                       " FILE");
  }
  const std::string text = read_text_input(p.file);
  auto model = load_model(p.model);
  const std::vector<int32_t> ids = model->tokenizer().encode(text, /*add_special_tokens=*/true);
  if (ids.size() < 2) throw ValueError(p.file + " has fewer than 2 tokens; perplexity needs at least 2");
  // The window used: --window, at most the context.
  const int64_t window = p.window > 0 ? std::min(p.window, model->max_context()) : model->max_context();
  const auto t0 = std::chrono::steady_clock::now();
  const double ppl = llm::perplexity(*model, ids, window);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double tps = secs > 0 ? double(ids.size()) / secs : 0;
  if (p.json) {
    nlohmann::ordered_json j{{"perplexity", ppl},
                             {"tokens", ids.size()},
                             {"window", window},
                             {"dtype", llm::weight_format_name(model->weight_format())},
                             {"seconds", secs},
                             {"tokens_per_second", tps},
                             {"weight_bytes", model->weight_bytes()},
                             {"peak_rss_bytes", peak_rss_bytes()}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("perplexity %.4f over %zu tokens (window %lld, %s weights) in %.2f s, %.1f tok/s\n", ppl,
                ids.size(), (long long)window, llm::weight_format_name(model->weight_format()), secs, tps);
  }
  return 0;
}

}  // namespace

Command add_perplexity(CLI::App& parent) {
  auto p = std::make_shared<PerplexityFlags>();
  CLI::App* app = parent.add_subcommand("perplexity", "Perplexity of a model on a text file.");
  app->footer(
      std::string(
          "With one argument, it is the FILE and the model is the default one; with two, MODEL FILE. ") +
      kModelConvention +
      " The text is tokenized as a whole (with the model's BOS token when it adds one) and scored in "
      "windows of at most --window tokens, each starting from an empty cache.");
  app->add_option("args", p->positional,
                  "[MODEL] FILE: a model (default: the default model) and a UTF-8 text file");
  app->add_option("--window", p->window, "Tokens per window (0, or more than --context: the context length)")
      ->check(non_negative_int64());
  app->add_flag("--json", p->json, "Print one JSON object instead of the text line");
  add_model_flags(*app, p->model);
  return {app, [p] { return run_perplexity(*p); }};
}

}  // namespace kiln::cli
