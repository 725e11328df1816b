// Stop strings on streamed text (kiln generate --stop, generate(stop=[...])):
// generation ends when its text produces any of them, and the text returned
// ends just before it, as OpenAI's `stop` and llama.cpp's server do. While
// streaming, text that could be the start of a stop string is held back
// until the next pieces show whether it is one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln::llm::detail {

// ValueError when a stop string is empty (it would match before any text).
void check_stop_strings(const std::vector<std::string>& stops);

// Appends `piece` to `held` (the generated text not shown yet) and returns the
// text now safe to show; `held` keeps the longest tail that could begin a stop
// string. When a stop string completes, `stopped` is set, the text returned
// ends where it begins (the first one to complete wins: the smallest end, at
// equal ends the longer), and `held` is emptied. No stops: `piece` as it is.
std::string push_past_stops(const std::vector<std::string>& stops, std::string& held, std::string_view piece,
                            bool& stopped);

}  // namespace kiln::llm::detail
