// Stop strings on streamed text; see stop_strings.h.
#include "llm/stop_strings.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln::llm::detail {

void check_stop_strings(const std::vector<std::string>& stops) {
  for (size_t i = 0; i < stops.size(); ++i)
    KILN_CHECK(!stops[i].empty(), ValueError, "[generate] stop string " << i << " is empty");
}

std::string push_past_stops(const std::vector<std::string>& stops, std::string& held, std::string_view piece,
                            bool& stopped) {
  stopped = false;
  if (stops.empty()) return std::string(piece);
  held.append(piece);
  // Everything before `held` was shown, and no tail of it began a stop string
  // (that tail would have been held), so a match lies wholly inside `held`.
  // The one that completes first wins, so the cut does not depend on how the
  // text was split into pieces.
  size_t best_end = std::string::npos, best_begin = 0;
  for (const std::string& s : stops) {
    const size_t at = held.find(s);
    if (at == std::string::npos) continue;
    const size_t end = at + s.size();
    if (end < best_end || (end == best_end && at < best_begin)) {
      best_end = end;
      best_begin = at;
    }
  }
  if (best_end != std::string::npos) {
    std::string out = held.substr(0, best_begin);
    held.clear();
    stopped = true;
    return out;
  }
  // Hold back the longest tail of `held` that is a proper prefix of a stop string.
  size_t keep = 0;
  for (const std::string& s : stops) {
    for (size_t k = std::min(s.size() - 1, held.size()); k > keep; --k) {
      if (held.compare(held.size() - k, k, s, 0, k) == 0) {
        keep = k;
        break;
      }
    }
  }
  std::string out = held.substr(0, held.size() - keep);
  held.erase(0, held.size() - keep);
  return out;
}

}  // namespace kiln::llm::detail
