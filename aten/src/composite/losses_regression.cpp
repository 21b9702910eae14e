// The regression and margin losses (torch.nn.functional's mse_loss ... triplet_margin_loss) as
// ATen has them: `reduction` is 0 none, 1 mean, 2 sum. The pointwise ones run one fused
// elementwise kernel (with its own derivative) and then the reduction.
#include <cmath>
#include <cstdint>

#include "ember/errors.h"
#include "ember/ops/_huber_loss_elementwise.h"
#include "ember/ops/_l1_loss_elementwise.h"
#include "ember/ops/_mse_loss_elementwise.h"
#include "ember/ops/_smooth_l1_loss_elementwise.h"
#include "ember/ops/add.h"
#include "ember/ops/clamp_min.h"
#include "ember/ops/cosine_embedding_loss.h"
#include "ember/ops/eq.h"
#include "ember/ops/exp.h"
#include "ember/ops/gt.h"
#include "ember/ops/hinge_embedding_loss.h"
#include "ember/ops/huber_loss.h"
#include "ember/ops/l1_loss.h"
#include "ember/ops/log.h"
#include "ember/ops/margin_ranking_loss.h"
#include "ember/ops/mean.h"
#include "ember/ops/minimum.h"
#include "ember/ops/mse_loss.h"
#include "ember/ops/mul.h"
#include "ember/ops/ne.h"
#include "ember/ops/neg.h"
#include "ember/ops/pairwise_distance.h"
#include "ember/ops/poisson_nll_loss.h"
#include "ember/ops/smooth_l1_loss.h"
#include "ember/ops/sqrt.h"
#include "ember/ops/sub.h"
#include "ember/ops/sum.h"
#include "ember/ops/to.h"
#include "ember/ops/triplet_margin_loss.h"
#include "ember/ops/true_divide.h"
#include "ember/ops/where.h"
#include "ember/tensor.h"

namespace ember::native {
namespace {

enum LossReduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

void check_reduction(const char* op, int64_t reduction) {
  EMBER_CHECK(reduction == kNone || reduction == kMean || reduction == kSum, Runtime, op,
              ": reduction must be 0 (none), 1 (mean) or 2 (sum), got ", reduction);
}

// ATen's apply_loss_reduction (the mean of an empty loss is NaN).
Tensor apply_loss_reduction(const Tensor& loss, int64_t reduction) {
  if (reduction == kMean) return ember::mean(loss);
  if (reduction == kSum) return ember::sum(loss);
  return loss;
}

Tensor number(double v) { return wrap_number(Scalar(v)); }

}  // namespace

Tensor mse_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  check_reduction("mse_loss", reduction);
  return apply_loss_reduction(ember::_mse_loss_elementwise(self, target), reduction);
}

Tensor l1_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  check_reduction("l1_loss", reduction);
  return apply_loss_reduction(ember::_l1_loss_elementwise(self, target), reduction);
}

Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
  EMBER_CHECK(beta >= 0, Runtime, "smooth_l1_loss does not support negative values for beta.");
  check_reduction("smooth_l1_loss", reduction);
  if (beta == 0.0) return ember::l1_loss(self, target, reduction);  // as PyTorch: no division by beta
  return apply_loss_reduction(ember::_smooth_l1_loss_elementwise(self, target, Scalar(beta)), reduction);
}

Tensor huber_loss(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  EMBER_CHECK(delta > 0, Runtime, "huber_loss does not support non-positive values for delta.");
  check_reduction("huber_loss", reduction);
  // PyTorch computes into a tensor of self's dtype: the target does not promote.
  const Tensor t = target.dtype() == self.dtype() ? target : ember::to_dtype(target, self.dtype());
  return apply_loss_reduction(ember::_huber_loss_elementwise(self, t, Scalar(delta)), reduction);
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input, bool full, double eps,
                        int64_t reduction) {
  check_reduction("poisson_nll_loss", reduction);
  Tensor loss = log_input ? ember::sub(ember::exp(input), ember::mul(target, input))
                          : ember::sub(input, ember::mul(target, ember::log(ember::add(input, number(eps)))));
  if (full) {
    // Stirling's approximation of log(target!), only where target > 1 (0 elsewhere, as PyTorch).
    const Tensor above_one = ember::gt(target, number(1.0));
    const Tensor safe = ember::where(above_one, target, number(1.0));
    const Tensor stirling = ember::add(ember::sub(ember::mul(safe, ember::log(safe)), safe),
                                       ember::mul(ember::log(ember::mul(safe, number(2 * M_PI))), number(0.5)));
    loss = ember::add(loss, ember::where(above_one, stirling, number(0.0)));
  }
  return apply_loss_reduction(loss, reduction);
}

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                           int64_t reduction) {
  check_reduction("margin_ranking_loss", reduction);
  const Tensor loss = ember::add(ember::mul(ember::neg(target), ember::sub(input1, input2)), number(margin));
  return apply_loss_reduction(ember::clamp_min(loss, Scalar(0.0)), reduction);
}

Tensor hinge_embedding_loss(const Tensor& self, const Tensor& target, double margin, int64_t reduction) {
  check_reduction("hinge_embedding_loss", reduction);
  const Tensor margin_part = ember::where(ember::ne(target, number(1.0)),
                                          ember::clamp_min(ember::sub(number(margin), self), Scalar(0.0)), number(0.0));
  const Tensor self_part = ember::where(ember::ne(target, number(-1.0)), self, number(0.0));
  return apply_loss_reduction(ember::add(margin_part, self_part), reduction);
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                             int64_t reduction) {
  check_reduction("cosine_embedding_loss", reduction);
  const int64_t target_dim = target.dim();
  EMBER_CHECK(target_dim <= 1, Runtime,
              "cosine_embedding_loss: 0D or 1D target tensor expected, multi-target not supported");
  EMBER_CHECK(input1.dim() == target_dim + 1 && input2.dim() == target_dim + 1, Runtime, "cosine_embedding_loss: ",
              target_dim, "D target tensor expects ", target_dim + 1, "D input tensors, but found inputs with sizes ",
              input1.sizes(), " and ", input2.sizes(), ".");
  constexpr double kEpsilon = 1e-12;  // PyTorch's, added to each squared magnitude
  const IntList dim{target_dim};
  const Tensor dot = ember::sum(ember::mul(input1, input2), dim);
  const Tensor mag1 = ember::add(ember::sum(ember::mul(input1, input1), dim), number(kEpsilon));
  const Tensor mag2 = ember::add(ember::sum(ember::mul(input2, input2), dim), number(kEpsilon));
  const Tensor cos = ember::true_divide(dot, ember::sqrt(ember::mul(mag1, mag2)));
  const Tensor positive = ember::where(ember::eq(target, number(1.0)), ember::sub(number(1.0), cos), number(0.0));
  const Tensor negative = ember::where(ember::eq(target, number(-1.0)),
                                       ember::clamp_min(ember::sub(cos, number(margin)), Scalar(0.0)), number(0.0));
  return apply_loss_reduction(ember::add(positive, negative), reduction);
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin,
                           double p, double eps, bool swap, int64_t reduction) {
  check_reduction("triplet_margin_loss", reduction);
  EMBER_CHECK(anchor.dim() == positive.dim() && positive.dim() == negative.dim(), Runtime,
              "triplet_margin_loss: The anchor, positive, and negative tensors are expected to have the same number "
              "of dimensions, but got: anchor ", anchor.dim(), "D, positive ", positive.dim(), "D, and negative ",
              negative.dim(), "D inputs");
  const Tensor d_positive = ember::pairwise_distance(anchor, positive, p, eps);
  Tensor d_negative = ember::pairwise_distance(anchor, negative, p, eps);
  if (swap) d_negative = ember::minimum(d_negative, ember::pairwise_distance(positive, negative, p, eps));
  const Tensor loss = ember::sub(ember::add(d_positive, number(margin)), d_negative);
  return apply_loss_reduction(ember::clamp_min(loss, Scalar(0.0)), reduction);
}

}  // namespace ember::native
