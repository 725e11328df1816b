// write_out (include/kiln/out.h).
#include "kiln/out.h"

#include "core/autograd_record.h"
#include "kiln/error.h"

namespace kiln {

void write_out(const char* op, const Tensor& result, const Tensor& out) {
  autograd::Record(op, {&result}).no_out(out);
  KILN_CHECK(out.sizes() == result.sizes(), ValueError,
             "[" << op << "] out has shape " << out.shape_str() << ", expected " << result.shape_str());
  KILN_CHECK(out.dtype() == result.dtype(), TypeError,
             "[" << op << "] out has dtype " << name(out.dtype()) << ", expected " << name(result.dtype()));
  autograd::wrote(out);
  Tensor(out).copy_(result);
}

}  // namespace kiln
