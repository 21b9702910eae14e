// GradScaler's two ops on the CPU, with PyTorch's semantics (aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp):
// _amp_foreach_non_finite_check_and_unscale_ multiplies every gradient by inv_scale in place and sets
// found_inf to 1 if any element is inf or NaN; _amp_update_scale_ backs the scale off after an inf
// and grows it after growth_interval clean steps.
#include <cmath>

#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/_amp_foreach_non_finite_check_and_unscale_.h"
#include "ember/ops/_amp_update_scale_.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/copy_.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

void check_one_element_float(const Tensor& t, const char* what) {
  EMBER_CHECK(t.numel() == 1, Runtime, what, " must be a 1-element tensor.");
  EMBER_CHECK(t.dtype() == ScalarType::Float32, Runtime, what, " must be a float tensor.");
}

// Scales `t` (contiguous) by inv_scale; true if it holds an inf or NaN (checked before scaling, as PyTorch).
bool unscale_dense(const Tensor& t, float inv_scale) {
  bool non_finite = false;
  visit_floating(t.dtype(), "_amp_foreach_non_finite_check_and_unscale_", [&]<typename T>() {
    using M = opmath_t<T>;
    T* data = t.data<T>();
    const int64_t n = t.numel();
    for (int64_t i = 0; i < n; ++i) {
      const M v = static_cast<M>(data[i]);
      non_finite |= !std::isfinite(v);
      data[i] = static_cast<T>(inv_scale == 1.f ? v : static_cast<M>(v * static_cast<M>(inv_scale)));
    }
  });
  return non_finite;
}

}  // namespace

void amp_foreach_non_finite_check_and_unscale_cpu(const TensorList& self, const Tensor& found_inf,
                                                  const Tensor& inv_scale) {
  check_one_element_float(inv_scale, "inv_scale");
  check_one_element_float(found_inf, "found_inf");
  const float inv = *inv_scale.data<float>();
  bool any_non_finite = false;
  for (const Tensor& t : self) {
    EMBER_CHECK(t.defined() && t.device().is_cpu(), Runtime,
                "_amp_foreach_non_finite_check_and_unscale_: expected all tensors on cpu");
    if (!is_floating(t.dtype())) fail_dtype_not_implemented("_amp_foreach_non_finite_check_and_unscale_", t.dtype());
    if (t.numel() == 0) continue;
    if (t.is_contiguous()) {
      any_non_finite |= unscale_dense(t, inv);
      t.bump_version();
    } else {
      Tensor work = ember::contiguous(t);
      any_non_finite |= unscale_dense(work, inv);
      ember::copy_(t, work, false);
    }
  }
  if (any_non_finite) {
    *found_inf.data<float>() = 1.f;
    found_inf.bump_version();
  }
}

Tensor amp_update_scale_cpu(const Tensor& self, const Tensor& growth_tracker, const Tensor& found_inf,
                            double scale_growth_factor, double scale_backoff_factor, int64_t growth_interval) {
  EMBER_CHECK(growth_tracker.numel() == 1 && growth_tracker.dtype() == ScalarType::Int32, Runtime,
              "growth_tracker must be a single-element int tensor.");
  EMBER_CHECK(self.numel() == 1 && self.dtype() == ScalarType::Float32, Runtime,
              "current_scale must be a single-element float tensor.");
  EMBER_CHECK(found_inf.numel() == 1 && found_inf.dtype() == ScalarType::Float32, Runtime,
              "found_inf must be a single-element float tensor.");
  float* scale = self.data<float>();
  int32_t* tracker = growth_tracker.data<int32_t>();
  if (*found_inf.data<float>()) {
    *scale = *scale * static_cast<float>(scale_backoff_factor);
    *tracker = 0;
  } else {
    const int32_t successful = *tracker + 1;
    if (successful == growth_interval) {
      const float grown = *scale * static_cast<float>(scale_growth_factor);
      if (std::isfinite(grown)) *scale = grown;  // never grows to inf
      *tracker = 0;
    } else {
      *tracker = successful;
    }
  }
  growth_tracker.bump_version();
  return self;
}

}  // namespace ember::cpu
