// Factories: empty/zeros/ones/full, ranges, eye, and random tensors from the
// counter-based Philox generator. Fills go through the fill_ and _philox_fill_
// kernels of the tensor's device; ranges and eye compute on the CPU and move
// the result to `device`.
// (requires_grad is applied by the generated entries.)
#include <cmath>
#include <limits>
#include <optional>

#include "ember/allocator.h"
#include "ember/cuda/api.h"
#include "ember/generator.h"
#include "ember/op_support.h"
#include "ember/ops/_philox_fill_.h"
#include "ember/ops/arange.h"
#include "ember/ops/empty.h"
#include "ember/ops/eye.h"
#include "ember/ops/fill_.h"
#include "ember/ops/full.h"
#include "ember/ops/linspace.h"
#include "ember/ops/ones.h"
#include "ember/ops/rand.h"
#include "ember/ops/randint.h"
#include "ember/ops/randn.h"
#include "ember/ops/to.h"
#include "ember/ops/zeros.h"
#include "ember/parallel.h"
#include "ember/random_fill.h"
#include "ember/random_transforms.h"
#include "ember/tensor.h"

namespace ember {
namespace {
// Fills a tensor nobody else has seen yet: no version bump, no autograd.
void fill_fresh(const Tensor& t, const Scalar& v) {
  check_scalar_fits(v, t.dtype());
  kernel_for(dispatch::fill_, t.device(), "fill_")(t, v);
}
}  // namespace


Generator* default_generator() {
  static Generator gen;
  return &gen;
}

Generator* default_generator(Device device) {
  if (device.is_cpu()) return default_generator();
  // One per GPU, never destroyed (tensors may be made during interpreter shutdown).
  static Generator* per_gpu[128] = {};
  static std::mutex mutex;
  const int index = device.index >= 0 ? device.index : cuda::current_device();
  std::lock_guard<std::mutex> lock(mutex);
  Generator*& gen = per_gpu[index];
  if (!gen) {
    gen = new Generator();
    gen->device = Device(DeviceType::CUDA, index);
  }
  return gen;
}

Generator* generator_for(Generator* gen, Device device, const char* op) {
  if (!gen) return default_generator(device);
  EMBER_CHECK(gen->device.type == device.type, Runtime, op, "(): expected a '", device.is_cuda() ? "cuda" : "cpu",
              "' device type for generator but found '", gen->device.is_cuda() ? "cuda" : "cpu", "'");
  return gen;
}

namespace native {

namespace {

Device resolve_device(const std::optional<Device>& device, const char* op) {
  const Device dev = device.value_or(Device());
  check_device_available(dev, op);
  return dev;
}

// A tensor computed on the CPU, moved to where it was asked for.
Tensor on_device(const Tensor& t, Device dev) {
  if (dev.is_cpu()) return t;
  return ember::to_device(t, dev, std::nullopt, false, false);
}

// arange's element count from a double, refused unless it fits in int64 (2**63 does not).
int64_t arange_size(double size_d) {
  EMBER_CHECK(size_d >= 0 && size_d < 0x1p63, Runtime, "invalid size, possible overflow?");
  return (int64_t)size_d;
}

// out[i] = f(i) over a contiguous buffer, in parallel for large sizes.
template <typename T, typename F>
void fill_indexed(T* out, int64_t n, F&& f) {
  parallel_for(n, kGrainSize, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = f(i);
  });
}

// Fills a fresh tensor (on any device) through its device's _philox_fill_ kernel, with
// blocks reserved from `gen` (the device's default generator when null).
void random_fill(const Tensor& t, Generator* gen, const char* op, const char* distribution, int64_t low = 0,
                 int64_t high = 0) {
  const Device dev = t.device();
  gen = generator_for(gen, dev, op);
  const int64_t n = t.numel();
  if (n == 0) return;
  const random::FillArgs args = random::fill_args(t.dtype(), distribution, low, high, op);
  const Generator::Draw draw = gen->reserve(random::philox_blocks(t.dtype(), args, n));
  kernel_for(dispatch::_philox_fill_, dev, "_philox_fill_")(t, distribution, (int64_t)draw.seed, (int64_t)draw.first,
                                                             low, high);
}

}  // namespace

Tensor empty(const IntList& size, std::optional<ScalarType> dtype, std::optional<Device> device, bool requires_grad) {
  (void)requires_grad;
  return empty_tensor(size, dtype.value_or(default_dtype()), resolve_device(device, "empty"));
}

Tensor zeros(const IntList& size, std::optional<ScalarType> dtype, std::optional<Device> device, bool requires_grad) {
  (void)requires_grad;
  Tensor t = empty_tensor(size, dtype.value_or(default_dtype()), resolve_device(device, "zeros"));
  fill_fresh(t, Scalar(int64_t(0)));
  return t;
}

Tensor ones(const IntList& size, std::optional<ScalarType> dtype, std::optional<Device> device, bool requires_grad) {
  (void)requires_grad;
  Tensor t = empty_tensor(size, dtype.value_or(default_dtype()), resolve_device(device, "ones"));
  fill_fresh(t, Scalar(int64_t(1)));
  return t;
}

Tensor full(const IntList& size, const Scalar& fill_value, std::optional<ScalarType> dtype,
            std::optional<Device> device, bool requires_grad) {
  (void)requires_grad;
  ScalarType dt = dtype ? *dtype
                        : fill_value.is_bool()       ? ScalarType::Bool
                          : fill_value.is_integral() ? ScalarType::Int64
                                                     : default_dtype();
  Tensor t = empty_tensor(size, dt, resolve_device(device, "full"));
  fill_fresh(t, fill_value);
  return t;
}

Tensor arange(const Scalar& start_in, const std::optional<Scalar>& end_in, const Scalar& step,
              std::optional<ScalarType> dtype, std::optional<Device> device, bool requires_grad) {
  (void)requires_grad;
  // arange(n) counts from 0.
  Scalar start = end_in ? start_in : Scalar(int64_t(0));
  Scalar end = end_in ? *end_in : start_in;
  const bool all_integral = !start.is_floating() && !end.is_floating() && !step.is_floating();
  const ScalarType dt = dtype.value_or(all_integral ? ScalarType::Int64 : default_dtype());
  Device dev = resolve_device(device, "arange");
  if (dt == ScalarType::Bool) fail_dtype_not_implemented("arange_cpu", dt);
  int64_t size = 0;
  if (is_integral(dt, false)) {
    // Integral results step in int64, with the bounds truncated.
    const int64_t xs = start.to_int(), xe = end.to_int(), xst = step.to_int();
    EMBER_CHECK(xst != 0, Runtime, "step must be nonzero");
    EMBER_CHECK((xst > 0 && xe >= xs) || (xst < 0 && xe <= xs), Runtime,
                "upper bound and larger bound inconsistent with step sign");
    if (dt == ScalarType::Int64) {
      // In 128 bits: end - start + step overflows int64 for bounds near its limits.
      const __int128 sgn = (xst > 0) - (xst < 0);
      const __int128 size_wide = ((__int128)xe - xs + xst - sgn) / xst;
      EMBER_CHECK(size_wide <= std::numeric_limits<int64_t>::max(), Runtime, "invalid size, possible overflow?");
      size = (int64_t)size_wide;
    } else {
      size = arange_size(std::ceil((end.to_double() - start.to_double()) / step.to_double()));
    }
    Tensor t = empty_tensor(DimVector{size}, dt, Device());
    visit_dtype(dt, [&]<typename T>() {
      if constexpr (std::is_integral_v<T>)
        fill_indexed(t.data<T>(), size, [&](int64_t i) {
          // Unsigned: step * i may pass int64's range on the way to an in-range value.
          return (T)(int64_t)((uint64_t)xs + (uint64_t)xst * (uint64_t)i);
        });
    });
    return on_device(t, dev);
  }
  const double xs = start.to_double(), xe = end.to_double(), xst = step.to_double();
  EMBER_CHECK(xst != 0, Runtime, "step must be nonzero");
  EMBER_CHECK(std::isfinite(xs) && std::isfinite(xe), Runtime, "unsupported range: ", xs, " -> ", xe);
  EMBER_CHECK((xst > 0 && xe >= xs) || (xst < 0 && xe <= xs), Runtime,
              "upper bound and larger bound inconsistent with step sign");
  size = arange_size(std::ceil((xe - xs) / xst));
  Tensor t = empty_tensor(DimVector{size}, dt, Device());
  visit_dtype(dt, [&]<typename T>() {
    if constexpr (!std::is_integral_v<T>)
      fill_indexed(t.data<T>(), size, [&](int64_t i) { return T(xs + xst * (double)i); });
  });
  return on_device(t, dev);
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, std::optional<ScalarType> dtype,
                std::optional<Device> device, bool requires_grad) {
  (void)requires_grad;
  EMBER_CHECK(steps >= 0, Runtime, "number of steps must be non-negative");
  const ScalarType dt = dtype.value_or(default_dtype());
  Device dev = resolve_device(device, "linspace");
  if (dt == ScalarType::Bool) fail_dtype_not_implemented("linspace_cpu", dt);
  Tensor t = empty_tensor(DimVector{steps}, dt, Device());
  visit_dtype(dt, [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      T* out = t.data<T>();
      if (steps == 1) {
        out[0] = start.to<T>();
        return;
      }
      // Values from both ends meet in the middle, as in PyTorch.
      const int64_t halfway = steps / 2;
      if constexpr (std::is_integral_v<T>) {
        const T s = start.to<T>(), e = end.to<T>();
        const double st = ((double)e - (double)s) / (double)(steps - 1);
        fill_indexed(out, steps, [&](int64_t i) {
          return i < halfway ? (T)(s + st * (double)i) : (T)(e - st * (double)(steps - i - 1));
        });
      } else {
        using C = opmath_t<T>;
        const C s = (C)start.to<T>(), e = (C)end.to<T>();
        const C st = (e - s) / (C)(steps - 1);
        fill_indexed(out, steps, [&](int64_t i) {
          return i < halfway ? T(s + st * (C)i) : T(e - st * (C)(steps - i - 1));
        });
      }
    }
  });
  return on_device(t, dev);
}

Tensor eye(int64_t n, std::optional<int64_t> m_opt, std::optional<ScalarType> dtype, std::optional<Device> device,
           bool requires_grad) {
  (void)requires_grad;
  const int64_t m = m_opt.value_or(n);
  EMBER_CHECK(n >= 0, Runtime, "n must be greater or equal to 0, got ", n);
  EMBER_CHECK(m >= 0, Runtime, "m must be greater or equal to 0, got ", m);
  const ScalarType dt = dtype.value_or(default_dtype());
  Device dev = resolve_device(device, "eye");
  compute_numel(DimVector{n, m});  // PyTorch sizes eye's result first: "numel: integer multiplication overflow"
  Tensor t = empty_tensor(DimVector{n, m}, dt, Device());
  fill_fresh(t, Scalar(int64_t(0)));
  visit_dtype(dt, [&]<typename T>() {
    T* out = t.data<T>();
    const T one = Scalar(int64_t(1)).to<T>();
    for (int64_t i = 0; i < std::min(n, m); ++i) out[i * m + i] = one;
  });
  return on_device(t, dev);
}

Tensor rand(const IntList& size, Generator* generator, std::optional<ScalarType> dtype, std::optional<Device> device,
            bool requires_grad) {
  (void)requires_grad;
  const ScalarType dt = dtype.value_or(default_dtype());
  if (!is_floating(dt)) fail_dtype_not_implemented("check_uniform_bounds", dt);
  Tensor t = empty_tensor(size, dt, resolve_device(device, "rand"));
  random_fill(t, generator, "rand", "uniform");
  return t;
}

Tensor randn(const IntList& size, Generator* generator, std::optional<ScalarType> dtype,
             std::optional<Device> device, bool requires_grad) {
  (void)requires_grad;
  const ScalarType dt = dtype.value_or(default_dtype());
  if (!is_floating(dt)) fail_dtype_not_implemented("normal_kernel_cpu", dt);
  Tensor t = empty_tensor(size, dt, resolve_device(device, "randn"));
  random_fill(t, generator, "randn", "normal");
  return t;
}

Tensor randint(int64_t low, int64_t high, const IntList& size, Generator* generator, std::optional<ScalarType> dtype,
               std::optional<Device> device, bool requires_grad) {
  (void)requires_grad;
  EMBER_CHECK(low < high, Runtime, "random_ expects 'from' to be less than 'to', but got from=", low,
              " >= to=", high);
  const ScalarType dt = dtype.value_or(ScalarType::Int64);
  visit_dtype(dt, [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      EMBER_CHECK(low >= 0 && high <= 2, Runtime, "random_ expects 'from' and 'to' - 1 to be in [0, 1] for Bool, "
                  "but got from=", low, " and to=", high);
    } else if constexpr (std::is_integral_v<T>) {
      EMBER_CHECK(low >= (int64_t)std::numeric_limits<T>::lowest(), Runtime, "random_ from is out of bounds for ",
                  dtype_title(dt));
      EMBER_CHECK(high - 1 <= (int64_t)std::numeric_limits<T>::max(), Runtime,
                  "random_ to - 1 is out of bounds for ", dtype_title(dt));
    }
  });
  Tensor t = empty_tensor(size, dt, resolve_device(device, "randint"));
  random_fill(t, generator, "randint", "integer", low, high);
  return t;
}

Tensor randint_high(int64_t high, const IntList& size, Generator* generator, std::optional<ScalarType> dtype,
                    std::optional<Device> device, bool requires_grad) {
  return native::randint(0, high, size, generator, dtype, device, requires_grad);
}

}  // namespace native
}  // namespace ember
