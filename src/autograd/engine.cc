// The backward walk: from the outputs' nodes, in decreasing creation order
// (every consumer of a tensor runs before the node that made it), summing the
// gradients that reach each node's outputs in a fixed order, so the result has
// the same bits whatever kiln's thread count. Each node's formula runs kiln's
// ops, which use the thread pool themselves.
#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/error.h"
#include "kiln/reduce.h"

namespace kiln::autograd {
namespace {

// g summed down to `want` (the input's shape before broadcasting), cast to the
// input's dtype and moved to its device; the engine applies it to every
// gradient a formula returns.
Tensor conform(Tensor g, const TensorMeta& want, const Node& node, size_t i) {
  const Shape have = g.sizes();
  if (have != want.shape) {
    const int nh = int(have.size()), nw = int(want.shape.size());
    bool ok = nh >= nw;
    std::vector<int> lead, keep;
    for (int d = 0; ok && d < nh; ++d) {
      const int j = d - (nh - nw);
      if (j < 0) {
        lead.push_back(d);
      } else if (want.shape[j] == 1 && have[d] != 1) {
        keep.push_back(d);
      } else if (want.shape[j] != have[d]) {
        ok = false;
      }
    }
    if (!ok)
      throw Error("[backward] function " + node.name() + " returned an invalid gradient at index " +
                         std::to_string(i) + " - got " + shape_to_string(have) +
                         " but expected shape compatible with " + shape_to_string(want.shape));
    if (!keep.empty()) g = sum(g, keep, /*keepdim=*/true);
    if (!lead.empty()) g = sum(g, lead, /*keepdim=*/false);
    if (g.sizes() != want.shape) g = g.reshape(want.shape);
  }
  if (g.dtype() != want.dtype) g = g.to(want.dtype);  // complex -> real keeps the real part
  if (!same_device(g.device(), want.device)) g = g.to(want.device);
  return g;
}

struct Walk {
  bool keep_graph = false;
  bool create_graph = false;
  bool accumulate = true;  // backward(); grad() captures instead
  std::unordered_map<Node*, int> deps;
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  bool filtered = false;             // inputs were named: only `needed` nodes run
  std::unordered_set<Node*> needed;
  // grad(): (node, slot) -> result index
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;
  std::vector<Tensor> captured;
};

void add_into(std::vector<Tensor>& buf, uint32_t slot, const Tensor& g) {
  if (buf.size() <= slot) buf.resize(slot + 1);
  if (!buf[slot].defined())
    buf[slot] = g;
  else
    buf[slot] = add(buf[slot], g);
}

// Nodes reachable from the roots, with the number of edges into each.
void count_dependencies(Walk& w, const std::vector<Node*>& roots) {
  // Two outputs of one node may both be roots: walk that node once, or its
  // edges would be counted twice and their targets never become ready.
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (Node* r : roots)
    if (seen.insert(r).second) stack.push_back(r);
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.valid()) continue;
      ++w.deps[e.node.get()];
      if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }
}

// The nodes from which a target is reachable (only they need to run).
void mark_needed(Walk& w, const std::vector<Node*>& roots, const std::unordered_set<Node*>& targets) {
  std::unordered_map<Node*, int> state;  // 1: on the stack, 2: done
  std::unordered_map<Node*, bool> leads;
  struct Frame {
    Node* n;
    size_t next;
  };
  for (Node* r : roots) {
    if (state[r] == 2) continue;
    std::vector<Frame> st{{r, 0}};
    state[r] = 1;
    while (!st.empty()) {
      Frame& f = st.back();
      if (f.next < f.n->next_edges.size()) {
        Node* c = f.n->next_edges[f.next++].node.get();
        if (c && state[c] == 0) {
          state[c] = 1;
          st.push_back({c, 0});
        }
        continue;
      }
      bool lead = targets.count(f.n) > 0;
      for (const Edge& e : f.n->next_edges)
        if (e.valid() && leads[e.node.get()]) lead = true;
      leads[f.n] = lead;
      state[f.n] = 2;
      if (lead) w.needed.insert(f.n);
      st.pop_back();
    }
  }
}

// Whether node n's formula runs: every node when no inputs were named; else
// the nodes that lead on to a named input, and (backward only) the named
// leaves' accumulators.
bool runs_formula(const Walk& w, Node* n) {
  if (!w.filtered) return true;
  if (!w.needed.count(n)) return false;
  if (n->next_edges.empty()) return w.accumulate;
  for (const Edge& e : n->next_edges)
    if (e.valid() && w.needed.count(e.node.get())) return true;
  return false;
}

void run(Walk& w, const std::vector<Edge>& roots, const std::vector<Tensor>& root_grads) {
  std::vector<Node*> root_nodes;
  for (const Edge& e : roots) root_nodes.push_back(e.node.get());
  count_dependencies(w, root_nodes);
  for (size_t i = 0; i < roots.size(); ++i) add_into(w.buffers[roots[i].node.get()], roots[i].input_nr, root_grads[i]);

  auto later_first = [](Node* a, Node* b) { return a->sequence_nr < b->sequence_nr; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later_first)> ready(later_first);
  std::unordered_set<Node*> queued;
  for (Node* n : root_nodes)
    if (w.deps[n] == 0 && queued.insert(n).second) ready.push(n);

  GradModeGuard mode(w.create_graph);
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    std::vector<Tensor> grads = std::move(w.buffers[n]);
    w.buffers.erase(n);
    grads.resize(n->output_meta.size());
    // Hooks on the outputs' gradients (register_hook, retain_grad).
    for (size_t i = 0; i < grads.size() && i < n->output_hooks.size(); ++i) {
      if (!grads[i].defined()) continue;
      for (const auto& [id, hook] : std::vector(n->output_hooks[i])) {
        Tensor r = hook(grads[i]);
        if (r.defined()) grads[i] = r;
      }
    }
    if (auto it = w.captures.find(n); it != w.captures.end())
      for (const auto& [slot, index] : it->second)
        if (slot < grads.size() && grads[slot].defined()) w.captured[index] = grads[slot];
    std::vector<Tensor> outs;
    if (runs_formula(w, n)) {
      const bool is_accumulator = n->next_edges.empty();
      bool any = false;
      for (size_t i = 0; i < grads.size(); ++i) {
        if (grads[i].defined()) {
          any = true;
        } else if (!is_accumulator) {
          const TensorMeta& m = n->output_meta[i];
          grads[i] = zeros(m.shape, m.dtype, m.device);
        }
      }
      if (any) {
        outs = n->apply(std::move(grads));
        if (!w.keep_graph) n->release_saved();
        if (!is_accumulator && outs.size() != n->next_edges.size())
          throw Error("[backward] function " + n->name() + " returned " + std::to_string(outs.size()) +
                             " gradients, expected " + std::to_string(n->next_edges.size()));
      }
    }
    // Every child loses one dependency whether or not this node ran.
    for (size_t i = 0; i < n->next_edges.size(); ++i) {
      const Edge& e = n->next_edges[i];
      if (!e.valid()) continue;
      Node* next = e.node.get();
      if (i < outs.size() && outs[i].defined())
        add_into(w.buffers[next], e.input_nr, conform(outs[i], n->input_meta[i], *n, i));
      if (--w.deps[next] == 0 && queued.insert(next).second) ready.push(next);
    }
  }
}

// The roots: each output's edge and its initial gradient.
void collect_roots(std::span<const Tensor> outputs, std::span<const Tensor> grads, const char* what,
                   std::vector<Edge>* edges, std::vector<Tensor>* root_grads) {
  if (!grads.empty() && grads.size() != outputs.size())
    throw ValueError(std::string("[") + what + "] got " + std::to_string(grads.size()) + " gradients for " +
                     std::to_string(outputs.size()) + " tensors");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    Edge e = detail::gradient_edge(t);
    if (!e.valid())
      throw Error(std::string("[") + what + "] element " + std::to_string(i) +
                         " of tensors does not require grad and does not have a grad_fn");
    Tensor g = i < grads.size() ? grads[i] : Tensor();
    if (!g.defined()) {
      if (t.numel() != 1)
        throw Error(std::string("[") + what + "] grad can be implicitly created only for scalar outputs "
                           "(got shape " + t.shape_str() + ")");
      g = ones(t.sizes(), t.dtype(), t.device());
    } else if (g.sizes() != t.sizes()) {
      throw Error(std::string("[") + what + "] Mismatch in shape: grad_output[" + std::to_string(i) +
                         "] has a shape of " + g.shape_str() + " and output[" + std::to_string(i) +
                         "] has a shape of " + t.shape_str());
    }
    edges->push_back(std::move(e));
    root_grads->push_back(g);
  }
}

}  // namespace

void backward(std::span<const Tensor> tensors, std::span<const Tensor> grad_tensors, bool retain_graph,
              bool create_graph, std::span<const Tensor> inputs) {
  Walk w;
  w.keep_graph = retain_graph || create_graph;
  w.create_graph = create_graph;
  std::vector<Edge> roots;
  std::vector<Tensor> root_grads;
  collect_roots(tensors, grad_tensors, "backward", &roots, &root_grads);
  if (!inputs.empty()) {
    std::unordered_set<Node*> targets;
    for (const Tensor& in : inputs) {
      Edge e = detail::gradient_edge(in);
      if (!e.valid()) throw Error("[backward] one of the differentiated Tensors does not require grad");
      if (!in.is_leaf()) {
        // A non-leaf input keeps its gradient in .grad, as retain_grad does.
        Tensor keep = in;
        keep.retain_grad();
      }
      targets.insert(e.node.get());
    }
    std::vector<Node*> root_nodes;
    for (const Edge& e : roots) root_nodes.push_back(e.node.get());
    w.filtered = true;
    mark_needed(w, root_nodes, targets);
    if (w.needed.empty()) return;
  }
  run(w, roots, root_grads);
}

std::vector<Tensor> grad(std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                         std::span<const Tensor> grad_outputs, std::optional<bool> retain_graph,
                         bool create_graph, bool allow_unused) {
  Walk w;
  w.keep_graph = retain_graph.value_or(create_graph);
  w.create_graph = create_graph;
  w.accumulate = false;
  std::vector<Edge> roots;
  std::vector<Tensor> root_grads;
  collect_roots(outputs, grad_outputs, "grad", &roots, &root_grads);
  std::unordered_set<Node*> targets;
  w.captured.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    Edge e = detail::gradient_edge(inputs[i]);
    if (!e.valid()) throw Error("[grad] One of the differentiated Tensors does not require grad");
    w.captures[e.node.get()].emplace_back(e.input_nr, i);
    targets.insert(e.node.get());
  }
  std::vector<Node*> root_nodes;
  for (const Edge& e : roots) root_nodes.push_back(e.node.get());
  w.filtered = true;
  mark_needed(w, root_nodes, targets);
  run(w, roots, root_grads);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!w.captured[i].defined() && !allow_unused)
      throw Error("[grad] One of the differentiated Tensors appears to not have been used in the graph. "
                         "Set allow_unused=True if this is the desired behavior");
    if (w.captured[i].defined() && !create_graph) w.captured[i] = w.captured[i].detach();
  }
  return w.captured;
}

}  // namespace kiln::autograd
