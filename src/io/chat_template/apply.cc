// Tokenizer + chat template: the variables transformers passes to the template.
#include <map>
#include <mutex>

#include "kiln/chat_template.h"
#include "kiln/tokenizer.h"

namespace kiln {

std::string apply_chat_template(const Tokenizer& tokenizer, const jinja::Value& messages, bool add_generation_prompt,
                                const jinja::Value& extra) {
  const std::string& source = tokenizer.chat_template();
  if (source.empty()) throw ValueError("[apply_chat_template] the tokenizer has no chat template");
  // Parsed templates are kept per source text: a chat loop renders the same one each turn.
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const jinja::Template>> parsed;
  std::shared_ptr<const jinja::Template> t;
  {
    std::lock_guard lock(mu);
    auto it = parsed.find(source);
    if (it == parsed.end()) {
      if (parsed.size() > 16) parsed.clear();
      it = parsed.emplace(source, std::make_shared<const jinja::Template>(source)).first;
    }
    t = it->second;
  }
  jinja::Dict ctx;
  ctx.set("messages", messages);
  ctx.set("add_generation_prompt", jinja::Value(add_generation_prompt));
  if (auto s = tokenizer.bos_token()) ctx.set("bos_token", jinja::Value(*s));
  if (auto s = tokenizer.eos_token()) ctx.set("eos_token", jinja::Value(*s));
  if (auto id = tokenizer.pad_id())
    if (auto s = tokenizer.id_to_token(*id)) ctx.set("pad_token", jinja::Value(*s));
  if (extra.kind == jinja::Value::Kind::dict)
    for (const auto& kv : extra.dict->items) ctx.set(kv.first, kv.second);
  return t->render(jinja::Value(std::move(ctx)));
}

}  // namespace kiln
