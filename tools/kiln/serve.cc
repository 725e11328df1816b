// `kiln serve [MODEL]`: an OpenAI-compatible HTTP server on one model, with
// continuous batching and a chat page at /. Ctrl-C or SIGTERM stops it.
#include "kiln/serve.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "commands.h"
#include "llm_common.h"

namespace kiln::cli {
namespace {

struct ServeFlags {
  ModelFlags model;
  serve::ServeOptions opt;
};

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_stop_signal(int) { g_stop = 1; }

// The id /v1/models lists: the file or directory name, without ".gguf".
std::string model_id(const std::string& path) {
  std::string s = path;
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  const auto slash = s.find_last_of('/');
  if (slash != std::string::npos) s = s.substr(slash + 1);
  if (s.size() > 5 && s.compare(s.size() - 5, 5, ".gguf") == 0) s.resize(s.size() - 5);
  return s.empty() ? "kiln" : s;
}

int run_serve(ServeFlags& f) {
  if (f.opt.api_key.empty())
    if (const char* k = std::getenv("KILN_API_KEY")) f.opt.api_key = k;
  auto model = load_model(f.model);
  if (f.opt.model_name.empty())
    f.opt.model_name =
        model_id(f.model.model.empty() || f.model.model == "default" ? resolve_model_path(f.model.model, true)
                                                                     : f.model.model);
  serve::Server server(*model, f.opt);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  std::thread watcher([&server] {
    while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    server.stop();
  });
  std::fprintf(stderr, "serving %s on http://%s:%d (OpenAI API under /v1, chat page at /)%s; Ctrl-C stops\n",
               f.opt.model_name.c_str(), f.opt.host.c_str(), server.port(),
               f.opt.api_key.empty() ? "" : ", API key required");
  server.run();
  g_stop = 1;
  watcher.join();
  std::fprintf(stderr, "kiln serve: stopped\n");
  return 0;
}

}  // namespace

Command add_serve(CLI::App& parent) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* app =
      parent.add_subcommand("serve", "Serve a model over HTTP with OpenAI's API and a chat page.");
  app->footer(
      "Endpoints: POST /v1/chat/completions and /v1/completions (\"stream\": true for server-sent "
      "events), GET /v1/models, /health, /metrics (Prometheus) and / (a chat page). Requests run in one "
      "continuously batched loop: up to --max-batch choices decode together, each step runs every linear "
      "layer once for all of them, and prompts are prefilled in chunks between decode steps. Finished "
      "conversations keep their KV cache (up to --idle-sequences) so a follow-up turn or a shared system "
      "prompt is not computed again. The API key may also come from KILN_API_KEY. " +
      std::string(kModelConvention));
  app->add_option("model", f->model.model, "A .gguf file, a model directory, or \"default\"");
  app->add_option("--host", f->opt.host, "Address to listen on")->capture_default_str();
  app->add_option("--port", f->opt.port, "Port to listen on (0: any free one)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app->add_option("--api-key", f->opt.api_key, "Require \"Authorization: Bearer KEY\" on /v1 requests");
  app->add_option("--name", f->opt.model_name, "The model id /v1/models lists (default: the file's name)");
  app->add_option("--max-batch", f->opt.max_batch, "Choices that decode at once; more requests wait")
      ->check(CLI::Range(int64_t(1), int64_t(512)))
      ->capture_default_str();
  app->add_option("--step-tokens", f->opt.step_tokens,
                  "Rows of one step (decode tokens plus prompt chunks); bounds a step's time")
      ->check(CLI::Range(int64_t(1), int64_t(512)))
      ->capture_default_str();
  app->add_option("--max-queue", f->opt.max_queue, "Requests that may wait; past it they get 429")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 20))
      ->capture_default_str();
  app->add_option("--idle-sequences", f->opt.idle_sequences,
                  "Finished KV caches kept so shared prefixes are reused")
      ->check(CLI::Range(int64_t(0), int64_t(4096)))
      ->capture_default_str();
  app->add_option("--max-tokens", f->opt.max_tokens, "The most tokens one request may generate")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 30))
      ->capture_default_str();
  app->add_option("--max-body", f->opt.max_body_bytes, "The largest request body in bytes (413 past it)")
      ->check(CLI::Range(int64_t(1024), int64_t(1) << 30))
      ->capture_default_str();
  app->add_option("--timeout", f->opt.timeout_seconds, "Seconds to wait on a slow client's read or write")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  add_model_flags(*app, f->model);
  return {app, [f] { return run_serve(*f); }};
}

}  // namespace kiln::cli
