// Every op kiln registers: the one list (cf. ATen's native_functions.yaml).
// Each family header defines its kernel signatures and a KILN_OPS_<FAMILY>(X)
// list of X(name, signature); this file declares one Op object per entry as
// kiln::ops::<name>, and all_ops() enumerates them for the table-driven test.
// How to add an op, a device kernel or a derivative: docs/ops.md.
#pragma once

#include <span>

#include "core/copy_ops.h"
#include "core/factory_ops.h"
#include "core/op.h"
#include "core/random_ops.h"
#include "ops/registry/binary.h"
#include "ops/registry/binary_extra.h"
#include "ops/registry/complex.h"
#include "ops/registry/conv.h"
#include "ops/registry/dropout.h"
#include "ops/registry/fft.h"
#include "ops/registry/fold.h"
#include "ops/registry/group_norm.h"
#include "ops/registry/index.h"
#include "ops/registry/interpolate.h"
#include "ops/registry/linalg.h"
#include "ops/registry/matmul.h"
#include "ops/registry/nn.h"
#include "ops/registry/pad.h"
#include "ops/registry/pool.h"
#include "ops/registry/reduce.h"
#include "ops/registry/shape.h"
#include "ops/registry/softmax.h"
#include "ops/registry/sort.h"
#include "ops/registry/special.h"
#include "ops/registry/unary.h"
#include "ops/registry/unary_extra.h"

// Families registered so far. Front-ends not yet listed here still call their
// CPU kernels directly; each moves here, with its kernels under src/cpu/ops and
// its entries in tests/cpp/op_table, as docs/ops.md describes.
#define KILN_OPS(X)            \
  KILN_OPS_COPY(X)             \
  KILN_OPS_UNARY_MATH(X)       \
  KILN_OPS_UNARY_SIGN(X)       \
  KILN_OPS_UNARY_ROUNDING(X)   \
  KILN_OPS_UNARY_PREDICATES(X) \
  KILN_OPS_UNARY_SPECIAL(X)    \
  KILN_OPS_UNARY_EXTRA(X)      \
  KILN_OPS_COMPLEX(X)          \
  KILN_OPS_BINARY(X)           \
  KILN_OPS_BINARY_EXTRA(X)     \
  KILN_OPS_SOFTMAX(X)          \
  KILN_OPS_REDUCE(X)           \
  KILN_OPS_SORT(X)             \
  KILN_OPS_INDEX(X)            \
  KILN_OPS_NN(X)               \
  KILN_OPS_POOL(X)             \
  KILN_OPS_MATMUL(X)           \
  KILN_OPS_LINALG(X)           \
  KILN_OPS_RANDOM(X)           \
  KILN_OPS_FACTORIES(X)        \
  KILN_OPS_SHAPE(X)            \
  KILN_OPS_CONV(X)             \
  KILN_OPS_PAD(X)              \
  KILN_OPS_INTERPOLATE(X)      \
  KILN_OPS_FOLD(X)             \
  KILN_OPS_GROUP_NORM(X)       \
  KILN_OPS_DROPOUT(X)          \
  KILN_OPS_FFT(X)              \
  KILN_OPS_SPECIAL(X)          \
  /* each new family adds its list above this line */

namespace kiln::ops {

#define KILN_DECLARE_OP(name, sig) extern Op<sig> name;
KILN_OPS(KILN_DECLARE_OP)
#undef KILN_DECLARE_OP

// One registered op as the table-driven test sees it.
struct OpInfo {
  const char* name;
  bool (*has_kernel)(DeviceKind);
  // Gives device kind `to` the kernel `from` has, and takes it away again: how
  // a test runs every op on a host-memory stand-in for a second device.
  void (*share_kernel)(DeviceKind to, DeviceKind from);
  void (*clear_kernel)(DeviceKind kind);
  bool (*nondifferentiable)();
};
std::span<const OpInfo> all_ops();

// Sets Op::nondifferentiable on the ops whose outputs carry no gradient
// (ops/registry/nondifferentiable.cc); run with the backends' registration.
void mark_nondifferentiable();

}  // namespace kiln::ops
