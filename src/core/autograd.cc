// Autograd state on tensors, grad mode, the Record a front-end opens, saved
// tensors and in-place rebasing. The engine that walks the graph is
// src/autograd/engine.cc; the leaf accumulator is src/autograd/accumulate_grad.cc.
#include <algorithm>
#include <atomic>

#include "core/autograd_record.h"
#include "kiln/error.h"

namespace kiln {
namespace autograd {

// Defined with the engine (it accumulates with kiln's add).
std::shared_ptr<Node> make_grad_accumulator(const Tensor& leaf);
// slot += g (a fresh tensor, never aliasing g's buffer when slot was empty).
void accumulate_into(Tensor& slot, const Tensor& g);

namespace {
std::atomic<int64_t> g_live_nodes{0};
}  // namespace

// Only nodes pay for the count: nothing is recorded when no input requires grad.
Node::Node() { g_live_nodes.fetch_add(1, std::memory_order_relaxed); }
Node::~Node() { g_live_nodes.fetch_sub(1, std::memory_order_relaxed); }
int64_t live_node_count() { return g_live_nodes.load(std::memory_order_relaxed); }

namespace detail {

constinit thread_local bool t_grad_enabled = true;
constinit thread_local bool t_inference_mode = false;

uint64_t next_sequence_nr() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

int next_hook_id() {
  static std::atomic<int> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

bool differentiable_dtype(DType d) { return (is_floating(d) && !is_fp8(d)) || is_complex(d); }

TensorMeta tensor_meta(const Tensor& t) {
  if (!t.defined()) return {};
  return TensorMeta{t.sizes(), t.dtype(), t.device()};
}

Edge gradient_edge(const Tensor& t) {
  const auto& m = t.autograd_meta();
  if (!t.defined() || !m || !m->requires_grad) return {};
  if (m->grad_fn) return Edge{m->grad_fn, m->output_nr};
  std::shared_ptr<Node> acc = m->grad_accumulator.lock();
  if (!acc) {
    acc = make_grad_accumulator(t);
    m->grad_accumulator = acc;
  }
  return Edge{acc, 0};
}

void throw_no_derivative(const char* op) {
  throw NotImplementedError(std::string("[") + op +
                            "] has no derivative in kiln yet, and an input requires grad; run it under "
                            "kiln.no_grad() or on detached inputs");
}

}  // namespace detail

bool is_grad_enabled() { return detail::t_grad_enabled; }
void set_grad_enabled(bool enabled) { detail::t_grad_enabled = enabled; }
bool is_inference_mode_enabled() { return detail::t_inference_mode; }
void set_inference_mode(bool enabled) {
  detail::t_inference_mode = enabled;
  if (enabled) detail::t_grad_enabled = false;
}

GradModeGuard::GradModeGuard(bool enabled) : prev_(detail::t_grad_enabled) { detail::t_grad_enabled = enabled; }
GradModeGuard::~GradModeGuard() { detail::t_grad_enabled = prev_; }

InferenceModeGuard::InferenceModeGuard(bool enabled)
    : prev_grad_(detail::t_grad_enabled), prev_inference_(detail::t_inference_mode) {
  detail::t_inference_mode = enabled;
  if (enabled) detail::t_grad_enabled = false;
}
InferenceModeGuard::~InferenceModeGuard() {
  detail::t_grad_enabled = prev_grad_;
  detail::t_inference_mode = prev_inference_;
}

// ---- saved tensors -------------------------------------------------------------

SavedTensor::SavedTensor(const Tensor& t, bool is_output) : defined_(t.defined()), is_output_(is_output) {
  if (!defined_) return;
  version_ = t.version();
  if (is_output) {
    data_ = t.detach();
    output_nr_ = t.output_nr();
  } else {
    data_ = t;
  }
}

Tensor SavedTensor::unpack(const std::shared_ptr<Node>& owner, const std::string& node_name) const {
  if (released_)
    throw Error("[backward] trying to backward through the graph a second time (or directly access "
                       "saved tensors after they have already been freed); saved intermediate values of the "
                       "graph are freed when you call backward() or autograd.grad(). Specify "
                       "retain_graph=True if you need to backward through the graph a second time");
  if (!defined_) return Tensor();
  if (data_.version() != version_)
    throw Error("[backward] one of the variables needed for gradient computation has been modified by "
                       "an inplace operation: [" + std::string(name(data_.dtype())) + " " +
                       data_.shape_str() + "], which is " + (is_output_ ? "output " : "input ") +
                       (is_output_ ? std::to_string(output_nr_) + " of " : "to ") + node_name +
                       ", is at version " + std::to_string(data_.version()) + "; expected version " +
                       std::to_string(version_) + " instead");
  if (!is_output_) return data_;
  Tensor t = data_;
  auto m = std::make_shared<Meta>();
  m->requires_grad = true;
  m->grad_fn = owner;
  m->output_nr = output_nr_;
  t.set_autograd_meta(std::move(m));
  return t;
}

// ---- function nodes -----------------------------------------------------------

Grads FnNode::apply(Grads&& grads) { return formula_(*this, grads); }

Tensor FnNode::saved(size_t i) const {
  if (released_) {
    SavedTensor gone;
    gone.release();
    return gone.unpack(nullptr, name_);  // raises the "second time" error
  }
  if (i >= saved_.size()) throw Error("[" + name_ + "] saved tensor " + std::to_string(i) + " missing");
  return saved_[i].unpack(std::const_pointer_cast<Node>(shared_from_this()), name_);
}

void FnNode::release_saved() {
  for (auto& s : saved_) s.release();
  released_ = true;
}

// ---- recording --------------------------------------------------------------------

Record::Record(const char* op, std::initializer_list<const Tensor*> inputs) : op_(op) {
  if (!detail::t_grad_enabled) return;
  bool any = false;
  for (const Tensor* t : inputs) any = any || t->requires_grad();
  if (!any) return;
  edges_.reserve(inputs.size());
  metas_.reserve(inputs.size());
  for (const Tensor* t : inputs) {
    edges_.push_back(detail::gradient_edge(*t));
    metas_.push_back(detail::tensor_meta(*t));
  }
  open(op);
}

Record::Record(const char* op, std::span<const Tensor> inputs) : op_(op) {
  if (!detail::t_grad_enabled) return;
  bool any = false;
  for (const Tensor& t : inputs) any = any || t.requires_grad();
  if (!any) return;
  for (const Tensor& t : inputs) {
    edges_.push_back(detail::gradient_edge(t));
    metas_.push_back(detail::tensor_meta(t));
  }
  open(op);
}

void Record::open(const char*) {
  active_ = true;
  prev_mode_ = detail::t_grad_enabled;
  detail::t_grad_enabled = false;
}

Record::~Record() {
  if (active_) detail::t_grad_enabled = prev_mode_;
}

void Record::no_out(const Tensor& out) const {
  if (active_ && out.defined())
    throw Error(std::string("[") + op_ +
                       "] functions with out=... arguments don't support automatic differentiation, but one "
                       "of the arguments requires grad");
}

void Record::finish(std::string name, std::initializer_list<Tensor*> outputs, std::vector<Tensor> saved,
                    FnNode::Formula formula) {
  if (!active_) return;
  // Which output each saved tensor is: a handle on it (same data, view and,
  // before the outputs get their node, autograd state) saved before finish.
  std::vector<Tensor*> saved_out(saved.size(), nullptr);
  for (size_t i = 0; i < saved.size(); ++i)
    for (Tensor* out : outputs)
      if (saved[i].defined() && out->defined() && saved[i].storage() == out->storage() &&
          saved[i].offset() == out->offset() && saved[i].dtype() == out->dtype() &&
          std::ranges::equal(saved[i].sizes(), out->sizes()) &&
          std::ranges::equal(saved[i].strides(), out->strides()) &&
          saved[i].autograd_meta() == out->autograd_meta())
        saved_out[i] = out;
  auto node = std::make_shared<FnNode>(std::move(name), std::move(formula));
  node->next_edges = std::move(edges_);
  node->input_meta = std::move(metas_);
  node->sequence_nr = detail::next_sequence_nr();
  node->output_hooks.resize(outputs.size());
  uint32_t nr = 0;
  for (Tensor* out : outputs) {
    node->output_meta.push_back(detail::tensor_meta(*out));
    if (out->defined() && detail::differentiable_dtype(out->dtype())) {
      auto m = std::make_shared<Meta>();
      m->requires_grad = true;
      m->grad_fn = node;
      m->output_nr = nr;
      out->set_autograd_meta(std::move(m));
    } else if (out->defined()) {
      out->set_autograd_meta(nullptr);
    }
    ++nr;
  }
  node->saved_.reserve(saved.size());
  for (size_t i = 0; i < saved.size(); ++i) {
    // An output without a gradient (integer) is kept as a plain tensor.
    const bool is_output = saved_out[i] && saved_out[i]->autograd_meta();
    node->saved_.emplace_back(is_output ? *saved_out[i] : saved[i], is_output);
  }
}

// ---- in-place --------------------------------------------------------------------

bool inplace_needs_grad(const char* op, const Tensor& self, std::initializer_list<const Tensor*> others) {
  if (self.defined()) self.storage()->bump_version();
  if (!detail::t_grad_enabled) return false;
  bool any = self.requires_grad();
  for (const Tensor* t : others) any = any || (t->defined() && t->requires_grad());
  if (!any) return false;
  if (self.requires_grad() && self.is_leaf())
    throw Error(std::string("[") + op +
                       "] a leaf Variable that requires grad is being used in an in-place operation");
  const auto& m = self.autograd_meta();
  if (m && m->is_view)
    throw NotImplementedError(std::string("[") + op +
                              "] in-place modification of a view of a tensor that requires grad is not "
                              "supported by kiln's autograd; use the out-of-place op or clone() first");
  // An integer or bool result carries no gradient (as torch's copy_ into one).
  return detail::differentiable_dtype(self.dtype());
}

void adopt_history(const Tensor& self, const Tensor& result) {
  const auto& rm = result.autograd_meta();
  if (!rm) return;
  if (const auto& sm = self.autograd_meta()) {
    // Mutate the shared state: every copy of self sees the new history.
    sm->requires_grad = true;
    sm->grad_fn = rm->grad_fn;
    sm->output_nr = rm->output_nr;
  } else {
    auto m = std::make_shared<Meta>();
    m->requires_grad = true;
    m->grad_fn = rm->grad_fn;
    m->output_nr = rm->output_nr;
    self.set_autograd_meta(std::move(m));
  }
}

const Tensor& rebase_inplace(const Tensor& self, const Tensor& result) {
  {
    NoGradGuard no_grad;
    Tensor(self).copy_(result);
  }
  adopt_history(self, result);
  return self;
}

}  // namespace autograd

// ---- Tensor's autograd methods ------------------------------------------------------

using autograd::Meta;

bool Tensor::meta_requires_grad() const { return autograd_->requires_grad; }

Tensor& Tensor::requires_grad_(bool requires_grad) {
  if (!defined()) throw ValueError("[requires_grad_] undefined tensor");
  if (autograd_ && autograd_->grad_fn) {
    if (!requires_grad)
      throw Error("[requires_grad_] you can only change requires_grad flags of leaf variables. If you "
                         "want to use a computed variable in a subgraph that doesn't require differentiation "
                         "use var_no_grad = var.detach()");
    return *this;
  }
  if (requires_grad && !autograd::detail::differentiable_dtype(dtype_))
    throw Error(std::string("[requires_grad_] only Tensors of floating point and complex dtype can "
                                   "require gradients, got ") + name(dtype_));
  if (!autograd_) {
    if (!requires_grad) return *this;
    autograd_ = std::make_shared<Meta>();
  }
  autograd_->requires_grad = requires_grad;
  return *this;
}

Tensor Tensor::grad() const { return autograd_ ? autograd_->grad : Tensor(); }

void Tensor::set_grad(const Tensor& grad) {
  if (grad.defined()) {
    if (grad.sizes() != sizes())
      throw ValueError("[grad] assigned grad has data of a different size (" + grad.shape_str() +
                       ") than the tensor (" + shape_str() + ")");
    if (grad.dtype() != dtype_)
      throw TypeError(std::string("[grad] assigned grad has data of a different type (") + name(grad.dtype()) +
                      ") than the tensor (" + name(dtype_) + ")");
  }
  if (!autograd_) {
    if (!grad.defined()) return;
    autograd_ = std::make_shared<Meta>();
  }
  autograd_->grad = grad;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const { return autograd_ ? autograd_->grad_fn : nullptr; }
uint32_t Tensor::output_nr() const { return autograd_ ? autograd_->output_nr : 0; }
bool Tensor::is_leaf() const { return !autograd_ || !autograd_->grad_fn; }

Tensor Tensor::detach() const {
  Tensor t = *this;
  t.autograd_.reset();
  return t;
}

Tensor& Tensor::detach_() {
  if (autograd_ && autograd_->is_view)
    throw Error("[detach_] can't detach views in-place; use detach() instead");
  if (autograd_) {
    autograd_->grad_fn.reset();
    autograd_->requires_grad = false;
  }
  return *this;
}

void Tensor::retain_grad() {
  if (!requires_grad())
    throw Error("[retain_grad] can't retain_grad on Tensor that has requires_grad=False");
  if (is_leaf() || autograd_->retains_grad) return;
  std::weak_ptr<Meta> weak = autograd_;
  auto& hooks = autograd_->grad_fn->output_hooks;
  hooks.resize(std::max<size_t>(hooks.size(), autograd_->output_nr + 1));
  const int id = autograd::detail::next_hook_id();
  hooks[autograd_->output_nr].emplace_back(id, [weak](const Tensor& g) {
    if (auto m = weak.lock()) autograd::accumulate_into(m->grad, g);
    return Tensor();
  });
  autograd_->retains_grad = true;
  autograd_->retain_hook = id;
}

bool Tensor::retains_grad() const { return autograd_ && autograd_->retains_grad; }

void Tensor::backward() const { backward(Tensor()); }

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  const Tensor ts[1] = {*this};
  if (gradient.defined()) {
    const Tensor gs[1] = {gradient};
    autograd::backward(ts, gs, retain_graph, create_graph);
  } else {
    autograd::backward(ts, {}, retain_graph, create_graph);
  }
}

int Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) {
  if (!requires_grad())
    throw Error("[register_hook] cannot register a hook on a tensor that doesn't require gradient");
  const int id = autograd::detail::next_hook_id();
  if (is_leaf()) {
    autograd_->leaf_hooks.emplace_back(id, std::move(hook));
  } else {
    auto& hooks = autograd_->grad_fn->output_hooks;
    hooks.resize(std::max<size_t>(hooks.size(), autograd_->output_nr + 1));
    hooks[autograd_->output_nr].emplace_back(id, std::move(hook));
  }
  return id;
}

void Tensor::remove_hook(int handle) {
  if (!autograd_) return;
  std::erase_if(autograd_->leaf_hooks, [&](const auto& h) { return h.first == handle; });
  if (autograd_->grad_fn)
    for (auto& hs : autograd_->grad_fn->output_hooks)
      std::erase_if(hs, [&](const auto& h) { return h.first == handle; });
}

}  // namespace kiln
