// kiln::autograd: reverse-mode differentiation with PyTorch's semantics.
//
// A differentiable op called while grad mode is on, with an input that requires
// grad, records a Node on its outputs (Tensor::grad_fn). backward() walks the
// graph from the outputs in reverse creation order, runs each node's formula
// (written with kiln's public ops, so create_graph=true differentiates it
// again) and accumulates into the leaves' .grad. Tensors saved for backward
// keep their storage's version; modifying one in place before backward raises.
// Ops with no derivative yet raise when an input requires grad rather than
// silently dropping the gradient. See docs/autograd.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::autograd {

class Node;

// An input slot of a node: gradient for `node`'s output `input_nr`. A null
// node: that input needs no gradient.
struct Edge {
  std::shared_ptr<Node> node;
  uint32_t input_nr = 0;
  bool valid() const { return node != nullptr; }
};

// The shape, dtype and device a gradient must have to flow into a slot; the
// engine sums a broadcast gradient down to `shape` and casts it to `dtype`.
struct TensorMeta {
  Shape shape;
  DType dtype = DType::Float32;
  Device device;
};

using Hook = std::function<Tensor(const Tensor&)>;  // returns a replacement or an undefined tensor

// One recorded op call (torch's grad_fn): apply maps the gradients of its
// outputs to the gradients of its inputs.
class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  virtual std::string name() const = 0;
  // grads: one per output (undefined where none flowed); returns one per
  // input (undefined where the input needs none).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  // Drops saved tensors (after a backward without retain_graph).
  virtual void release_saved() {}

  std::vector<Edge> next_edges;        // one per input
  std::vector<TensorMeta> input_meta;  // one per input
  std::vector<TensorMeta> output_meta;  // one per output (zero-filled when absent)
  uint64_t sequence_nr = 0;            // creation order; later nodes run first
  // Hooks on output i's gradient (Tensor::register_hook / retain_grad on a
  // non-leaf), run before apply, in registration order.
  std::vector<std::vector<std::pair<int, Hook>>> output_hooks;
};

// Nodes alive in this process (all threads): a graph that backward() or the
// last reference to its outputs released must bring this back down; tests use
// it to catch graphs kept alive by reference cycles.
int64_t live_node_count();

// ---- grad mode -------------------------------------------------------------

bool is_grad_enabled();
void set_grad_enabled(bool enabled);
bool is_inference_mode_enabled();
// Sets the inference-mode flag; setting it also turns grad mode off.
void set_inference_mode(bool enabled);

// Scoped grad mode (torch.no_grad / enable_grad / set_grad_enabled).
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled);
  ~GradModeGuard();
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool prev_;
};
struct NoGradGuard : GradModeGuard {
  NoGradGuard() : GradModeGuard(false) {}
};
struct EnableGradGuard : GradModeGuard {
  EnableGradGuard() : GradModeGuard(true) {}
};
// torch.inference_mode: grad mode off (kiln keeps version counters as usual).
class InferenceModeGuard {
 public:
  explicit InferenceModeGuard(bool enabled = true);
  ~InferenceModeGuard();
  InferenceModeGuard(const InferenceModeGuard&) = delete;
  InferenceModeGuard& operator=(const InferenceModeGuard&) = delete;

 private:
  bool prev_grad_, prev_inference_;
};

// ---- the engine --------------------------------------------------------------

// torch.autograd.backward: accumulates d(sum_i <tensors[i], grad_tensors[i]>)
// into the .grad of the leaves (or only of `inputs` when given). A missing
// grad_tensor is ones for a one-element output, else an error.
void backward(std::span<const Tensor> tensors, std::span<const Tensor> grad_tensors = {},
              bool retain_graph = false, bool create_graph = false, std::span<const Tensor> inputs = {});

// torch.autograd.grad: the gradients of `outputs` with respect to `inputs`,
// without touching .grad. An input the outputs do not depend on raises unless
// allow_unused (then its gradient is undefined). retain_graph defaults to
// create_graph, as torch.
std::vector<Tensor> grad(std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                         std::span<const Tensor> grad_outputs = {}, std::optional<bool> retain_graph = {},
                         bool create_graph = false, bool allow_unused = false);

}  // namespace kiln::autograd
