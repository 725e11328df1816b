// The op registry's one building block: an Op names an operation and holds its
// kernels keyed by device kind, plus a slot for its derivative. Every op is
// declared once in ops/registry/all.h; front-ends (src/ops, src/nn, src/linalg)
// validate, promote, broadcast and allocate, then call the op, which runs the
// kernel of the tensors' device. Backends (src/cpu, later src/cuda) fill the
// kernel slots in their register_kernels(); nothing else names a backend.
// See docs/ops.md.
#pragma once

#include <array>
#include <concepts>
#include <ranges>
#include <type_traits>
#include <atomic>
#include <initializer_list>
#include <string>

#include "core/autograd_record.h"
#include "core/device_check.h"
#include "kiln/device.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln {

namespace detail {
// Runs every compiled backend's register_kernels() once (src/backends.cc) and
// then sets backends_registered; the first op call pays for it, later calls
// one acquire load, inline.
extern std::atomic<bool> backends_registered;
void register_backends_once();
inline void ensure_backends_registered() {
  if (!backends_registered.load(std::memory_order_acquire)) register_backends_once();
}
[[noreturn]] void throw_no_kernel(const char* op, Device d);

// Whether a kernel argument holds a tensor that requires grad: a Tensor, a
// struct with a Tensor `t` (a binary operand), or a range of either.
template <typename T>
bool arg_requires_grad(const T& x) {
  if constexpr (std::is_same_v<T, Tensor>) {
    return x.requires_grad();
  } else if constexpr (requires { { x.t } -> std::convertible_to<const Tensor&>; }) {
    return x.t.requires_grad();
  } else if constexpr (std::ranges::range<T>) {
    for (const auto& e : x)
      if (arg_requires_grad(e)) return true;
    return false;
  } else if constexpr (std::is_pointer_v<T>) {
    if constexpr (std::is_same_v<std::remove_cv_t<std::remove_pointer_t<T>>, Tensor>) return x && x->requires_grad();
    return false;
  } else {
    return false;
  }
}
}  // namespace detail

template <typename Sig>
class Op;

// Sig is the kernel's signature: the tensors the front-end prepared (inputs,
// allocated outputs) and the op's plain parameters. A kernel may assume what
// the front-end checked: dtypes, shapes, no overlap where it matters.
template <typename R, typename... A>
class Op<R(A...)> {
 public:
  using Kernel = R (*)(A...);

  explicit constexpr Op(const char* name) : name_(name) {}
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  const char* name() const { return name_; }

  // A backend's registration: the kernel that runs this op on `kind`.
  void set_kernel(DeviceKind kind, Kernel k) { kernels_[size_t(kind)] = k; }
  bool has_kernel(DeviceKind kind) const { return kernel(kind) != nullptr; }
  Kernel kernel(DeviceKind kind) const {
    detail::ensure_backends_registered();
    return kernels_[size_t(kind)];
  }

  // Runs the kernel registered for `device`; NotImplementedError when the op
  // has none there.
  R operator()(Device device, A... args) const {
    detail::ensure_backends_registered();
    const Kernel k = kernels_[size_t(device.kind)];
    if (!k) detail::throw_no_kernel(name_, device);
    // A differentiable front-end records itself and runs its kernels with grad
    // mode off; reaching a kernel with grad mode on and an input that requires
    // grad means the gradient would be lost, so that is an error.
    if (autograd::grad_recording() && !nondifferentiable && (detail::arg_requires_grad(args) || ...))
      autograd::detail::throw_no_derivative(name_);
    return k(static_cast<A>(args)...);
  }

  // Set for ops whose outputs carry no gradient (comparisons, indices,
  // integer results): their kernels may see inputs that require grad. The
  // derivatives of the others are recorded by their front-ends
  // (core/autograd_record.h); see ops/registry/nondifferentiable.cc.
  bool nondifferentiable = false;

 private:
  const char* name_;
  std::array<Kernel, kDeviceKinds> kernels_{};
};

// The device all defined tensors share (check_same_device's rule, which it
// applies: an Error naming `op` when two differ; undefined tensors skipped);
// with none defined, the CPU.
inline Device common_device(const char* op, std::initializer_list<const Tensor*> ts) {
  const Tensor* first = nullptr;
  for (const Tensor* t : ts) {
    if (!t->defined()) continue;
    if (!first) {
      first = t;
    } else if (!same_device(t->device(), first->device())) {
      throw_device_mismatch(op, first->device(), t->device());
    }
  }
  return first ? first->device() : Device{};
}

}  // namespace kiln
