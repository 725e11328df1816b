// The kiln._C extension: one init_<area> per binding file.
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void init_tensor(nb::module_& m);   // tensor.cc: Tensor, dtypes, factories, interop, memory
void init_unary(nb::module_& m);    // unary.cc
void init_binary(nb::module_& m);   // binary.cc
void init_reduce(nb::module_& m);   // reduce.cc
void init_index(nb::module_& m);    // index.cc: indexing, gather/scatter, sort/topk, bincount

NB_MODULE(_C, m) {
  m.doc() = "kiln: tensors, FP8 and LLM kernels for the CPU";
  init_tensor(m);
  init_unary(m);
  init_binary(m);
  init_reduce(m);
  init_index(m);
}
