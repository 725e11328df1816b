// OpenAI's HTTP API on the engine: request bodies of /v1/chat/completions and
// /v1/completions checked and turned into engine requests (chat messages
// rendered by the model's chat template), and the engine's events turned
// into OpenAI's response objects and server-sent-event chunks.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/llm/model.h"
#include "serve/engine.h"

namespace kiln::serve {

// A request refused, as OpenAI's error object says it.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string param = "",
           std::string type = "invalid_request_error")
      : std::runtime_error(std::move(message)),
        status(status),
        param(std::move(param)),
        type(std::move(type)) {}
  int status;
  std::string param, type;
};

// {"error": {"message", "type", "param", "code"}}
std::string error_body(const std::string& message, const std::string& type, const std::string& param = "",
                       const std::string& code = "");

enum class Endpoint { Chat, Completion };

struct ApiLimits {
  int64_t max_tokens = 4096;  // the most a request may ask for (and a chat's default)
};

struct ApiRequest {
  Endpoint endpoint = Endpoint::Chat;
  Request req;
  bool stream = false;
  bool include_usage = false;
  bool echo = false;  // completions: the prompt's text starts the choice's text
  std::string prompt_text;
};

// Throws ApiError (400) naming the field for anything OpenAI's API would refuse
// (bad JSON or UTF-8, an unknown field, a value of the wrong type or range).
ApiRequest parse_request(Endpoint endpoint, std::string_view body, const llm::Model& model,
                         const ApiLimits& limits);

// Builds one request's response: chunks as the events arrive when streaming,
// else one object at the end.
class ResponseBuilder {
 public:
  ResponseBuilder(const ApiRequest& r, const Tokenizer& tok, std::string model_name);
  // Streaming: the "data: ...\n\n" lines for these events (the first call
  // also opens each chat choice with its role).
  std::string chunks(const std::vector<Event>& events);
  // Streaming: the usage chunk when asked, then "data: [DONE]".
  std::string end(int64_t prompt_tokens, int64_t completion_tokens);
  // Not streaming: gathers events, then the whole response object.
  void add(const std::vector<Event>& events);
  std::string body(int64_t prompt_tokens, int64_t completion_tokens) const;
  bool failed() const { return failed_; }  // a choice ended in an error

 private:
  std::string chunk_json(int64_t choice, const Event* e, bool open_role, int64_t offset = 0) const;
  const ApiRequest& r_;
  const Tokenizer& tok_;
  std::string model_, id_;
  int64_t created_ = 0;
  bool opened_ = false, failed_ = false;
  struct Choice {
    std::string text, finish;
    std::vector<TokenInfo> tokens;
    int64_t streamed = 0;  // characters of text streamed so far
  };
  std::vector<Choice> choices_;
};

}  // namespace kiln::serve
