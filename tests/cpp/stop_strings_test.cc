// Stop strings on streamed text (src/llm/stop_strings.h), against a reference
// that reads the whole text one character at a time: the text ends where the
// first stop string to complete begins, however the text was split into pieces.
#include "llm/stop_strings.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kiln/error.h"

using kiln::llm::detail::check_stop_strings;
using kiln::llm::detail::push_past_stops;

namespace {

// The reference: grow the text one character at a time; at the first length
// where it ends with a stop string (the longest, when several end there), cut
// before that stop string.
std::string reference_cut(const std::string& text, const std::vector<std::string>& stops, bool& stopped) {
  for (size_t end = 1; end <= text.size(); ++end) {
    size_t longest = 0;
    for (const std::string& s : stops)
      if (s.size() <= end && text.compare(end - s.size(), s.size(), s) == 0)
        longest = std::max(longest, s.size());
    if (longest > 0) {
      stopped = true;
      return text.substr(0, end - longest);
    }
  }
  stopped = false;
  return text;
}

struct Streamed {
  std::string shown;
  bool stopped = false;
};

Streamed stream(const std::vector<std::string>& pieces, const std::vector<std::string>& stops) {
  Streamed r;
  std::string held, so_far;
  for (const std::string& p : pieces) {
    so_far += p;
    bool stopped = false;
    r.shown += push_past_stops(stops, held, p, stopped);
    if (stopped) {
      r.stopped = true;
      return r;
    }
    // Nothing is held that could not begin a stop string, and nothing is lost.
    EXPECT_EQ(r.shown + held, so_far);
    size_t longest = 0;
    for (const std::string& s : stops) longest = std::max(longest, s.size());
    EXPECT_LT(held.size(), std::max<size_t>(longest, 1));
  }
  r.shown += held;  // the end of generation shows what was held
  return r;
}

}  // namespace

TEST(StopStrings, SplitAcrossPieces) {
  const std::vector<std::string> stops = {"o w"};
  std::string held;
  bool stopped = false;
  EXPECT_EQ(push_past_stops(stops, held, "Hel", stopped), "Hel");
  EXPECT_FALSE(stopped);
  EXPECT_EQ(push_past_stops(stops, held, "lo ", stopped), "l");  // "o " may begin "o w"
  EXPECT_EQ(held, "o ");
  EXPECT_EQ(push_past_stops(stops, held, "world", stopped), "");
  EXPECT_TRUE(stopped);
  EXPECT_TRUE(held.empty());
}

TEST(StopStrings, HeldTextThatIsNotAStopIsShown) {
  const std::vector<std::string> stops = {"User:"};
  std::string held;
  bool stopped = false;
  EXPECT_EQ(push_past_stops(stops, held, "a Us", stopped), "a ");
  EXPECT_EQ(push_past_stops(stops, held, "e", stopped), "");
  EXPECT_EQ(push_past_stops(stops, held, "d it", stopped), "Used it");
  EXPECT_FALSE(stopped);
}

TEST(StopStrings, FirstToCompleteWins) {
  // "bc" completes before "abcd" does, char by char; one piece bringing both
  // must cut at the same place.
  Streamed r = stream({"xabcd"}, {"abcd", "bc"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.shown, "xa");
  // At the same end, the longer one.
  r = stream({"xabc"}, {"bc", "abc"});
  EXPECT_EQ(r.shown, "x");
}

TEST(StopStrings, NoStopsPassesPiecesThrough) {
  std::string held;
  bool stopped = true;
  EXPECT_EQ(push_past_stops({}, held, "abc", stopped), "abc");
  EXPECT_FALSE(stopped);
  EXPECT_TRUE(held.empty());
}

TEST(StopStrings, EmptyStopStringIsRefused) {
  EXPECT_NO_THROW(check_stop_strings({"a", "\n"}));
  EXPECT_THROW(check_stop_strings({"a", ""}), kiln::ValueError);
}

TEST(StopStrings, RandomPiecesMatchTheReference) {
  std::mt19937 rng(1234);
  const std::string alphabet = "ab\n";
  auto random_string = [&](size_t lo, size_t hi) {
    std::string s(std::uniform_int_distribution<size_t>(lo, hi)(rng), 'a');
    for (char& c : s) c = alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)];
    return s;
  };
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::string> stops;
    for (size_t k = std::uniform_int_distribution<size_t>(1, 3)(rng); k > 0; --k)
      stops.push_back(random_string(1, 4));
    const std::string text = random_string(0, 24);
    std::vector<std::string> pieces;
    for (size_t i = 0; i < text.size();) {
      const size_t n = std::min(text.size() - i, std::uniform_int_distribution<size_t>(0, 5)(rng));
      pieces.push_back(text.substr(i, n));  // empty pieces too: a character split across tokens
      i += n;
    }
    bool want_stopped = false;
    const std::string want = reference_cut(text, stops, want_stopped);
    const Streamed got = stream(pieces, stops);
    ASSERT_EQ(got.shown, want) << "trial " << trial << " text '" << text << "'";
    ASSERT_EQ(got.stopped, want_stopped) << "trial " << trial;
  }
}
