// Complex parts and constructors with torch's names and dtype rules.
//   - conj(x): the complex conjugate; a real x gives a copy. torch's conj is a
//     lazy view (a conjugate bit); kiln's is a plain elementwise op.
//   - real(x) / imag(x): the parts of a complex x, in its real dtype, as new
//     tensors (torch returns views; a kiln Tensor cannot view its storage as
//     another dtype). real of a real x is x itself; imag of a real x raises
//     TypeError, as torch.
//   - angle(x): atan2(imag, real) for complex x (its real dtype); for real x,
//     pi where x < 0, else 0 (NaN stays NaN; bool and integers give float32).
//   - complex(re, im) and polar(abs, angle): float32 or float64 inputs of one
//     dtype, broadcast; the result is complex64 or complex128.
// Gradients follow torch's convention (docs/autograd.md).
#pragma once

#include "kiln/tensor.h"

namespace kiln {

Tensor conj(const Tensor& x);
Tensor real(const Tensor& x);
Tensor imag(const Tensor& x);
Tensor angle(const Tensor& x);
Tensor complex(const Tensor& re, const Tensor& im);
Tensor polar(const Tensor& abs, const Tensor& angle);
inline bool is_complex(const Tensor& x) { return is_complex(x.dtype()); }

}  // namespace kiln
