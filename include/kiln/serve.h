// An OpenAI-compatible HTTP server on a loaded model (`kiln serve`,
// kiln.serve in Python): POST /v1/chat/completions and /v1/completions
// (streamed as server-sent events or not), GET /v1/models, /health and
// /metrics (Prometheus text). Requests run in one continuously batched step
// loop: they join and leave the batch between steps, every linear layer runs
// once for all of them, and prompts are prefilled in chunks between decode
// steps so running streams keep flowing.
//
//   auto m = kiln::llm::Model::load("model.gguf");
//   kiln::serve::Server s(*m, {.port = 8080});
//   s.run();  // until stop() (from another thread or a signal handler's flag)
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kiln/llm/model.h"

namespace kiln::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                   // 0: any free port (port() says which)
  std::string api_key;               // non-empty: requests need "Authorization: Bearer KEY"
  std::string model_name;            // the id /v1/models lists; empty: "kiln"
  int64_t max_batch = 16;            // choices decoding at once (more wait in the queue)
  int64_t step_tokens = 256;         // rows of one step: decode tokens plus prompt chunks
  int64_t max_queue = 256;           // waiting requests; past it, 429
  int64_t idle_sequences = 8;        // finished caches kept so shared prefixes are reused
  int64_t max_tokens = 4096;         // the most tokens one request may ask for
  int64_t max_body_bytes = 4 << 20;  // larger bodies are refused (413)
  int http_threads = 0;              // 0: 2 * max_batch + 8 (a stream holds one)
  int timeout_seconds = 30;          // reading a request / writing to a slow client
};

class Server {
 public:
  // Binds host:port (Error when it cannot) and starts the engine thread.
  Server(llm::Model& model, ServeOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  int port() const;
  // Serves until stop(); returns then.
  void run();
  void stop();  // safe from any thread

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::serve
