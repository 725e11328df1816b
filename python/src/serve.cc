// kiln.llm.Server / kiln.serve: the OpenAI-compatible server (kiln/serve.h)
// on a LanguageModel, from Python.
//
//   m = kiln.llm.load()
//   with kiln.serve(m, port=0, block=False) as s:   # serves in a background thread
//       print(s.url)                                # http://127.0.0.1:PORT
//
// The server's threads run without the GIL; the model is kept alive by the
// server object, and its own calls from Python wait while a step holds it.
#include "kiln/serve.h"

#include <nanobind/stl/string.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "bind_util.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

class PyServer {
 public:
  PyServer(kiln::llm::Model& model, kiln::serve::ServeOptions o) : host_(o.host) {
    nb::gil_scoped_release release;
    server_ = std::make_unique<kiln::serve::Server>(model, std::move(o));
  }
  ~PyServer() { stop(); }
  int port() const { return server_->port(); }
  std::string url() const { return "http://" + host_ + ":" + std::to_string(port()); }
  void start() {
    KILN_CHECK(!thread_.joinable(), kiln::ValueError, "[serve] the server is already running");
    thread_ = std::thread([this] { server_->run(); });
  }
  // Serves in the calling thread until stop() (from another thread) or Ctrl-C.
  void run() {
    start();
    for (;;) {
      {
        nb::gil_scoped_release release;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (stopped_) return;
      if (PyErr_CheckSignals() != 0) {  // Ctrl-C: stop, then raise KeyboardInterrupt
        stop();
        throw nb::python_error();
      }
    }
  }
  void stop() {
    if (!server_) return;
    stopped_ = true;
    nb::gil_scoped_release release;
    server_->stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::string host_;
  std::unique_ptr<kiln::serve::Server> server_;
  std::thread thread_;
  std::atomic<bool> stopped_{false};
};

}  // namespace

void init_serve(nb::module_& m) {
  nb::class_<PyServer>(m, "llm_Server",
                       "An OpenAI-compatible HTTP server on a LanguageModel (kiln serve's): POST "
                       "/v1/chat/completions and /v1/completions, GET /v1/models, /health, /metrics and a "
                       "chat page at /. Requests are continuously batched. Made by kiln.serve().")
      .def(
          "__init__",
          [](PyServer* self, kiln::llm::Model& model, const std::string& host, int port, nb::handle api_key,
             nb::handle name, int64_t max_batch, int64_t step_tokens, int64_t max_queue,
             int64_t idle_sequences, int64_t max_tokens, int64_t max_body_bytes, int timeout_seconds) {
            kiln::serve::ServeOptions o;
            o.host = host;
            o.port = port;
            if (!api_key.is_none()) o.api_key = nb::cast<std::string>(api_key);
            if (!name.is_none()) o.model_name = nb::cast<std::string>(name);
            o.max_batch = max_batch;
            o.step_tokens = step_tokens;
            o.max_queue = max_queue;
            o.idle_sequences = idle_sequences;
            o.max_tokens = max_tokens;
            o.max_body_bytes = max_body_bytes;
            o.timeout_seconds = timeout_seconds;
            new (self) PyServer(model, std::move(o));
          },
          "model"_a, "host"_a = "127.0.0.1", "port"_a = 8080, "api_key"_a = nb::none(), "name"_a = nb::none(),
          "max_batch"_a = 16, "step_tokens"_a = 256, "max_queue"_a = 256, "idle_sequences"_a = 8,
          "max_tokens"_a = 4096, "max_body_bytes"_a = 4 << 20, "timeout_seconds"_a = 30,
          nb::keep_alive<1, 2>(),
          "Binds host:port (0: a free port) and starts the batching engine; start() or run() serves.")
      .def_prop_ro("port", &PyServer::port, "The port it listens on.")
      .def_prop_ro("url", &PyServer::url, "http://HOST:PORT")
      .def("start", &PyServer::start, "Serves in a background thread (stop() ends it).")
      .def("run", &PyServer::run, "Serves in this thread until stop() from another thread or Ctrl-C.")
      .def("stop", &PyServer::stop, "Stops serving: open streams end, the port is released.")
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](PyServer& s, nb::args) { s.stop(); });
}
