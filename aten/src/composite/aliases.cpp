// torch's other names for ops (absolute, arccos, multiply, greater, concat, swapdims, ...): each calls
// its op, so autograd records that op's node, as PyTorch's aliases do.
#include "ember/ops/abs.h"
#include "ember/ops/absolute.h"
#include "ember/ops/acos.h"
#include "ember/ops/acosh.h"
#include "ember/ops/arccos.h"
#include "ember/ops/arccosh.h"
#include "ember/ops/arcsin.h"
#include "ember/ops/arcsinh.h"
#include "ember/ops/arctan.h"
#include "ember/ops/arctanh.h"
#include "ember/ops/asin.h"
#include "ember/ops/asinh.h"
#include "ember/ops/atan.h"
#include "ember/ops/atanh.h"
#include "ember/ops/cat.h"
#include "ember/ops/concat.h"
#include "ember/ops/concatenate.h"
#include "ember/ops/div.h"
#include "ember/ops/divide.h"
#include "ember/ops/fix.h"
#include "ember/ops/ge.h"
#include "ember/ops/greater.h"
#include "ember/ops/greater_equal.h"
#include "ember/ops/gt.h"
#include "ember/ops/le.h"
#include "ember/ops/less.h"
#include "ember/ops/less_equal.h"
#include "ember/ops/lt.h"
#include "ember/ops/moveaxis.h"
#include "ember/ops/movedim.h"
#include "ember/ops/mul.h"
#include "ember/ops/multiply.h"
#include "ember/ops/ne.h"
#include "ember/ops/neg.h"
#include "ember/ops/negative.h"
#include "ember/ops/not_equal.h"
#include "ember/ops/row_stack.h"
#include "ember/ops/sub.h"
#include "ember/ops/subtract.h"
#include "ember/ops/swapdims.h"
#include "ember/ops/transpose.h"
#include "ember/ops/trunc.h"
#include "ember/ops/vstack.h"
#include "ember/tensor.h"

namespace ember::native {

Tensor absolute(const Tensor& self) { return ember::abs(self); }
Tensor arccos(const Tensor& self) { return ember::acos(self); }
Tensor arcsin(const Tensor& self) { return ember::asin(self); }
Tensor arctan(const Tensor& self) { return ember::atan(self); }
Tensor arccosh(const Tensor& self) { return ember::acosh(self); }
Tensor arcsinh(const Tensor& self) { return ember::asinh(self); }
Tensor arctanh(const Tensor& self) { return ember::atanh(self); }
Tensor negative(const Tensor& self) { return ember::neg(self); }
Tensor fix(const Tensor& self) { return ember::trunc(self); }

Tensor multiply(const Tensor& self, const Tensor& other) { return ember::mul(self, other); }
Tensor divide(const Tensor& self, const Tensor& other, const std::optional<std::string>& rounding_mode) {
  return ember::div(self, other, rounding_mode);
}
Tensor subtract(const Tensor& self, const Tensor& other, const Scalar& alpha) { return ember::sub(self, other, alpha); }

Tensor greater(const Tensor& self, const Tensor& other) { return ember::gt(self, other); }
Tensor greater_equal(const Tensor& self, const Tensor& other) { return ember::ge(self, other); }
Tensor less(const Tensor& self, const Tensor& other) { return ember::lt(self, other); }
Tensor less_equal(const Tensor& self, const Tensor& other) { return ember::le(self, other); }
Tensor not_equal(const Tensor& self, const Tensor& other) { return ember::ne(self, other); }

Tensor concat(const TensorList& tensors, int64_t dim) { return ember::cat(tensors, dim); }
Tensor concatenate(const TensorList& tensors, int64_t axis) { return ember::cat(tensors, axis); }
Tensor row_stack(const TensorList& tensors) { return ember::vstack(tensors); }
Tensor swapdims(const Tensor& self, int64_t dim0, int64_t dim1) { return ember::transpose(self, dim0, dim1); }
Tensor moveaxis(const Tensor& self, const IntList& source, const IntList& destination) {
  return ember::movedim(self, source, destination);
}

}  // namespace ember::native
