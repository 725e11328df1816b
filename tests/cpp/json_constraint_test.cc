// The response_format matcher (src/serve/json_constraint): JSON texts and
// schemas it must accept and refuse, every prefix of an accepted text, and,
// over random documents and random byte edits, soundness against nlohmann's
// parser: whatever the matcher takes as a whole value parses as JSON.
#include "serve/json_constraint.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>

using kiln::serve::JsonMatcher;
using kiln::serve::JsonSchema;
using json = nlohmann::json;

namespace {

// Whether the whole text is a value the schema accepts.
bool accepts(const JsonSchema& s, const std::string& text) {
  JsonMatcher m(s);
  return m.advance(text) && m.can_end();
}

// Whether text can be continued into an accepted value (every byte taken).
bool continues(const JsonSchema& s, const std::string& text) {
  JsonMatcher m(s);
  return m.advance(text);
}

const char* kPerson = R"({"type": "object", "title": "person", "properties": {
  "name": {"type": "string", "description": "who"},
  "age": {"type": "integer"},
  "height": {"type": ["number", "null"]},
  "tags": {"type": "array", "items": {"enum": ["a", "b", 3]}, "maxItems": 2},
  "ok": {"type": "boolean"}},
  "required": ["name", "age"], "additionalProperties": false})";

TEST(JsonConstraint, AnyObject) {
  const auto s = JsonSchema::any_object();
  const std::string doc =
      R"({"a": [1, -2.5e3, 0, true, null, "x\u00e9\n"], "b": {}, "c": [], "d": {"e": false}})";
  EXPECT_TRUE(accepts(*s, doc));
  for (size_t i = 1; i < doc.size(); ++i) {
    EXPECT_TRUE(continues(*s, doc.substr(0, i))) << i;
    EXPECT_FALSE(accepts(*s, doc.substr(0, i))) << i;  // an object is whole only at its '}'
  }
  for (const char* bad :
       {"[1]", "\"x\"", "{\"a\" 1}", "{\"a\":01}", "{,}", "{\"a\":1,}", "{\"a\":tru}", "{\"a\":\"\x01\"}",
        "{\"a\":1} x", "{\"a\":-}", "{\"a\":1.}", "{\"a\":\"\\q\"}", "{\"a\":\"\\u12g4\"}"})
    EXPECT_FALSE(accepts(*s, bad)) << bad;
  // Strings hold well-formed UTF-8 and paired surrogate escapes only.
  EXPECT_TRUE(accepts(*s, "{\"a\": \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 \\ud83d\\ude00\"}"));
  for (const char* bad : {"{\"a\": \"\\udc00\"}", "{\"a\": \"\\ud83d\"}", "{\"a\": \"\\ud83dx\"}",
                          "{\"a\": \"\xc3\"}", "{\"a\": \"\xe0\x80\x80\"}", "{\"a\": \"\xed\xa0\x80\"}",
                          "{\"a\": \"\xf4\x90\x80\x80\"}", "{\"a\": \"\xc0\xaf\"}"})
    EXPECT_FALSE(accepts(*s, bad)) << bad;
  // Whitespace between tokens is bounded.
  EXPECT_TRUE(accepts(*s, "{\n  \"a\": 1\n}"));
  EXPECT_FALSE(continues(*s, "{" + std::string(40, ' ')));
}

TEST(JsonConstraint, Schema) {
  const auto s = JsonSchema::compile(json::parse(kPerson));
  EXPECT_TRUE(accepts(*s, R"({"name": "Bo", "age": 42, "tags": ["a", 3], "ok": true})"));
  EXPECT_TRUE(accepts(*s, R"({"age": -3, "height": null, "name": ""})"));
  EXPECT_TRUE(accepts(*s, R"({"name": "x", "age": 1, "height": 1.5e2})"));
  for (const char* bad : {R"({"name": "x"})",                                     // age is required
                          R"({"name": "x", "age": 4.5})",                         // an integer
                          R"({"name": "x", "age": 1, "nick": "y"})",              // not a listed property
                          R"({"name": "x", "name": "y", "age": 1})",              // given twice
                          R"({"name": 1, "age": 1})",                             // a string
                          R"({"name": "x", "age": 1, "tags": ["c"]})",            // not in the enum
                          R"({"name": "x", "age": 1, "tags": ["a", "b", "a"]})",  // maxItems
                          R"({"name": "x", "age": 1, "tags": [30]})",             // 3, not 30
                          R"({"name": "x", "age": 1, "ok": null})",               // a boolean
                          R"(["name"])"})
    EXPECT_FALSE(accepts(*s, bad)) << bad;
  // Scalars at the top: whole once they could stop.
  const auto n = JsonSchema::compile(json::parse(R"({"type": "integer"})"));
  EXPECT_TRUE(accepts(*n, "12"));
  EXPECT_FALSE(accepts(*n, "12.5"));
  const auto e = JsonSchema::compile(json::parse(R"({"enum": [1, 10, "x"]})"));
  EXPECT_TRUE(accepts(*e, "1"));
  EXPECT_TRUE(accepts(*e, "10"));
  EXPECT_TRUE(accepts(*e, "\"x\""));
  EXPECT_FALSE(continues(*e, "2"));
  const auto arr =
      JsonSchema::compile(json::parse(R"({"type": "array", "minItems": 1, "items": {"const": null}})"));
  EXPECT_FALSE(accepts(*arr, "[]"));
  EXPECT_TRUE(accepts(*arr, "[null, null]"));
}

TEST(JsonConstraint, RefusesWhatItCannotEnforce) {
  for (const char* s : {R"({"anyOf": [{"type": "string"}]})", R"({"type": "string", "pattern": "a+"})",
                        R"({"type": "integer", "minimum": 0})", R"({"$ref": "#/x"})", R"({"type": "date"})",
                        R"({"type": "object", "properties": {"a": {}}, "additionalProperties": true})",
                        R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})", "3"}) {
    EXPECT_THROW(JsonSchema::compile(json::parse(s)), std::invalid_argument) << s;
  }
}

// Random JSON values, as nlohmann writes them (compact and indented).
json random_value(std::mt19937& g, int depth) {
  std::uniform_int_distribution<int> kind(0, depth > 3 ? 4 : 6);
  switch (kind(g)) {
    case 0:
      return nullptr;
    case 1:
      return bool(g() & 1);
    case 2:
      return int64_t(g() % 2000) - 1000;
    case 3:
      return double(int64_t(g() % 100000) - 50000) / 64.0;
    case 4: {
      std::string s;
      static const char* parts[] = {"a", "b", "\"", "\\", "\n", "\t", "\xc3\xa9", " ", "z"};
      for (int i = int(g() % 6); i > 0; --i) s += parts[g() % 9];
      return s;
    }
    case 5: {
      json a = json::array();
      for (int i = int(g() % 4); i > 0; --i) a.push_back(random_value(g, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      for (int i = int(g() % 4); i > 0; --i) o["k" + std::to_string(g() % 5)] = random_value(g, depth + 1);
      return o;
    }
  }
}

TEST(JsonConstraint, SoundAgainstAParserOnRandomEdits) {
  const auto any = JsonSchema::compile(json::object());
  std::mt19937 g(7);
  int accepted_edits = 0;
  for (int it = 0; it < 3000; ++it) {
    const json v = random_value(g, 0);
    const std::string text = v.dump(it % 2 ? 1 : -1);
    ASSERT_TRUE(accepts(*any, text)) << text;
    std::string edit = text;
    const size_t at = g() % (edit.size() + 1);
    const char bytes[] = "{}[],:\"\\ 0-.eE1tfn";
    if (g() & 1 && !edit.empty())
      edit.erase(at < edit.size() ? at : 0, 1);
    else
      edit.insert(edit.begin() + std::ptrdiff_t(at), bytes[g() % (sizeof bytes - 1)]);
    if (accepts(*any, edit)) {
      ++accepted_edits;
      // nlohmann refuses numbers past double's range; their syntax is valid JSON.
      bool valid = true;
      try {
        const json parsed = json::parse(edit);
        (void)parsed;
      } catch (const json::out_of_range& e) {
        valid = e.id == 406;
      } catch (const json::exception&) {
        valid = false;
      }
      EXPECT_TRUE(valid) << "matcher took invalid JSON: "
                         << json(edit).dump(-1, ' ', false, json::error_handler_t::replace);
    }
  }
  EXPECT_GT(accepted_edits, 100);  // the edits do reach the matcher's accepting paths
}

}  // namespace
