// atleast_1d/2d/3d and hstack/vstack/dstack (issue 11), over reshape and cat, as NumPy's.
#include "ember/errors.h"
#include "ember/ops/atleast_1d.h"
#include "ember/ops/atleast_2d.h"
#include "ember/ops/atleast_3d.h"
#include "ember/ops/cat.h"
#include "ember/ops/dstack.h"
#include "ember/ops/hstack.h"
#include "ember/ops/reshape.h"
#include "ember/ops/unsqueeze.h"
#include "ember/ops/vstack.h"
#include "ember/tensor.h"

namespace ember::native {

Tensor atleast_1d(const Tensor& self) { return self.dim() == 0 ? ember::reshape(self, IntList{1}) : self; }

Tensor atleast_2d(const Tensor& self) {
  if (self.dim() == 0) return ember::reshape(self, IntList{1, 1});
  return self.dim() == 1 ? ember::unsqueeze(self, 0) : self;
}

// NumPy's rule: (n,) becomes (1, n, 1) and (m, n) becomes (m, n, 1).
Tensor atleast_3d(const Tensor& self) {
  if (self.dim() == 0) return ember::reshape(self, IntList{1, 1, 1});
  if (self.dim() == 1) return ember::unsqueeze(ember::unsqueeze(self, 0), -1);
  return self.dim() == 2 ? ember::unsqueeze(self, -1) : self;
}

Tensor hstack(const TensorList& tensors) {
  EMBER_CHECK(!tensors.empty(), Runtime, "hstack expects a non-empty TensorList");
  TensorList parts;
  for (const Tensor& t : tensors) parts.push_back(ember::atleast_1d(t));
  return ember::cat(parts, parts[0].dim() == 1 ? 0 : 1);
}

Tensor vstack(const TensorList& tensors) {
  EMBER_CHECK(!tensors.empty(), Runtime, "vstack expects a non-empty TensorList");
  TensorList parts;
  for (const Tensor& t : tensors) parts.push_back(ember::atleast_2d(t));
  return ember::cat(parts, 0);
}

Tensor dstack(const TensorList& tensors) {
  EMBER_CHECK(!tensors.empty(), Runtime, "dstack expects a non-empty TensorList");
  TensorList parts;
  for (const Tensor& t : tensors) parts.push_back(ember::atleast_3d(t));
  return ember::cat(parts, 2);
}

}  // namespace ember::native
