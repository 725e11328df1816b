// The chat page served at GET / (web/chat.html, built into the binary so the
// server needs no files beside it).
#pragma once

#include <string_view>

namespace kiln::serve {

std::string_view chat_page();

}  // namespace kiln::serve
