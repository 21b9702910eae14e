// The random ops over _philox_fill_: in-place distributions (a uniform or normal
// fill, then a transform in ember ops), bernoulli_, normal's factory overload,
// multinomial's draws, randperm and the dropout family.
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "ember/allocator.h"
#include "ember/autograd.h"
#include "ember/errors.h"
#include "ember/generator.h"
#include "ember/op_support.h"
#include "ember/ops/_multinomial_from_uniforms.h"
#include "ember/ops/_philox_fill_.h"
#include "ember/ops/add.h"
#include "ember/ops/alpha_dropout.h"
#include "ember/ops/alpha_dropout_.h"
#include "ember/ops/bernoulli.h"
#include "ember/ops/bernoulli_.h"
#include "ember/ops/cauchy_.h"
#include "ember/ops/ceil.h"
#include "ember/ops/clamp.h"
#include "ember/ops/copy_.h"
#include "ember/ops/cos.h"
#include "ember/ops/div.h"
#include "ember/ops/dropout.h"
#include "ember/ops/dropout_.h"
#include "ember/ops/exp.h"
#include "ember/ops/expand.h"
#include "ember/ops/exponential_.h"
#include "ember/ops/feature_alpha_dropout.h"
#include "ember/ops/feature_alpha_dropout_.h"
#include "ember/ops/feature_dropout.h"
#include "ember/ops/feature_dropout_.h"
#include "ember/ops/ge.h"
#include "ember/ops/geometric_.h"
#include "ember/ops/log1p.h"
#include "ember/ops/log_normal_.h"
#include "ember/ops/lt.h"
#include "ember/ops/mul.h"
#include "ember/ops/multinomial.h"
#include "ember/ops/neg.h"
#include "ember/ops/normal.h"
#include "ember/ops/normal_.h"
#include "ember/ops/randn.h"
#include "ember/ops/random_.h"
#include "ember/ops/randperm.h"
#include "ember/ops/sin.h"
#include "ember/ops/to.h"
#include "ember/ops/uniform_.h"
#include "ember/parallel.h"
#include "ember/random_fill.h"
#include "ember/random_transforms.h"
#include "ember/scalar_convert.h"
#include "ember/tensor.h"

namespace ember {

void philox_fill(const Tensor& t, Generator* gen, const char* op, const char* distribution, int64_t low,
                 int64_t high) {
  autograd::check_inplace(t, op);  // before _philox_fill_, whose name the error would show
  gen = generator_for(gen, t.device(), op);
  const random::FillArgs args = random::fill_args(t.dtype(), distribution, low, high, op);
  const Generator::Draw draw = gen->reserve(random::philox_blocks(t.dtype(), args, t.numel()));
  ember::_philox_fill_(t, distribution, (int64_t)draw.seed, (int64_t)draw.first, low, high);
}

namespace native {

namespace {

Tensor number(double v) { return wrap_number(Scalar(v)); }

void check_floating(const Tensor& self, const char* op) {
  if (!is_floating(self.dtype())) fail_dtype_not_implemented(op, self.dtype());
}

// PyTorch's version counter moves once per in-place op; the fills below write self in several
// steps (draw, scale, shift), so the count is set once when they are done. Safe here only: the steps
// after the draw run without grad, so nothing saved self at an in-between version (not a codegen rule).
Tensor counted_as_one_write(const Tensor& self, uint32_t version_on_entry) {
  self.storage()->version.store(version_on_entry + 1, std::memory_order_relaxed);
  return self;
}

// Fills `self` with transform(draws): the draws go into self when it is float32/float64, else into a
// buffer of `buffer_dtype` (half precision would round the intermediate values); the transform runs
// without autograd, so only the fill of self or the final copy into it is recorded (a zero gradient).
template <typename F>
Tensor transformed_fill(const Tensor& self, Generator* gen, const char* op, const char* distribution,
                        ScalarType buffer_dtype, F&& transform) {
  const ScalarType dt = self.dtype();
  const bool in_self = dt == ScalarType::Float32 || dt == ScalarType::Float64;
  const uint32_t version = self.version();
  Tensor work = in_self ? self : empty_tensor(self.sizes(), buffer_dtype, self.device());
  philox_fill(work, gen, op, distribution);
  Tensor result;
  {
    NoGradGuard no_grad;
    result = transform(work);
  }
  if (!result.is_same(self)) ember::copy_(self, result);
  return counted_as_one_write(self, version);
}

// Uniform draws in [0, 1) shaped like `self`, in float64 for float64 self, else float32.
Tensor uniform_like(const Tensor& self, Generator* gen, const char* op) {
  const ScalarType dt = self.dtype() == ScalarType::Float64 ? ScalarType::Float64 : ScalarType::Float32;
  Tensor u = empty_tensor(self.sizes(), dt, self.device());
  philox_fill(u, gen, op, "uniform");
  return u;
}

// PyTorch names integer types by their C type in random_'s bound errors.
const char* c_type_name(ScalarType dt) {
  switch (dt) {
    case ScalarType::UInt8: return "unsigned char";
    case ScalarType::Int8: return "signed char";
    case ScalarType::Int16: return "short";
    case ScalarType::Int32: return "int";
    case ScalarType::Int64: return "long";
    default: return dtype_title(dt);
  }
}

// PyTorch's errors for integer self name the dtype by its title (exponential_) or by the C++ type's
// name as gcc spells it (cauchy_).
const char* gcc_type_name(ScalarType dt) {
  switch (dt) {
    case ScalarType::Int16: return "short int";
    case ScalarType::Int64: return "long int";
    case ScalarType::Bool: return "bool";
    default: return c_type_name(dt);
  }
}

void check_continuous(const Tensor& self, const char* distribution, const char* dtype_shown) {
  EMBER_CHECK(is_floating(self.dtype()), Runtime, distribution,
              " distribution is a continuous probability distribution. dtype must be a floating point but you "
              "specified ", dtype_shown);
}

// One past the largest value random_ draws by default: 2**digits + 1 for floating dtypes (every
// integer up to 2**digits is exact), max + 1 for integers (int64 stops one short: max + 1 overflows).
int64_t random_end(ScalarType dt) {
  switch (dt) {
    case ScalarType::Bool: return 2;
    case ScalarType::UInt8: return 256;
    case ScalarType::Int8: return 128;
    case ScalarType::Int16: return 32768;
    case ScalarType::Int32: return int64_t(1) << 31;
    case ScalarType::Int64: return std::numeric_limits<int64_t>::max();
    case ScalarType::Float16: return (int64_t(1) << 11) + 1;
    case ScalarType::BFloat16: return (int64_t(1) << 8) + 1;
    case ScalarType::Float32: return (int64_t(1) << 24) + 1;
    default: return (int64_t(1) << 53) + 1;
  }
}

// The smallest value an integer dtype holds (bool and floating dtypes: no lower bound checked here).
std::optional<int64_t> integer_min(ScalarType dt) {
  switch (dt) {
    case ScalarType::UInt8: return 0;
    case ScalarType::Int8: return -128;
    case ScalarType::Int16: return -32768;
    case ScalarType::Int32: return -(int64_t(1) << 31);
    default: return std::nullopt;
  }
}

Tensor random_range(const Tensor& self, int64_t from, int64_t to, Generator* gen) {
  EMBER_CHECK(from < to, Runtime, "random_ expects 'from' to be less than 'to', but got from=", from, " >= to=", to);
  const ScalarType dt = self.dtype();
  if (is_integral(dt, false)) {
    const int64_t hi = random_end(dt);
    const std::optional<int64_t> lo = integer_min(dt);
    EMBER_CHECK(from >= lo.value_or(std::numeric_limits<int64_t>::min()) && from < hi, Runtime,
                "from is out of bounds for ", c_type_name(dt));
    EMBER_CHECK(to - 1 >= lo.value_or(std::numeric_limits<int64_t>::min()) && to - 1 < hi, Runtime,
                "to - 1 is out of bounds for ", c_type_name(dt));
  }
  philox_fill(self, gen, "random_", "integer", from, to);
  return self;
}

// multinomial's argument checks, as PyTorch words them.
void check_multinomial(const Tensor& self, int64_t num_samples, bool replacement) {
  EMBER_CHECK(self.dim() == 1 || self.dim() == 2, Runtime, "prob_dist must be 1 or 2 dim");
  EMBER_CHECK(is_floating(self.dtype()), Runtime, "multinomial only supports floating-point dtypes for input, got: ",
              dtype_title(self.dtype()));
  EMBER_CHECK(num_samples > 0, Runtime, "cannot sample n_sample <= 0 samples");
  const int64_t categories = self.size(-1);
  EMBER_CHECK(replacement || num_samples <= categories, Runtime,
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  EMBER_CHECK(categories <= (int64_t(1) << 24), Runtime, "number of categories cannot exceed 2^24");
}

// randperm's result must count up to n - 1 in `dt`.
void check_randperm_dtype(int64_t n, ScalarType dt) {
  if (dt == ScalarType::Bool) fail_dtype_not_implemented("randperm", dt);
  if (dt == ScalarType::Float16) EMBER_CHECK(n <= 2049, Runtime, "n cannot be greater than 2049 for Half type.");
  if (n > 0 && is_integral(dt, false)) check_scalar_fits(Scalar(n - 1), dt);
}

void check_dropout(const Tensor& input, double p, bool feature) {
  EMBER_CHECK(p >= 0 && p <= 1, Runtime, "dropout probability has to be between 0 and 1, but got ", p);
  if (feature) EMBER_CHECK(input.dim() >= 2, Runtime, "Feature dropout requires at least 2 dimensions in the input");
}

// The 0/1 keep-mask of a dropout in input's dtype: one draw per element, or per (batch, channel) for feature dropout.
Tensor keep_mask(const Tensor& input, double p, bool feature) {
  DimVector shape = input.sizes();
  if (feature) for (size_t d = 2; d < shape.size(); ++d) shape[d] = 1;
  const ScalarType dt = input.dtype() == ScalarType::Float64 ? ScalarType::Float64 : ScalarType::Float32;
  Tensor u = empty_tensor(shape, dt, input.device());
  philox_fill(u, nullptr, "dropout", "uniform");
  return ember::to_dtype(ember::ge(u, number(p)), input.dtype());
}

// PyTorch's _dropout_impl: input * mask / (1 - p), or for alpha dropout input * a * mask + b
// with a, b keeping SELU's mean and variance; `input` itself when not training. `inplace`
// writes the result into `input`.
Tensor dropout_impl(const Tensor& input, double p, bool train, bool feature, bool alpha, bool inplace) {
  check_dropout(input, p, feature);
  if (!train || p == 0 || input.numel() == 0) return input;
  const Tensor zero = wrap_number(Scalar(int64_t(0)));
  if (p == 1) return inplace ? ember::mul_(input, zero) : ember::mul(input, zero);
  Tensor noise = keep_mask(input, p, feature);
  Tensor shift;
  if (alpha) {
    constexpr double kAlpha = 1.7580993408473766;  // -SELU's negative saturation, scale * alpha
    const double a = 1 / std::sqrt((kAlpha * kAlpha * p + 1) * (1 - p));
    shift = ember::add(ember::mul(noise, number(kAlpha * a)), number(kAlpha * a * p - kAlpha * a));
    ember::mul_(noise, number(a));
  } else {
    ember::mul_(noise, number(1 / (1 - p)));
  }
  Tensor out = inplace ? ember::mul_(input, noise) : ember::mul(input, noise);
  return alpha ? ember::add_(out, shift) : out;
}

}  // namespace

Tensor uniform_(const Tensor& self, double from, double to, Generator* generator) {
  EMBER_CHECK(from <= to, Runtime, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  const uint32_t version = self.version();
  philox_fill(self, generator, "uniform_", "uniform");
  NoGradGuard no_grad;  // the fill made self's gradient zero; the transform of the draws records nothing
  if (from != 0 || to != 1) {
    ember::mul_(self, number(to - from));
    ember::add_(self, number(from));
  }
  return counted_as_one_write(self, version);
}

Tensor normal_(const Tensor& self, double mean, double std, Generator* generator) {
  EMBER_CHECK(std >= 0, Runtime, "normal expects std >= 0.0, but found std ", std);
  const uint32_t version = self.version();
  philox_fill(self, generator, "normal_", "normal");
  NoGradGuard no_grad;
  if (std != 1) ember::mul_(self, number(std));
  if (mean != 0) ember::add_(self, number(mean));
  return counted_as_one_write(self, version);
}

Tensor exponential_(const Tensor& self, double lambd, Generator* generator) {
  check_continuous(self, "Exponential", dtype_title(self.dtype()));
  EMBER_CHECK(lambd > 0, Runtime, "exponential_ expects lambda > 0.0, but found lambda=", lambd);
  return transformed_fill(self, generator, "exponential_", "uniform", ScalarType::Float32, [&](const Tensor& u) {
    ember::log1p_(ember::neg_(u));  // log(1 - u), u in [0, 1)
    return ember::mul_(u, number(-1 / lambd));
  });
}

Tensor geometric_(const Tensor& self, double p, Generator* generator) {
  EMBER_CHECK(p > 0 && p < 1, Runtime, "geometric_ expects p to be in (0, 1), but got p=", p);
  // P(X > k) = (1 - p)^k: X = ceil(log(V) / log(1 - p)) for V = 1 - u uniform in (0, 1]; V = 1 gives 0, raised to 1.
  return transformed_fill(self, generator, "geometric_", "uniform", ScalarType::Float64, [&](const Tensor& u) {
    ember::log1p_(ember::neg_(u));
    ember::mul_(u, number(1 / std::log1p(-p)));
    return ember::clamp_(ember::ceil_(u), Scalar(1.0), std::nullopt);
  });
}

Tensor log_normal_(const Tensor& self, double mean, double std, Generator* generator) {
  check_floating(self, "log_normal_");
  EMBER_CHECK(std > 0, Runtime, "log_normal_ expects std > 0.0, but found std=", std);
  return transformed_fill(self, generator, "log_normal_", "normal", ScalarType::Float32, [&](const Tensor& z) {
    return ember::exp_(ember::add_(ember::mul_(z, number(std)), number(mean)));
  });
}

Tensor cauchy_(const Tensor& self, double median, double sigma, Generator* generator) {
  check_continuous(self, "Cauchy", gcc_type_name(self.dtype()));
  EMBER_CHECK(sigma > 0, Runtime, "cauchy_ expects sigma > 0.0, but found sigma=", sigma);
  return transformed_fill(self, generator, "cauchy_", "uniform", ScalarType::Float32, [&](const Tensor& u) {
    ember::mul_(ember::add_(u, number(-0.5)), number(M_PI));  // an angle uniform in [-pi/2, pi/2)
    Tensor tangent = ember::div(ember::sin(u), ember::cos(u));
    return ember::add_(ember::mul_(tangent, number(sigma)), number(median));
  });
}

Tensor random__from(const Tensor& self, int64_t from, std::optional<int64_t> to, Generator* generator) {
  return random_range(self, from, to ? *to : random_end(self.dtype()), generator);
}

Tensor random__to(const Tensor& self, int64_t to, Generator* generator) {
  return random_range(self, 0, to, generator);
}

Tensor random_(const Tensor& self, Generator* generator) {
  return random_range(self, 0, random_end(self.dtype()), generator);
}

Tensor bernoulli__float(const Tensor& self, double p, Generator* generator) {
  EMBER_CHECK(p >= 0 && p <= 1, Runtime, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  return ember::copy_(self, ember::lt(uniform_like(self, generator, "bernoulli_"), number(p)));
}

Tensor bernoulli__Tensor(const Tensor& self, const Tensor& p, Generator* generator) {
  if (!is_floating(p.dtype())) fail_dtype_not_implemented("bernoulli_", p.dtype());
  const Tensor probs = ember::expand(p, self.sizes());
  return ember::copy_(self, ember::lt(uniform_like(self, generator, "bernoulli_"), probs));
}

Tensor bernoulli_p(const Tensor& self, double p, Generator* generator) {
  Tensor out = empty_tensor(self.sizes(), self.dtype(), self.device());
  return ember::bernoulli__float(out, p, generator);
}

Tensor normal_float_float(double mean, double std, const IntList& size, Generator* generator,
                          std::optional<ScalarType> dtype, std::optional<Device> device, bool requires_grad) {
  (void)requires_grad;
  EMBER_CHECK(std >= 0, Runtime, "normal expects std >= 0.0, but found std ", std);
  Tensor t = ember::randn(size, generator, dtype, device);
  if (std != 1) ember::mul_(t, number(std));
  if (mean != 0) ember::add_(t, number(mean));
  return t;
}

Tensor multinomial(const Tensor& self, int64_t num_samples, bool replacement, Generator* generator) {
  check_multinomial(self, num_samples, replacement);
  const int64_t rows = self.dim() == 2 ? self.size(0) : 1;
  const int64_t draws = replacement ? num_samples : self.size(-1);
  Tensor u = empty_tensor(DimVector{rows, draws}, ScalarType::Float64, self.device());
  philox_fill(u, generator, "multinomial", "uniform");
  return ember::_multinomial_from_uniforms(self, u, num_samples, replacement);
}

Tensor randperm(int64_t n, Generator* generator, std::optional<ScalarType> dtype, std::optional<Device> device,
                bool requires_grad) {
  (void)requires_grad;
  EMBER_CHECK(n >= 0, Runtime, "Trying to create tensor with negative dimension ", n, ": [", n, "]");
  const ScalarType dt = dtype.value_or(ScalarType::Int64);
  check_randperm_dtype(n, dt);
  const Device dev = device.value_or(Device());
  check_device_available(dev, "randperm");
  Generator* gen = generator_for(generator, dev, "randperm");
  // Fisher-Yates on the CPU with 64 random bits a swap (made in parallel first), then moved to `device`.
  Tensor perm = empty_tensor(DimVector{n}, ScalarType::Int64, Device());
  int64_t* out = perm.data<int64_t>();
  if (n > 1) {
    const Generator::Draw draw = gen->reserve((uint64_t)(n + 1) / 2);
    std::vector<uint64_t> bits(n);
    parallel_for((n + 1) / 2, kGrainSize, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        Philox ph(draw.seed, draw.first + (uint64_t)b);
        bits[2 * b] = ((uint64_t)ph.out[0] << 32) | ph.out[1];
        if (2 * b + 1 < n) bits[2 * b + 1] = ((uint64_t)ph.out[2] << 32) | ph.out[3];
      }
    });
    for (int64_t i = 0; i < n; ++i) out[i] = i;
    for (int64_t i = n - 1; i > 0; --i) std::swap(out[i], out[bits[i] % (uint64_t)(i + 1)]);
  } else if (n == 1) {
    out[0] = 0;
  }
  Tensor result = dt == ScalarType::Int64 ? perm : ember::to_dtype(perm, dt);
  return dev.is_cpu() ? result : ember::to_device(result, dev);
}

Tensor dropout(const Tensor& input, double p, bool train) {
  return dropout_impl(input, p, train, false, false, false);
}
Tensor dropout_(const Tensor& self, double p, bool train) { return dropout_impl(self, p, train, false, false, true); }

Tensor feature_dropout(const Tensor& input, double p, bool train) {
  return dropout_impl(input, p, train, true, false, false);
}
Tensor feature_dropout_(const Tensor& self, double p, bool train) {
  return dropout_impl(self, p, train, true, false, true);
}

Tensor alpha_dropout(const Tensor& input, double p, bool train) {
  return dropout_impl(input, p, train, false, true, false);
}
Tensor alpha_dropout_(const Tensor& self, double p, bool train) {
  return dropout_impl(self, p, train, false, true, true);
}

Tensor feature_alpha_dropout(const Tensor& input, double p, bool train) {
  return dropout_impl(input, p, train, true, true, false);
}
Tensor feature_alpha_dropout_(const Tensor& self, double p, bool train) {
  return dropout_impl(self, p, train, true, true, true);
}

}  // namespace native
}  // namespace ember
