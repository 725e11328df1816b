// The node at each leaf that requires grad: adds the incoming gradient into
// the leaf's .grad (after the leaf's hooks), as torch's AccumulateGrad.
#include <limits>

#include "core/autograd_record.h"
#include "kiln/binary.h"

namespace kiln::autograd {

void accumulate_into(Tensor& slot, const Tensor& g) {
  if (!g.defined()) return;
  if (is_grad_enabled()) {  // create_graph: the sum stays differentiable
    slot = slot.defined() ? add(slot, g) : g;
    return;
  }
  if (!slot.defined()) {
    // The graph's buffers may hold g (one gradient sent to two inputs);
    // .grad gets memory of its own unless nothing else refers to g's.
    slot = g.storage().use_count() == 1 && g.is_contiguous() ? g.detach() : g.detach().clone();
  } else {
    slot = add(slot, g.detach());
  }
}

namespace {

class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(const Tensor& leaf) : leaf_(leaf) {
    next_edges.clear();
    output_meta.push_back(detail::tensor_meta(leaf));
    output_hooks.resize(1);
    sequence_nr = std::numeric_limits<uint64_t>::max();  // runs as soon as it is ready
  }
  std::string name() const override { return "AccumulateGrad"; }
  Grads apply(Grads&& grads) override {
    Tensor g = std::move(grads[0]);
    const auto& m = leaf_.autograd_meta();
    if (!m || !m->requires_grad || !g.defined()) return {};
    for (const auto& [id, hook] : std::vector(m->leaf_hooks)) {
      Tensor r = hook(g);
      if (r.defined()) g = r;
    }
    accumulate_into(m->grad, g);
    return {};
  }

 private:
  Tensor leaf_;
};

}  // namespace

std::shared_ptr<Node> make_grad_accumulator(const Tensor& leaf) { return std::make_shared<AccumulateGrad>(leaf); }

}  // namespace kiln::autograd
