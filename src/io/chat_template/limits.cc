// The per-render budget: one per Template::render, found through a
// thread-local pointer so that value copies and filters can charge it.
#include "io/chat_template/limits.h"

namespace kiln::jinja {
namespace {
thread_local Budget* g_active = nullptr;
}  // namespace

Budget::Budget() : prev_(g_active) { g_active = this; }
Budget::~Budget() { g_active = prev_; }
Budget* Budget::active() { return g_active; }

void limit_error(const std::string& msg) {
  if (const Budget* b = g_active)
    throw TemplateError("[chat_template] line " + std::to_string(b->line()) + ": " + msg);
  throw TemplateError("[chat_template] " + msg);
}

void Budget::over_steps() const {
  limit_error("the template ran past " + std::to_string(kMaxSteps) +
              " evaluation steps (the step limit for untrusted templates)");
}

void Budget::over_bytes() const {
  limit_error("the template built more than " + std::to_string(kMaxBytes >> 20) +
              " MiB of strings and lists (the memory limit for untrusted templates)");
}

}  // namespace kiln::jinja
