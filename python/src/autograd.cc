// kiln.autograd and the autograd half of kiln.Tensor: requires_grad, grad,
// grad_fn, backward, hooks, and the grad-mode switches the Python context
// managers (python/kiln/autograd.py) are built on.
#include <nanobind/stl/function.h>
#include <nanobind/stl/shared_ptr.h>

#include "bind_util.h"
#include "kiln/autograd.h"

namespace kiln::py {

using namespace nb::literals;

namespace {

std::vector<Tensor> tensor_list(nb::handle h) {
  std::vector<Tensor> out;
  if (h.is_none()) return out;
  if (is_tensor(h)) {
    out.push_back(nb::cast<Tensor>(h));
    return out;
  }
  for (nb::handle item : h) out.push_back(item.is_none() ? Tensor() : to_tensor(item));
  return out;
}

nb::object node_or_none(const std::shared_ptr<autograd::Node>& n) {
  if (!n) return nb::none();
  return nb::cast(n);
}

}  // namespace

void init_autograd(nb::module_& m, nb::class_<Tensor>& cls) {
  nb::class_<autograd::Node>(m, "Node", "A recorded op call in the autograd graph (torch's grad_fn).")
      .def("name", &autograd::Node::name)
      .def_prop_ro("next_functions",
                   [](const autograd::Node& n) {
                     nb::list out;
                     for (const auto& e : n.next_edges) out.append(nb::make_tuple(node_or_none(e.node), e.input_nr));
                     return nb::tuple(out);
                   })
      .def("__repr__", [](const autograd::Node& n) { return "<" + n.name() + ">"; });

  m.def("_autograd_live_nodes", &autograd::live_node_count,
        "Autograd nodes alive in this process (a test hook: a freed graph brings it back down).");

  cls.def_prop_rw(
         "requires_grad", [](const Tensor& t) { return t.requires_grad(); },
         [](Tensor& t, bool v) { t.requires_grad_(v); },
         "Whether gradients are computed for this tensor (set it on leaves).")
      .def(
          "requires_grad_", [](Tensor& t, bool v) -> Tensor& { return t.requires_grad_(v); },
          "requires_grad"_a = true, nb::rv_policy::reference)
      .def_prop_rw(
          "grad", [](const Tensor& t) -> nb::object { Tensor g = t.grad(); return g.defined() ? nb::cast(g) : nb::none(); },
          [](Tensor& t, nb::handle g) { t.set_grad(g.is_none() ? Tensor() : to_tensor(g)); },
          nb::for_setter(nb::arg("value").none()), "The gradient accumulated by backward() (None until then).")
      .def_prop_ro("grad_fn", [](const Tensor& t) { return node_or_none(t.grad_fn()); })
      .def_prop_ro("is_leaf", &Tensor::is_leaf)
      .def_prop_ro("retains_grad", &Tensor::retains_grad)
      .def_prop_ro("_version", &Tensor::version)
      .def("detach", &Tensor::detach)
      .def("detach_", [](Tensor& t) -> Tensor& { return t.detach_(); }, nb::rv_policy::reference)
      .def("retain_grad", &Tensor::retain_grad)
      .def(
          "backward",
          [](const Tensor& t, nb::handle gradient, std::optional<bool> retain_graph, bool create_graph,
             nb::handle inputs) {
            std::vector<Tensor> ts{t}, gs;
            if (!gradient.is_none()) gs.push_back(to_tensor(gradient));
            std::vector<Tensor> ins = tensor_list(inputs);
            nb::gil_scoped_release release;
            autograd::backward(ts, gs, retain_graph.value_or(create_graph), create_graph, ins);
          },
          "gradient"_a = nb::none(), "retain_graph"_a = nb::none(), "create_graph"_a = false,
          "inputs"_a = nb::none(),
          "Accumulates the gradient of this tensor into the leaves' .grad (torch.Tensor.backward).")
      .def(
          "register_hook",
          [](Tensor& t, nb::callable fn) {
            nb::object f = fn;
            const int id = t.register_hook([f](const Tensor& g) -> Tensor {
              nb::gil_scoped_acquire gil;
              nb::object r = f(g);
              return r.is_none() ? Tensor() : to_tensor(r);
            });
            return id;
          },
          "hook"_a, "Calls hook(grad) when this tensor's gradient is computed; a returned tensor replaces it. "
                    "Returns a handle for remove_hook.")
      .def("_remove_hook", &Tensor::remove_hook, "handle"_a);

  m.def("is_grad_enabled", &autograd::is_grad_enabled);
  m.def("_set_grad_enabled", &autograd::set_grad_enabled, "mode"_a);
  m.def("is_inference_mode_enabled", &autograd::is_inference_mode_enabled);
  m.def("_set_inference_mode", &autograd::set_inference_mode, "mode"_a,
        "Sets the inference-mode flag (and turns grad mode off when set); the context manager restores both.");

  m.def(
      "autograd_backward",
      [](nb::handle tensors, nb::handle grad_tensors, std::optional<bool> retain_graph, bool create_graph,
         nb::handle inputs) {
        std::vector<Tensor> ts = tensor_list(tensors), gs = tensor_list(grad_tensors), ins = tensor_list(inputs);
        nb::gil_scoped_release release;
        autograd::backward(ts, gs, retain_graph.value_or(create_graph), create_graph, ins);
      },
      "tensors"_a, "grad_tensors"_a = nb::none(), "retain_graph"_a = nb::none(), "create_graph"_a = false,
      "inputs"_a = nb::none(), "torch.autograd.backward.");
  m.def(
      "autograd_grad",
      [](nb::handle outputs, nb::handle inputs, nb::handle grad_outputs, std::optional<bool> retain_graph,
         bool create_graph, bool allow_unused) {
        std::vector<Tensor> os = tensor_list(outputs), ins = tensor_list(inputs), gs = tensor_list(grad_outputs);
        std::vector<Tensor> r;
        {
          nb::gil_scoped_release release;
          r = autograd::grad(os, ins, gs, retain_graph, create_graph, allow_unused);
        }
        nb::list out;
        for (const Tensor& t : r) out.append(t.defined() ? nb::cast(t) : nb::none());
        return nb::tuple(out);
      },
      "outputs"_a, "inputs"_a, "grad_outputs"_a = nb::none(), "retain_graph"_a = nb::none(),
      "create_graph"_a = false, "allow_unused"_a = false,
      "The gradients of outputs with respect to inputs, as a tuple (torch.autograd.grad).");
}

}  // namespace kiln::py
