// How a front-end records itself for autograd (the engine is src/autograd).
//
// A differentiable front-end opens a Record over its tensor inputs. When grad
// mode is on and one of them requires grad, the Record is active: grad mode is
// off for the body (its internal views, casts and kernels record nothing), and
// finish() puts one node on the outputs whose formula, written with kiln's
// public ops, maps output gradients to input gradients:
//
//   Tensor mul(const Tensor& a, const Tensor& b) {
//     autograd::Record rec("mul", {&a, &b});
//     Tensor out = ...;                                   // the forward, unchanged
//     if (rec) rec.finish("MulBackward0", {&out}, {a, b}, [](autograd::FnNode& n, autograd::Grads& g) {
//       return autograd::Grads{mul(g[0], n.saved(1)), mul(g[0], n.saved(0))};
//     });
//     return out;
//   }
//
// A formula may return a gradient in the output's broadcast shape or dtype: the
// engine sums it to the input's shape and casts it to the input's dtype.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/tensor.h"

namespace kiln::autograd {

using Grads = std::vector<Tensor>;

// The autograd state a tensor carries (shared by its copies).
struct Meta {
  bool requires_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;  // null for leaves
  uint32_t output_nr = 0;
  std::weak_ptr<Node> grad_accumulator;  // leaves: the node .grad accumulates through
  bool retains_grad = false;
  int retain_hook = -1;
  bool is_view = false;  // made by a view op from a tensor that required grad
  std::vector<std::pair<int, Hook>> leaf_hooks;
};

namespace detail {

// Grad mode, per thread (torch's is thread-local too); read inline by
// Op::operator() through grad_recording().
extern constinit thread_local bool t_grad_enabled;
extern constinit thread_local bool t_inference_mode;

uint64_t next_sequence_nr();
// The slot a gradient for t flows into: its grad_fn's output, or the
// accumulator of a leaf that requires grad; invalid otherwise.
Edge gradient_edge(const Tensor& t);
TensorMeta tensor_meta(const Tensor& t);
int next_hook_id();
// True for dtypes that carry gradients (floating and complex, not FP8).
bool differentiable_dtype(DType d);
// The error for an op that has no derivative yet (Op::operator()'s guard).
[[noreturn]] void throw_no_derivative(const char* op);

}  // namespace detail

inline bool grad_recording() { return detail::t_grad_enabled; }

// A tensor kept for backward, with its storage's version at save time. An
// output of the node that saves it is kept without its autograd state (no
// reference cycle) and given back with the node as its grad_fn.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t, bool is_output);
  Tensor unpack(const std::shared_ptr<Node>& owner, const std::string& node_name) const;
  void release() { data_ = Tensor(); released_ = true; }

 private:
  Tensor data_;
  uint64_t version_ = 0;
  bool defined_ = false, is_output_ = false, released_ = false;
  uint32_t output_nr_ = 0;
};

// A node whose backward is a formula (a closure over the op's plain
// parameters) reading the tensors it saved.
class FnNode final : public Node {
 public:
  using Formula = std::function<Grads(FnNode& node, Grads& grads)>;

  FnNode(std::string name, Formula formula) : name_(std::move(name)), formula_(std::move(formula)) {}
  std::string name() const override { return name_; }
  Grads apply(Grads&& grads) override;
  void release_saved() override;

  // Saved tensor i, checked against in-place modification since it was saved.
  Tensor saved(size_t i) const;
  // Whether input i needs a gradient (formulas skip the others).
  bool needs(size_t i) const { return i < next_edges.size() && next_edges[i].valid(); }

  std::vector<SavedTensor> saved_;

 private:
  std::string name_;
  Formula formula_;
  bool released_ = false;
};

class Record {
 public:
  Record(const char* op, std::initializer_list<const Tensor*> inputs);
  Record(const char* op, std::span<const Tensor> inputs);
  ~Record();
  Record(const Record&) = delete;
  Record& operator=(const Record&) = delete;

  explicit operator bool() const { return active_; }

  // torch's error for out= while recording (call before writing `out`).
  void no_out(const Tensor& out) const;
  // Puts one node on `outputs` (outputs that cannot carry gradients, such as
  // integer indices, get none). `saved` may name inputs and outputs.
  void finish(std::string name, std::initializer_list<Tensor*> outputs, std::vector<Tensor> saved,
              FnNode::Formula formula);

 private:
  void open(const char* op);
  const char* op_;
  bool active_ = false;
  bool prev_mode_ = true;
  std::vector<Edge> edges_;
  std::vector<TensorMeta> metas_;
};

// ---- in-place ops ------------------------------------------------------------

// The check an in-place front-end makes before writing `self`: bumps self's
// version; raises torch's error for a leaf that requires grad; returns true
// when the op must be recorded (grad mode on and self or an input requires
// grad), in which case the front-end computes out of place from
// inplace_source(self) and calls rebase_inplace. An in-place write into a view of a tensor that requires grad
// raises NotImplementedError (kiln does not rewrite the base's history).
bool inplace_needs_grad(const char* op, const Tensor& self, std::initializer_list<const Tensor*> others);
// The operand an in-place op computes from when it is recorded out of place:
// a copy of self (recorded, so the history flows through it), because the
// node may save its input and self is about to be overwritten.
inline Tensor inplace_source(const Tensor& self) { return self.clone(); }
// Writes `result` (recorded out of place from inplace_source(self)) into self
// and gives self its history.
const Tensor& rebase_inplace(const Tensor& self, const Tensor& result);
// Gives self the history of `result` (a handle on self's own data that a
// Record finished on), in the autograd state self's copies share.
void adopt_history(const Tensor& self, const Tensor& result);
// Bumps the version of a tensor written through out=.
inline void wrote(const Tensor& t) {
  if (t.defined()) t.storage()->bump_version();
}

}  // namespace kiln::autograd
