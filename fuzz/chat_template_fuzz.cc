// libFuzzer target: the input as a chat template (what a GGUF file or a
// tokenizer_config.json carries), parsed and rendered over a typical
// conversation with a system prompt, reasoning, a tool call and tools. Every
// failure must be a kiln error; the engine's step, memory and nesting limits
// must end every render well inside the -timeout and -rss_limit_mb that
// scripts/fuzz sets.
#include <cstdint>
#include <string>
#include <string_view>

#include "kiln/chat_template.h"
#include "kiln/error.h"

namespace {

const kiln::jinja::Value& context(bool add_generation_prompt) {
  static const auto make = [](bool gen) {
    return kiln::jinja::Value::parse_json(std::string(R"({
      "messages": [
        {"role": "system", "content": "You are terse.\n"},
        {"role": "user", "content": "Weather in Paris? \u65e5\u672c \ud83d\ude00"},
        {"role": "assistant", "content": "<think>\nLook it up.\n</think>\n\n", "reasoning_content": "r",
         "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]},
        {"role": "tool", "content": "{\"temp\": 21}"},
        {"role": "assistant", "content": "21 and sunny."},
        {"role": "user", "content": "<tool_response>x</tool_response>"}],
      "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                       "required": ["city"]}}}],
      "bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "enable_thinking": false,
      "add_generation_prompt": )") + (gen ? "true" : "false") +
                                          "}");
  };
  static const kiln::jinja::Value with = make(true), without = make(false);
  return add_generation_prompt ? with : without;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view src(reinterpret_cast<const char*>(data), size);
  try {
    const kiln::jinja::Template t(src);
    (void)t.render(context(size % 2 == 0));
  } catch (const kiln::Error&) {
  }
  return 0;
}
