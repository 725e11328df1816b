// The HTTP side of kiln::serve::Server: routes, the API key, body limits,
// server-sent events, and OpenAI's error shape for every refusal. HTTP
// parsing is cpp-httplib's; each connection runs on a pool thread, and a
// streaming response holds its thread while it waits on the engine.
#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "kiln/error.h"
#include "kiln/serve.h"
#include "serve/chat_page.h"
#include "serve/engine.h"
#include "serve/metrics.h"
#include "serve/openai_api.h"

namespace kiln::serve {

namespace {

using Clock = std::chrono::steady_clock;

const char* error_type(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 404:
      return "not_found_error";
    case 429:
      return "rate_limit_error";
    case 500:
    case 503:
      return "server_error";
    default:
      return "invalid_request_error";
  }
}

void send_error(httplib::Response& res, int status, const std::string& message,
                const std::string& param = "") {
  res.status = status;
  res.set_content(error_body(message, error_type(status), param), "application/json");
}

}  // namespace

struct Server::Impl {
  Impl(llm::Model& m, ServeOptions o)
      : model(m), opt(std::move(o)), engine(m, engine_options(opt), metrics) {}
  static EngineOptions engine_options(const ServeOptions& o) {
    EngineOptions e;
    e.max_batch = o.max_batch;
    e.step_tokens = o.step_tokens;
    e.max_queue = o.max_queue;
    e.idle_sequences = o.idle_sequences;
    return e;
  }
  bool authorized(const httplib::Request& req) const {
    if (opt.api_key.empty()) return true;
    const std::string h = req.get_header_value("Authorization");
    const std::string want = "Bearer " + opt.api_key;
    if (h.size() != want.size()) return false;
    unsigned diff = 0;  // compared in constant time
    for (size_t i = 0; i < h.size(); ++i) diff |= unsigned(h[i] ^ want[i]);
    return diff == 0;
  }
  void completion(Endpoint ep, const httplib::Request& req, httplib::Response& res);
  std::string name() const { return opt.model_name.empty() ? "kiln" : opt.model_name; }

  llm::Model& model;
  ServeOptions opt;
  Metrics metrics;
  Engine engine;
  httplib::Server http;
  int port = 0;
};

void Server::Impl::completion(Endpoint ep, const httplib::Request& req, httplib::Response& res) {
  const char* endpoint = ep == Endpoint::Chat ? "/v1/chat/completions" : "/v1/completions";
  auto r = std::make_shared<ApiRequest>();
  std::shared_ptr<Stream> stream;
  try {
    ApiLimits lim;
    lim.max_tokens = opt.max_tokens;
    *r = parse_request(ep, req.body, model, lim);
    if (r->req.n > opt.max_batch)
      throw ApiError(400, "'n' may be at most " + std::to_string(opt.max_batch) + " on this server", "n");
    stream = engine.submit(r->req);
  } catch (const ApiError& e) {
    send_error(res, e.status, e.what(), e.param);
    metrics.count_request(endpoint, e.status);
    return;
  } catch (const QueueFull& e) {
    send_error(res, 429, e.what());
    metrics.count_request(endpoint, 429);
    return;
  } catch (const ValueError& e) {
    send_error(res, 400, e.what());
    metrics.count_request(endpoint, 400);
    return;
  } catch (const Error& e) {
    send_error(res, 503, e.what());
    metrics.count_request(endpoint, 503);
    return;
  }
  auto builder = std::make_shared<ResponseBuilder>(*r, model.tokenizer(), name());
  if (!r->stream) {
    std::vector<Event> ev;
    while (stream->wait(ev, std::chrono::milliseconds(200))) {
      builder->add(ev);
      ev.clear();
    }
    builder->add(ev);
    if (builder->failed()) {
      send_error(res, 500, "the model failed while generating (NaN logits or an internal error)");
      metrics.count_request(endpoint, 500);
      return;
    }
    res.set_content(builder->body(stream->prompt_tokens(), stream->completion_tokens()), "application/json");
    metrics.count_request(endpoint, 200);
    return;
  }
  metrics.count_request(endpoint, 200);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [r, stream, builder](size_t, httplib::DataSink& sink) {
        std::vector<Event> ev;
        const bool more = stream->wait(ev, std::chrono::milliseconds(100));
        const std::string out = builder->chunks(ev);
        if (!out.empty() && !sink.write(out.data(), out.size())) {
          stream->cancel();
          return false;
        }
        if (!more) {
          const std::string tail = builder->end(stream->prompt_tokens(), stream->completion_tokens());
          if (!sink.write(tail.data(), tail.size())) return false;
          sink.done();
          return true;
        }
        if (out.empty() && !sink.is_writable()) {  // nothing to send: is the client still there?
          stream->cancel();
          return false;
        }
        return true;
      },
      [stream](bool success) {
        if (!success) stream->cancel();
      });
}

Server::Server(llm::Model& model, ServeOptions options)
    : impl_(std::make_unique<Impl>(model, std::move(options))) {
  Impl& s = *impl_;
  KILN_CHECK(s.opt.max_body_bytes > 0 && s.opt.max_tokens >= 1 && s.opt.timeout_seconds >= 1, ValueError,
             "[serve] max_body_bytes, max_tokens and timeout_seconds must be positive");
  const int threads = s.opt.http_threads > 0 ? s.opt.http_threads : int(2 * s.opt.max_batch + 8);
  s.http.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  s.http.set_payload_max_length(size_t(s.opt.max_body_bytes));
  s.http.set_read_timeout(s.opt.timeout_seconds, 0);
  s.http.set_write_timeout(s.opt.timeout_seconds, 0);
  s.http.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    const bool open = req.path == "/" || req.path == "/health" || req.path == "/metrics";
    if (open || s.authorized(req)) return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, 401, "a valid API key is required (Authorization: Bearer KEY)");
    s.metrics.count_request(req.path, 401);
    return httplib::Server::HandlerResponse::Handled;
  });
  s.http.Post("/v1/chat/completions", [&s](const httplib::Request& req, httplib::Response& res) {
    s.completion(Endpoint::Chat, req, res);
  });
  s.http.Post("/v1/completions", [&s](const httplib::Request& req, httplib::Response& res) {
    s.completion(Endpoint::Completion, req, res);
  });
  s.http.Get("/v1/models", [&s](const httplib::Request&, httplib::Response& res) {
    const nlohmann::json j = {{"object", "list"},
                              {"data", nlohmann::json::array({{{"id", s.name()},
                                                               {"object", "model"},
                                                               {"created", 0},
                                                               {"owned_by", "kiln"},
                                                               {"context_length", s.model.max_context()}}})}};
    res.set_content(j.dump(), "application/json");
    s.metrics.count_request("/v1/models", 200);
  });
  s.http.Get("/health", [&s](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
    s.metrics.count_request("/health", 200);
  });
  s.http.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    res.set_content(s.metrics.render(), "text/plain; version=0.0.4");
  });
  s.http.Get("/", [&s](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(chat_page()), "text/html; charset=utf-8");
    s.metrics.count_request("/", 200);
  });
  // Anything else, and httplib's own refusals (413, 400), in OpenAI's error shape.
  s.http.set_error_handler([&s](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const int st = res.status;
    std::string msg =
        st == 404   ? "no route " + req.method + " " + req.path
        : st == 413 ? "the request body is larger than " + std::to_string(s.opt.max_body_bytes) + " bytes"
        : st == 400 ? "the request could not be read as HTTP"
                    : "HTTP status " + std::to_string(st);
    send_error(res, st, msg);
    s.metrics.count_request(st == 404 ? "other" : req.path, st);
  });
  s.http.set_exception_handler(
      [&s](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string msg = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          msg = e.what();
        } catch (...) {
        }
        send_error(res, 500, msg);
        s.metrics.count_request(req.path, 500);
      });
  if (s.opt.port == 0) {
    s.port = s.http.bind_to_any_port(s.opt.host);
    KILN_CHECK(s.port > 0, Error, "[serve] cannot bind " << s.opt.host << " to a free port");
  } else {
    KILN_CHECK(s.opt.port > 0 && s.opt.port < 65536, ValueError,
               "[serve] port must be in [0, 65535], got " << s.opt.port);
    KILN_CHECK(
        s.http.bind_to_port(s.opt.host, s.opt.port), Error,
        "[serve] cannot bind " << s.opt.host << ":" << s.opt.port << " (in use, or not an address here)");
    s.port = s.opt.port;
  }
}

Server::~Server() { stop(); }

int Server::port() const { return impl_->port; }

void Server::run() { impl_->http.listen_after_bind(); }

void Server::stop() {
  impl_->engine.shutdown();  // open streams end now, so their connections close
  impl_->http.stop();
}

}  // namespace kiln::serve
