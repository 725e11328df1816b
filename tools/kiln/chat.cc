// `kiln chat [MODEL]`: an interactive conversation in the model's chat
// template. Each turn re-renders the whole conversation, keeps the KV cache up
// to the longest prefix it shares with what is cached, and prefills only the
// rest. Lines come from stdin (a terminal or a pipe); /reset, /quit, EOF.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli_io.h"
#include "commands.h"
#include "kiln/chat_template.h"
#include "kiln/error.h"
#include "kiln/llm/generate.h"
#include "llm_common.h"

namespace kiln::cli {
namespace {

struct ChatFlags {
  ModelFlags model;
  SamplingFlags sampling;
  std::string system;
};

jinja::Value message(const std::string& role, const std::string& content) {
  jinja::Dict d;
  d.set("role", role);
  d.set("content", content);
  return jinja::Value(std::move(d));
}

int run_chat(ChatFlags& c) {
  if (const auto at = invalid_utf8_offset(c.system))
    throw UsageError("--system is not valid UTF-8 (byte " + std::to_string(*at) + ")");
  auto model = load_model(c.model);
  const Tokenizer& tok = model->tokenizer();
  if (tok.chat_template().empty()) throw ValueError("the model has no chat template; use kiln generate");
  const bool tty = ::isatty(0) != 0;
  if (tty && !c.model.quiet) std::fprintf(stderr, "chat: /reset starts over, /quit or Ctrl-D ends\n");

  jinja::List messages;
  if (!c.system.empty()) messages.push_back(message("system", c.system));
  const size_t base = messages.size();
  std::vector<int32_t> cached;  // the tokens the KV cache holds, in order
  InterruptGuard guard;
  std::string line;
  for (;;) {
    if (tty) {
      std::fputs("> ", stderr);
      std::fflush(stderr);
    }
    InterruptGuard::clear();
    // Waiting for a line, Ctrl-C ends kiln chat (status 130) as it ends a
    // shell's foreground command; while a reply streams, it stops the reply.
    InterruptGuard::set_idle(true);
    const bool got = static_cast<bool>(std::getline(std::cin, line));
    InterruptGuard::set_idle(false);
    if (!got) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // a "\r\n" line end
    if (line == "/quit" || line == "/exit") break;
    if (line == "/reset") {
      messages.resize(base);
      cached.clear();
      model->reset(0);
      if (!c.model.quiet) std::fprintf(stderr, "(conversation reset)\n");
      continue;
    }
    if (line.empty()) continue;
    if (invalid_utf8_offset(line)) {
      std::fprintf(stderr, "kiln chat: that line is not valid UTF-8; try again\n");
      continue;
    }
    messages.push_back(message("user", line));
    std::vector<int32_t> ids = tok.encode(apply_chat_template(tok, jinja::Value(messages), true), false);
    // Too long with the history: drop the oldest turns until this one fits
    // with room for the reply (up to --max-tokens, at most half the context).
    // After the system message, messages alternate user / assistant and end
    // in this turn's user message, so a turn is two messages.
    const int64_t room = std::min(c.sampling.options.max_tokens, model->max_context() / 2);
    size_t dropped = 0;
    while (int64_t(ids.size()) + room > model->max_context() && messages.size() >= base + 3) {
      messages.erase(messages.begin() + std::ptrdiff_t(base), messages.begin() + std::ptrdiff_t(base + 2));
      ++dropped;
      ids = tok.encode(apply_chat_template(tok, jinja::Value(messages), true), false);
    }
    if (dropped > 0 && !c.model.quiet)
      std::fprintf(stderr, "(the conversation outgrew the context; the oldest %zu turn%s dropped)\n", dropped,
                   dropped == 1 ? " was" : "s were");
    if (int64_t(ids.size()) >= model->max_context()) {
      std::fprintf(stderr, "kiln: error: the message is %zu tokens, more than the context allows (%lld)\n",
                   ids.size(), (long long)model->max_context());
      messages.pop_back();
      continue;
    }
    // Reuse the cached prefix; at least one token is always fed.
    size_t keep = 0;
    while (keep < cached.size() && keep < ids.size() && cached[keep] == ids[keep]) ++keep;
    keep = std::min(keep, ids.size() - 1);
    model->reset(int64_t(keep));
    std::vector<int32_t> rest(ids.begin() + std::ptrdiff_t(keep), ids.end());

    llm::GenerateOptions opt = generate_options(c.sampling);
    opt.cancel = InterruptGuard::cancel();
    llm::Generation gen(*model, std::move(rest), opt);
    std::string piece, shown;
    while (true) {
      const bool more = gen.next(piece);
      if (!piece.empty()) {
        write_stdout(piece);
        shown += piece;
      }
      if (!more) break;
    }
    write_stdout("\n");
    // The reply as text, without the end-of-turn token, for the next
    // rendering; cut at a --stop string, it is the text shown.
    std::vector<int32_t> out = gen.generated();
    if (!out.empty() && tok.is_special(out.back())) out.pop_back();
    const bool stopped = gen.stats().stop_reason == "stop";
    messages.push_back(message("assistant", stopped ? shown : tok.decode(out, /*skip_special_tokens=*/true)));
    cached = ids;
    cached.insert(cached.end(), gen.generated().begin(), gen.generated().end());
    cached.resize(size_t(std::min<int64_t>(int64_t(cached.size()), model->position())));
    if (!c.model.quiet) std::fprintf(stderr, "%s\n", stats_line(gen.stats(), *model).c_str());
  }
  return 0;
}

}  // namespace

Command add_chat(CLI::App& parent) {
  auto c = std::make_shared<ChatFlags>();
  CLI::App* app = parent.add_subcommand("chat", "Talk with a model in its chat template.");
  app->footer(
      "Reads one message per line from stdin (a terminal or a pipe) and streams each reply to stdout; "
      "the stats line of each turn goes to stderr. /reset forgets the conversation, /quit or end of "
      "input ends it, Ctrl-C stops a reply (at the prompt, it ends kiln chat with status 130). A line that "
      "is not UTF-8 is refused and the conversation goes on. The conversation stays in the KV cache; when "
      "it outgrows --context, the oldest turns are dropped. " +
      std::string(kModelConvention));
  app->add_option("model", c->model.model, "A .gguf file, a model directory, or \"default\"");
  app->add_option("--system", c->system, "A system message that opens the conversation");
  c->sampling.options.max_tokens = 256;
  add_sampling_flags(*app, c->sampling);
  add_model_flags(*app, c->model);
  return {app, [c] { return run_chat(*c); }};
}

}  // namespace kiln::cli
