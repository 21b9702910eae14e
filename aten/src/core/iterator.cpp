#include "ember/iterator.h"

#include <algorithm>
#include <string>

#include "ember/dispatch.h"
#include "ember/overlap.h"
#include "ember/scalar_convert.h"

namespace ember {
namespace {

// PyTorch's result_type: dimensioned tensors outrank 0-d tensors, which
// outrank Python numbers; lower tiers only lift the category (bool < int < float).
struct ResultTypeState {
  ScalarType dim = ScalarType::Undefined, zero = ScalarType::Undefined, wrapped = ScalarType::Undefined;
  void update(const Tensor& t) {
    ScalarType cur = t.dtype();
    if (t.is_wrapped_number()) {
      if (is_floating(cur)) cur = default_dtype();
      wrapped = promote_types(wrapped, cur);
    } else if (t.dim() == 0) {
      zero = promote_types(zero, cur);
    } else {
      dim = promote_types(dim, cur);
    }
  }
  static ScalarType combine(ScalarType higher, ScalarType lower) {
    if (higher != ScalarType::Undefined && is_floating(higher)) return higher;
    if (higher == ScalarType::Bool || (lower != ScalarType::Undefined && is_floating(lower)))
      return promote_types(higher, lower);
    return higher != ScalarType::Undefined ? higher : lower;
  }
  ScalarType result() const { return combine(dim, combine(zero, wrapped)); }
};

bool is_cpu_scalar(const Tensor& t) { return t.device().is_cpu() && t.dim() == 0; }

// Strides of `t` broadcast to `shape` at dim d; 0 where it is broadcast or has size 1.
int64_t broadcast_stride(const Tensor& t, const DimVector& shape, int64_t d) {
  const int64_t src = d - ((int64_t)shape.size() - t.dim());
  return (src < 0 || t.sizes()[src] == 1) ? 0 : t.strides()[src];
}

}  // namespace

// A new output's layout, as PyTorch's TensorIterator picks it: dims ordered by the
// inputs' strides (the first input whose strides differ decides; an equal stride puts
// the smaller dim innermost), so m.t().exp() has m.t()'s memory order. Empty when
// that order is row-major or the output is empty (then it is contiguous).
DimVector layout_strides(const DimVector& shape, std::initializer_list<const Tensor*> inputs) {
  // Contiguous inputs never reorder the dims: the common case skips the sort.
  if (std::all_of(inputs.begin(), inputs.end(), [](const Tensor* t) { return t->is_contiguous(); })) return {};
  const int nd = (int)shape.size();
  if (compute_numel(shape) == 0) return {};
  DimVector perm(nd);  // perm[0] is the innermost dim
  for (int d = 0; d < nd; ++d) perm[d] = nd - 1 - d;
  auto should_swap = [&](int64_t d0, int64_t d1) {
    for (const Tensor* t : inputs) {
      const int64_t s0 = broadcast_stride(*t, shape, d0), s1 = broadcast_stride(*t, shape, d1);
      if (s0 == 0 || s1 == 0) continue;
      if (s0 != s1) return s0 < s1 ? -1 : 1;
      if (shape[d0] > shape[d1]) return 1;
    }
    return 0;
  };
  for (int i = 1; i < nd; ++i) {  // PyTorch's insertion sort: ties look further out
    int d1 = i;
    for (int d0 = i - 1; d0 >= 0; --d0) {
      const int c = should_swap(perm[d0], perm[d1]);
      if (c > 0) { std::swap(perm[d0], perm[d1]); d1 = d0; }
      else if (c < 0) break;
    }
  }
  bool row_major = true;
  for (int d = 0; d < nd; ++d) row_major = row_major && perm[d] == nd - 1 - d;
  if (row_major) return {};
  DimVector strides(nd);
  int64_t next = 1;
  for (int d = 0; d < nd; ++d) { strides[perm[d]] = next; next *= shape[perm[d]]; }
  return strides;
}

Tensor empty_in_memory_order(const DimVector& shape, std::initializer_list<const Tensor*> inputs, ScalarType dtype,
                             Device device) {
  const DimVector strides = layout_strides(shape, inputs);
  return strides.empty() ? empty_tensor(shape, dtype, device) : empty_strided_tensor(shape, strides, dtype, device);
}

ScalarType result_type(std::initializer_list<const Tensor*> ts) {
  ResultTypeState s;
  for (const Tensor* t : ts) if (t->defined()) s.update(*t);
  return s.result();
}

TensorIterator TensorIterator::pointwise(const PointwiseConfig& cfg, const Tensor& out, bool inplace,
                                         std::initializer_list<const Tensor*> inputs,
                                         std::initializer_list<const Scalar*> scalars) {
  TensorIterator it;
  const int nin = (int)inputs.size();
  it.ntensors_ = nin + 1;

  // Device: all tensors on one device, except CPU 0-d tensors which act as scalars.
  Device device;
  bool have_device = false;
  for (const Tensor* t : inputs) {
    if (is_cpu_scalar(*t)) continue;
    if (!have_device) { device = t->device(); have_device = true; }
    else EMBER_CHECK(t->device() == device, Runtime, cfg.op, ": Expected all tensors to be on the same device, but found at least two devices, ",
                     device.str(), " and ", t->device().str(), "!");
  }
  if (out.defined()) {
    if (!have_device) device = out.device();
    EMBER_CHECK(out.device() == device, Runtime, cfg.op, ": Expected all tensors to be on the same device, but found at least two devices, ",
                device.str(), " and ", out.device().str(), "!");
  }
  it.device_ = device;

  if (cfg.bool_input >= 0) {
    const Tensor& c = *inputs.begin()[cfg.bool_input];
    EMBER_CHECK(c.dtype() == ScalarType::Bool, Runtime, cfg.op,
                " expected condition to be a boolean tensor, but got a tensor with dtype ", dtype_title(c.dtype()));
  }
  // dtypes
  ResultTypeState rt;
  int i = 0;
  for (const Tensor* t : inputs) {
    if (i++ != cfg.bool_input) rt.update(*t);
  }
  for (const Scalar* s : scalars) {
    if (!s) continue;
    ScalarType st = s->dtype();
    rt.wrapped = promote_types(rt.wrapped, is_floating(st) ? default_dtype() : st);
  }
  ScalarType common = rt.result();
  ScalarType compute = common;
  if (cfg.promote == Promote::Float && is_integral(common, true)) compute = default_dtype();
  ScalarType out_dtype = cfg.promote == Promote::Bool ? ScalarType::Bool : compute;
  if (!std::count(cfg.dtypes, cfg.dtypes + cfg.num_dtypes, compute))
    fail_dtype_not_implemented(cfg.op, compute);

  // shape
  DimVector shape;
  for (const Tensor* t : inputs) shape = broadcast_shapes(shape, t->sizes(), cfg.op);

  // output
  if (out.defined()) {
    if (inplace) {
      EMBER_CHECK(out.sizes() == shape, Runtime, cfg.op, "_: output with shape ", out.sizes(),
                  " doesn't match the broadcast shape ", shape);
    } else if (out.sizes() != shape) {
      resize_(out, shape);
    }
    if (!write_overlap_ok(out, inputs))  // "mul_" is built only for the message
      check_write_overlap(out, inputs, (std::string(cfg.op) + (inplace ? "_" : "")).c_str());
    EMBER_CHECK(can_cast(out_dtype, out.dtype()), Runtime, cfg.op, ": result type ", dtype_title(out_dtype),
                " can't be cast to the desired output type ", dtype_title(out.dtype()));
    it.result_ = out;
    if (out.dtype() != out_dtype) {
      it.writeback_ = out;
      it.operands_[0] = empty_tensor(shape, out_dtype, device);
    } else {
      it.operands_[0] = out;
    }
  } else {
    it.operands_[0] = empty_in_memory_order(shape, inputs, out_dtype, device);
    it.result_ = it.operands_[0];
  }
  i = 0;
  for (const Tensor* t : inputs) {
    // where(c, int8_t, 1000) raises; float16/bfloat16 take an out-of-range number as inf, as in PyTorch.
    if (cfg.fit_numbers && t->is_wrapped_number() && compute != ScalarType::Float16 && compute != ScalarType::BFloat16)
      check_scalar_fits(t->item(), compute);
    ScalarType want = (i == cfg.bool_input) ? ScalarType::Bool : compute;
    it.operands_[1 + i] = cast_to(*t, want);
    ++i;
  }
  it.compute_dtype_ = compute;
  it.compute_layout(shape);
  if (out.defined()) out.bump_version();
  return it;
}

TensorIterator TensorIterator::unary_copy(const Tensor& dst, const Tensor& src, const char* op) {
  TensorIterator it;
  it.ntensors_ = 2;
  DimVector shape = broadcast_shapes(dst.sizes(), src.sizes(), op);
  EMBER_CHECK(shape == dst.sizes(), Runtime, op, ": the source of shape ", src.sizes(),
              " cannot be broadcast to the destination shape ", dst.sizes());
  it.operands_[0] = dst;
  it.operands_[1] = src;
  it.result_ = dst;
  it.device_ = dst.device();
  it.compute_dtype_ = dst.dtype();
  it.compute_layout(shape);
  return it;
}

TensorIterator TensorIterator::nullary(const Tensor& dst) {
  TensorIterator it;
  it.ntensors_ = 1;
  it.operands_[0] = dst;
  it.result_ = dst;
  it.device_ = dst.device();
  it.compute_dtype_ = dst.dtype();
  it.compute_layout(dst.sizes());
  return it;
}

TensorIterator TensorIterator::reduction(const Tensor& out, const Tensor& in) {
  TensorIterator it;
  it.ntensors_ = 2;
  it.operands_[0] = out;
  it.operands_[1] = in;
  it.result_ = out;
  it.device_ = in.device();
  it.compute_dtype_ = in.dtype();
  it.compute_layout(in.sizes(), 1);
  return it;
}

void TensorIterator::restrict_dim(int d, int64_t begin, int64_t len) {
  for (int t = 0; t < ntensors_; ++t) data_[t] += begin * strides_[t][d];
  shape_[d] = len;
  numel_ = compute_numel(shape_);
}

void TensorIterator::compute_layout(const DimVector& shape, int order_by) {
  const int nd = (int)shape.size();
  numel_ = compute_numel(shape);
  for (int t = 0; t < ntensors_; ++t) data_[t] = static_cast<char*>(operands_[t].data_ptr());
  // Byte strides per operand over `shape`, innermost dim first.
  DimVector perm(nd);
  for (int d = 0; d < nd; ++d) perm[d] = nd - 1 - d;
  // Follow the memory order of the output (it may be a transposed in-place
  // target), or of the input for reductions.
  const Tensor& o = operands_[order_by];
  const int o_off = nd - (int)o.dim();
  auto out_stride = [&](int64_t d) { return d - o_off < 0 ? 0 : o.strides()[d - o_off]; };
  // Insertion sort: stable, allocation-free, and ranks are tiny.
  for (int i = 1; i < nd; ++i) {
    for (int j = i; j > 0; --j) {
      int64_t a = perm[j - 1], b = perm[j];
      if (shape[a] == 1 || shape[b] == 1 || out_stride(b) >= out_stride(a)) break;
      std::swap(perm[j - 1], perm[j]);
    }
  }
  shape_.resize(nd);
  for (int d = 0; d < nd; ++d) shape_[d] = shape[perm[d]];
  for (int t = 0; t < ntensors_; ++t) {
    const Tensor& op = operands_[t];
    const int64_t isz = (int64_t)op.itemsize();
    const int off = nd - (int)op.dim();
    strides_[t].resize(nd);
    for (int d = 0; d < nd; ++d) {
      int64_t src = perm[d] - off;
      strides_[t][d] = (src < 0 || op.sizes()[src] == 1) ? 0 : op.strides()[src] * isz;
    }
  }
  // Coalesce dims that are contiguous with the next one in every operand; drop size-1 dims.
  int w = 0;
  for (int d = 0; d < nd; ++d) {
    if (shape_[d] == 1 && nd > 1) continue;
    if (w > 0) {
      bool merge = true;
      for (int t = 0; t < ntensors_; ++t)
        if (strides_[t][w - 1] * shape_[w - 1] != strides_[t][d]) { merge = false; break; }
      if (merge) { shape_[w - 1] *= shape_[d]; continue; }
    }
    shape_[w] = shape_[d];
    for (int t = 0; t < ntensors_; ++t) strides_[t][w] = strides_[t][d];
    ++w;
  }
  if (nd > 0 && w == 0) {  // all dims were size 1
    w = 1;
    shape_[0] = 1;
    for (int t = 0; t < ntensors_; ++t) strides_[t][0] = 0;
  }
  shape_.resize(w);
  for (int t = 0; t < ntensors_; ++t) strides_[t].resize(w);
}

void TensorIterator::finish() {
  if (writeback_.defined()) {
    copy_elements(writeback_, operands_[0]);
    writeback_.reset();
  }
}

}  // namespace ember
