#include <nanobind/nanobind.h>

namespace nb = nanobind;

// Bindings for this area are added as its C++ API lands.
void init_tensor(nb::module_& m) {}
