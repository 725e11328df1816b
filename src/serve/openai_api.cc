// Request checking and response building for OpenAI's chat and completions API.
#include "serve/openai_api.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "kiln/chat_template.h"
#include "kiln/tokenizer.h"
#include "serve/json_constraint.h"

namespace kiln::serve {

using json = nlohmann::json;

namespace {

// Valid UTF-8 out whatever the bytes (a token may be part of a character).
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, message, param);
}

std::string type_name(const json& v) { return v.type_name(); }

double number(const json& body, const char* key, double lo, double hi, double dflt) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return dflt;
  if (!it->is_number()) bad(key, std::string("'") + key + "' must be a number, got " + type_name(*it));
  const double v = it->get<double>();
  if (!(v >= lo && v <= hi))
    bad(key, std::string("'") + key + "' must be between " + json(lo).dump() + " and " + json(hi).dump() +
                 ", got " + it->dump());
  return v;
}

int64_t integer(const json& body, const char* key, int64_t lo, int64_t hi, int64_t dflt) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return dflt;
  if (!it->is_number_integer())
    bad(key, std::string("'") + key + "' must be an integer, got " + it->dump().substr(0, 40));
  // Unsigned values past int64 would wrap: take the signed reading only when it fits.
  if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT64_MAX))
    bad(key, std::string("'") + key + "' is out of range");
  const int64_t v = it->get<int64_t>();
  if (v < lo || v > hi)
    bad(key, std::string("'") + key + "' must be between " + std::to_string(lo) + " and " +
                 std::to_string(hi) + ", got " + std::to_string(v));
  return v;
}

bool boolean(const json& body, const char* key, bool dflt) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return dflt;
  if (!it->is_boolean()) bad(key, std::string("'") + key + "' must be a boolean, got " + type_name(*it));
  return it->get<bool>();
}

std::vector<std::string> stops(const json& body) {
  const auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return {};
  std::vector<std::string> out;
  if (it->is_string()) {
    out.push_back(it->get<std::string>());
  } else if (it->is_array() && it->size() <= 4) {
    for (const auto& s : *it) {
      if (!s.is_string()) bad("stop", "'stop' must be a string or a list of up to 4 strings");
      out.push_back(s.get<std::string>());
    }
  } else {
    bad("stop", "'stop' must be a string or a list of up to 4 strings");
  }
  for (const auto& s : out)
    if (s.empty()) bad("stop", "a stop string may not be empty");
  return out;
}

// A message's content as text: a string, or a list of {"type": "text", "text"} parts.
std::string content_text(const json& c, size_t i) {
  const std::string param = "messages[" + std::to_string(i) + "].content";
  if (c.is_string()) return c.get<std::string>();
  if (c.is_null()) return "";
  if (!c.is_array()) bad(param, "'" + param + "' must be a string or a list of text parts");
  std::string s;
  for (const auto& p : c) {
    if (!p.is_object() || p.value("type", "") != "text" || !p.contains("text") || !p["text"].is_string())
      bad(param, "'" + param + "': only text parts ({\"type\": \"text\", \"text\": ...}) are supported");
    s += p["text"].get<std::string>();
  }
  return s;
}

// The messages as the chat template reads them (content as text).
json chat_messages(const json& body) {
  const auto it = body.find("messages");
  if (it == body.end()) bad("messages", "'messages' is required");
  if (!it->is_array() || it->empty()) bad("messages", "'messages' must be a non-empty list");
  static const std::set<std::string> roles = {"system", "developer", "user", "assistant", "tool"};
  json out = json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string p = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) bad(p, "'" + p + "' must be an object");
    if (!m.contains("role") || !m["role"].is_string() || !roles.count(m["role"].get<std::string>()))
      bad(p + ".role", "'" + p + ".role' must be one of system, developer, user, assistant, tool");
    json n = m;
    if (n["role"] == "developer") n["role"] = "system";
    n["content"] = content_text(m.contains("content") ? m["content"] : json(nullptr), i);
    out.push_back(std::move(n));
  }
  return out;
}

void check_known(const json& body, const std::set<std::string>& known) {
  for (const auto& [k, v] : body.items())
    if (!known.count(k)) bad(k, "Unrecognized request argument supplied: " + k);
}

std::string random_id(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  const auto t = uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  char b[64];
  std::snprintf(b, sizeof b, "%s%016llx%04llx", prefix, (unsigned long long)t,
                (unsigned long long)(counter.fetch_add(1) & 0xffff));
  return b;
}

}  // namespace

std::string error_body(const std::string& message, const std::string& type, const std::string& param,
                       const std::string& code) {
  json e = {{"message", message},
            {"type", type},
            {"param", param.empty() ? json(nullptr) : json(param)},
            {"code", code.empty() ? json(nullptr) : json(code)}};
  return dump(json{{"error", e}});
}

ApiRequest parse_request(Endpoint endpoint, std::string_view text, const llm::Model& model,
                         const ApiLimits& limits) {
  json body;
  try {
    body = json::parse(text);
  } catch (const json::exception& e) {
    throw ApiError(400, std::string("the body is not valid JSON: ") + e.what());
  }
  if (!body.is_object()) bad("", "the body must be a JSON object");
  ApiRequest r;
  r.endpoint = endpoint;
  const bool chat = endpoint == Endpoint::Chat;
  static const std::set<std::string> common = {"model",
                                               "max_tokens",
                                               "temperature",
                                               "top_p",
                                               "top_k",
                                               "min_p",
                                               "seed",
                                               "stop",
                                               "n",
                                               "stream",
                                               "stream_options",
                                               "presence_penalty",
                                               "frequency_penalty",
                                               "repetition_penalty",
                                               "user",
                                               "logit_bias",
                                               "logprobs",
                                               "ignore_eos"};
  std::set<std::string> known = common;
  if (chat)
    known.insert({"messages", "max_completion_tokens", "top_logprobs", "tools", "tool_choice",
                  "response_format", "parallel_tool_calls", "chat_template_kwargs"});
  else
    known.insert({"prompt", "echo", "suffix", "best_of"});
  check_known(body, known);
  if (body.contains("model") && !body["model"].is_string()) bad("model", "'model' must be a string");

  const Tokenizer& tok = model.tokenizer();
  Request& q = r.req;
  if (chat) {
    const json messages = chat_messages(body);
    json extra = json::object();
    if (body.contains("tools") && !body["tools"].is_null()) {
      if (!body["tools"].is_array()) bad("tools", "'tools' must be a list");
      extra["tools"] = body["tools"];
    }
    if (body.contains("tool_choice") && !body["tool_choice"].is_null() && !body["tool_choice"].is_string() &&
        !body["tool_choice"].is_object())
      bad("tool_choice", "'tool_choice' must be a string or an object");
    if (body.contains("chat_template_kwargs") && !body["chat_template_kwargs"].is_null()) {
      if (!body["chat_template_kwargs"].is_object())
        bad("chat_template_kwargs", "'chat_template_kwargs' must be an object");
      for (const auto& [k, v] : body["chat_template_kwargs"].items()) extra[k] = v;
    }
    if (body.contains("response_format") && !body["response_format"].is_null()) {
      const json& f = body["response_format"];
      if (!f.is_object() || !f.contains("type") || !f["type"].is_string())
        bad("response_format", "'response_format' must be an object with a 'type'");
      const std::string type = f["type"].get<std::string>();
      if (type == "json_object") {
        r.req.schema = JsonSchema::any_object();
      } else if (type == "json_schema") {
        const auto js = f.find("json_schema");
        if (js == f.end() || !js->is_object() || !js->contains("schema"))
          bad("response_format.json_schema",
              "'response_format.json_schema' must be an object with a 'schema'");
        try {
          r.req.schema = JsonSchema::compile((*js)["schema"]);
        } catch (const std::invalid_argument& e) {
          bad("response_format.json_schema.schema", e.what());
        }
      } else if (type != "text") {
        bad("response_format.type", "'response_format.type' must be text, json_object or json_schema");
      }
    }
    if (tok.chat_template().empty())
      throw ApiError(400, "the model has no chat template; use /v1/completions");
    std::string prompt;
    try {
      prompt = apply_chat_template(tok, jinja::Value::parse_json(dump(messages)), true,
                                   jinja::Value::parse_json(dump(extra)));
    } catch (const Error& e) {
      throw ApiError(400, std::string("the chat template could not render these messages: ") + e.what(),
                     "messages");
    }
    q.prompt = tok.encode(prompt, false);
    const int64_t mt = integer(body, "max_tokens", 1, limits.max_tokens, limits.max_tokens);
    q.max_tokens = integer(body, "max_completion_tokens", 1, limits.max_tokens, mt);
    const auto lp = boolean(body, "logprobs", false);
    const int64_t top = integer(body, "top_logprobs", 0, 20, -1);
    if (top >= 0 && !lp) bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    q.top_logprobs = lp ? std::max<int64_t>(top, 0) : -1;
  } else {
    const auto it = body.find("prompt");
    if (it == body.end()) bad("prompt", "'prompt' is required");
    if (it->is_string()) {
      r.prompt_text = it->get<std::string>();
      q.prompt = tok.encode(r.prompt_text, true);
    } else if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
      r.prompt_text = (*it)[0].get<std::string>();
      q.prompt = tok.encode(r.prompt_text, true);
    } else if (it->is_array() && !it->empty() && (*it)[0].is_number_integer()) {
      for (const auto& t : *it) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= model.config().vocab_size)
          bad("prompt", "'prompt' token ids must be integers in [0, " +
                            std::to_string(model.config().vocab_size) + ")");
        q.prompt.push_back(int32_t(t.get<int64_t>()));
      }
      r.prompt_text = tok.decode(q.prompt);
    } else {
      bad("prompt", "'prompt' must be a string, a list of one string, or a list of token ids");
    }
    q.max_tokens = integer(body, "max_tokens", 1, limits.max_tokens, 16);
    q.top_logprobs = integer(body, "logprobs", 0, 5, -1);
    r.echo = boolean(body, "echo", false);
    if (body.contains("suffix") && !body["suffix"].is_null()) bad("suffix", "'suffix' is not supported");
    if (integer(body, "best_of", 1, 1, 1) != 1) bad("best_of", "'best_of' must be 1");
  }
  if (q.prompt.empty()) bad(chat ? "messages" : "prompt", "the prompt is empty");
  if (int64_t(q.prompt.size()) >= model.max_context())
    throw ApiError(400,
                   "the prompt is " + std::to_string(q.prompt.size()) + " tokens; this model's context is " +
                       std::to_string(model.max_context()) + " tokens",
                   chat ? "messages" : "prompt", "invalid_request_error");
  q.sampling.temperature = number(body, "temperature", 0, 2, 1.0);
  q.sampling.top_p = number(body, "top_p", 0, 1, 1.0);
  if (q.sampling.top_p <= 0) bad("top_p", "'top_p' must be > 0");
  q.sampling.top_k = integer(body, "top_k", 0, INT32_MAX, 0);
  q.sampling.min_p = number(body, "min_p", 0, 1, 0.0);
  q.sampling.presence_penalty = number(body, "presence_penalty", -2, 2, 0.0);
  q.sampling.frequency_penalty = number(body, "frequency_penalty", -2, 2, 0.0);
  q.sampling.repetition_penalty = number(body, "repetition_penalty", 1e-6, 1e6, 1.0);
  if (body.contains("logit_bias") && !body["logit_bias"].is_null() &&
      !(body["logit_bias"].is_object() && body["logit_bias"].empty()))
    bad("logit_bias", "'logit_bias' is not supported");
  if (body.contains("user") && !body["user"].is_null() && !body["user"].is_string())
    bad("user", "'user' must be a string");
  q.seed = uint64_t(integer(body, "seed", INT64_MIN, INT64_MAX, 0));
  q.stop = stops(body);
  q.n = integer(body, "n", 1, 128, 1);
  q.stop_at_eos = !boolean(body, "ignore_eos", false);
  r.stream = boolean(body, "stream", false);
  if (body.contains("stream_options") && !body["stream_options"].is_null()) {
    const json& so = body["stream_options"];
    if (!so.is_object()) bad("stream_options", "'stream_options' must be an object");
    for (const auto& [k, v] : so.items())
      if (k != "include_usage") bad("stream_options." + k, "Unrecognized stream option: " + k);
    if (!r.stream) bad("stream_options", "'stream_options' is only allowed when 'stream' is true");
    r.include_usage = boolean(so, "include_usage", false);
  }
  return r;
}

// ---- responses --------------------------------------------------------------------

ResponseBuilder::ResponseBuilder(const ApiRequest& r, const Tokenizer& tok, std::string model_name)
    : r_(r),
      tok_(tok),
      model_(std::move(model_name)),
      id_(random_id(r.endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-")),
      created_(std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count()),
      choices_(size_t(r.req.n)) {}

namespace {

// Characters (code points) of UTF-8 text: text_offset counts these, as OpenAI's does.
int64_t chars(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

// Chat: {"content": [{token, logprob, bytes, top_logprobs}]}; completions:
// {tokens, token_logprobs, top_logprobs, text_offset}.
json logprobs_json(const std::vector<TokenInfo>& toks, bool chat, const Tokenizer& tok, int64_t offset0) {
  auto text = [&](int32_t id) {
    const int32_t one[] = {id};
    return tok.decode(one);
  };
  if (chat) {
    json content = json::array();
    for (const auto& t : toks) {
      const std::string s = text(t.id);
      json top = json::array();
      for (const auto& a : t.top) {
        const std::string as = text(a.id);
        top.push_back({{"token", as}, {"logprob", a.logprob}, {"bytes", bytes_of(as)}});
      }
      content.push_back(
          {{"token", s}, {"logprob", t.logprob}, {"bytes", bytes_of(s)}, {"top_logprobs", top}});
    }
    return json{{"content", content}};
  }
  json tokens = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
  int64_t off = offset0;
  for (const auto& t : toks) {
    const std::string s = text(t.id);
    tokens.push_back(s);
    lps.push_back(t.logprob);
    json top = json::object();
    for (const auto& a : t.top) top[text(a.id)] = a.logprob;
    tops.push_back(top);
    offs.push_back(off);
    off += chars(s);
  }
  return json{{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

}  // namespace

std::string ResponseBuilder::chunk_json(int64_t choice, const Event* e, bool open_role,
                                        int64_t offset) const {
  const bool chat = r_.endpoint == Endpoint::Chat;
  json c = {{"index", choice}};
  if (chat) {
    json delta = json::object();
    if (open_role) delta["role"] = "assistant";
    if (open_role) delta["content"] = "";
    if (e && !e->text.empty()) delta["content"] = e->text;
    c["delta"] = delta;
  } else {
    c["text"] = e ? e->text : "";
  }
  c["logprobs"] = e && !e->tokens.empty() ? logprobs_json(e->tokens, chat, tok_, offset) : json(nullptr);
  c["finish_reason"] = e && !e->finish_reason.empty() ? json(e->finish_reason) : json(nullptr);
  json j = {{"id", id_},
            {"object", chat ? "chat.completion.chunk" : "text_completion"},
            {"created", created_},
            {"model", model_},
            {"choices", json::array({c})}};
  return "data: " + dump(j) + "\n\n";
}

std::string ResponseBuilder::chunks(const std::vector<Event>& events) {
  std::string out;
  if (!opened_) {
    opened_ = true;
    for (int64_t i = 0; i < r_.req.n; ++i) {
      if (r_.endpoint == Endpoint::Chat) {
        out += chunk_json(i, nullptr, true);
      } else if (r_.echo) {
        Event e;
        e.text = r_.prompt_text;
        out += chunk_json(i, &e, false);
        choices_[size_t(i)].streamed = chars(e.text);
      }
    }
  }
  for (const auto& e : events) {
    if (e.finish_reason == "error") failed_ = true;
    if (e.text.empty() && e.tokens.empty() && e.finish_reason.empty()) continue;
    if (e.finish_reason == "cancelled") continue;
    auto& c = choices_[size_t(e.choice)];
    out += chunk_json(e.choice, &e, false, c.streamed);  // text_offset: where this text starts
    c.streamed += chars(e.text);
  }
  return out;
}

std::string ResponseBuilder::end(int64_t prompt_tokens, int64_t completion_tokens) {
  std::string out;
  if (r_.include_usage) {
    json j = {{"id", id_},
              {"object", r_.endpoint == Endpoint::Chat ? "chat.completion.chunk" : "text_completion"},
              {"created", created_},
              {"model", model_},
              {"choices", json::array()},
              {"usage",
               {{"prompt_tokens", prompt_tokens},
                {"completion_tokens", completion_tokens},
                {"total_tokens", prompt_tokens + completion_tokens}}}};
    out += "data: " + dump(j) + "\n\n";
  }
  return out + "data: [DONE]\n\n";
}

void ResponseBuilder::add(const std::vector<Event>& events) {
  for (const auto& e : events) {
    auto& c = choices_[size_t(e.choice)];
    c.text += e.text;
    c.tokens.insert(c.tokens.end(), e.tokens.begin(), e.tokens.end());
    if (!e.finish_reason.empty()) c.finish = e.finish_reason;
    if (e.finish_reason == "error") failed_ = true;
  }
}

std::string ResponseBuilder::body(int64_t prompt_tokens, int64_t completion_tokens) const {
  const bool chat = r_.endpoint == Endpoint::Chat;
  json choices = json::array();
  for (size_t i = 0; i < choices_.size(); ++i) {
    const auto& c = choices_[i];
    json o = {{"index", i}};
    const bool lp = r_.req.top_logprobs >= 0;
    if (chat) {
      o["message"] = {{"role", "assistant"}, {"content", c.text}};
      o["logprobs"] = lp ? logprobs_json(c.tokens, true, tok_, 0) : json(nullptr);
    } else {
      const std::string head = r_.echo ? r_.prompt_text : "";
      o["text"] = head + c.text;
      o["logprobs"] = lp ? logprobs_json(c.tokens, false, tok_, chars(head)) : json(nullptr);
    }
    o["finish_reason"] = c.finish.empty() ? json(nullptr) : json(c.finish);
    choices.push_back(std::move(o));
  }
  json j = {{"id", id_},
            {"object", chat ? "chat.completion" : "text_completion"},
            {"created", created_},
            {"model", model_},
            {"choices", choices},
            {"usage",
             {{"prompt_tokens", prompt_tokens},
              {"completion_tokens", completion_tokens},
              {"total_tokens", prompt_tokens + completion_tokens}}}};
  return dump(j);
}

}  // namespace kiln::serve
