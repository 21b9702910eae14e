#include "ember/tensor.h"

#include <limits>

#include "ember/autograd.h"
#include "ember/cuda/api.h"
#include "ember/dispatch.h"

namespace ember {

Ref<StorageImpl> new_storage(size_t nbytes, Device device) {
  Allocator* a = allocator_for(device.type);
  EMBER_CHECK(a, Runtime, "no allocator for device ", device.str(),
              " (ember was built without CUDA or no GPU is present)");
  // A CUDA tensor always names its device: "cuda" means the current one.
  if (device.is_cuda() && device.index < 0) device.index = (int8_t)cuda::current_device();
  return Ref<StorageImpl>::make(a->allocate(nbytes, device.index), nbytes, device);
}

TensorImpl::TensorImpl(Ref<StorageImpl> s, DimVector sz, DimVector st, int64_t off, ScalarType dt)
    : storage(std::move(s)), sizes(std::move(sz)), strides(std::move(st)), offset(off), dtype(dt) {
  refresh_geometry();
}

TensorImpl::~TensorImpl() = default;

void TensorImpl::refresh_geometry() {
  numel = compute_numel(sizes);
  int64_t expected = 1;
  contiguous = true;
  for (int64_t d = (int64_t)sizes.size() - 1; d >= 0 && contiguous; --d) {
    if (sizes[d] == 1) continue;
    contiguous = strides[d] == expected || numel == 0;
    expected *= sizes[d];
  }
}

AutogradMeta& TensorImpl::autograd_meta() {
  if (!autograd) autograd = std::make_unique<AutogradMeta>();
  return *autograd;
}

int64_t Tensor::size(int64_t d) const { return sizes()[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim(), "stride")]; }

Scalar Tensor::item() const {
  EMBER_CHECK(numel() == 1, Runtime, "a Tensor with ", numel(),
              " elements cannot be converted to Scalar");
  // Device memory is read through a copy to the host, which waits for the device.
  if (!device().is_cpu()) return copy_to(*this, Device(), dtype()).item();
  return visit_dtype(dtype(), [&]<typename T>() -> Scalar {
    T v = *data<T>();
    if constexpr (std::is_same_v<T, bool>) return Scalar(v);
    else if constexpr (std::is_integral_v<T>) return Scalar((int64_t)v);
    else return Scalar((double)v);
  });
}

bool Tensor::requires_grad() const {
  auto* m = impl_->autograd.get();
  if (!m) return false;
  if (m->requires_grad || m->grad_fn) return true;
  // A view needs grad when its base does (the root base is never a view itself).
  const AutogradMeta* b = m->view_base ? m->view_base->autograd.get() : nullptr;
  return b && (b->requires_grad || b->grad_fn);
}

void Tensor::set_requires_grad(bool r) const {
  if (r) {
    EMBER_CHECK(is_floating(dtype()), Runtime,
                "only Tensors of floating point dtype can require gradients (got ", dtype_name(dtype()), ")");
  }
  if (!r && !impl_->autograd) return;
  impl_->autograd_meta().requires_grad = r;
}

Tensor Tensor::grad() const {
  if (!impl_->autograd) return Tensor();
  if (impl_->autograd->retained_grad) return *impl_->autograd->retained_grad;
  return impl_->autograd->grad;
}
void Tensor::set_grad(const Tensor& g) const {
  AutogradMeta& meta = impl_->autograd_meta();
  // After retain_grad() .grad is the retained slot, which backward accumulates into.
  if (meta.retained_grad) *meta.retained_grad = g;
  else meta.grad = g;
}
std::shared_ptr<Node> Tensor::grad_fn() const {
  const AutogradMeta* m = impl_->autograd.get();
  if (!m) return nullptr;
  if (m->view_base) [[unlikely]] return autograd::view_grad_fn(*this);
  return m->grad_fn;
}
bool Tensor::is_leaf() const {
  const AutogradMeta* m = impl_->autograd.get();
  if (!m) return true;
  if (m->view_base) [[unlikely]] return !autograd::view_grad_fn(*this);
  return !m->grad_fn;
}
uint32_t Tensor::output_nr() const { return impl_->autograd ? impl_->autograd->output_nr : 0; }

int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r;
  EMBER_CHECK(!mul_overflows(a, b, &r), Runtime, what, " overflowed");
  return r;
}

int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r;
  EMBER_CHECK(!add_overflows(a, b, &r), Runtime, what, " overflowed");
  return r;
}

DimVector contiguous_strides(const DimVector& sizes) {
  DimVector st(sizes.size());
  int64_t s = 1;
  for (int64_t d = (int64_t)sizes.size() - 1; d >= 0; --d) {
    st[d] = s;
    if (d > 0) s = checked_mul(s, std::max<int64_t>(sizes[d], 1), "Stride calculation");
  }
  return st;
}

namespace {

// The product of `sizes` into *out; true when a partial product passed int64. Sticky, as
// in PyTorch: such a shape is refused even when a later size is 0.
bool product_overflows(const DimVector& sizes, int64_t* out) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : sizes) overflow |= mul_overflows(n, s, &n);
  *out = n;
  return overflow;
}

void check_nonnegative(const DimVector& sizes) {
  for (int64_t s : sizes)
    EMBER_CHECK(s >= 0, Runtime, "Trying to create tensor with negative dimension ", s, ": ", sizes);
}

}  // namespace

int64_t compute_numel(const DimVector& sizes) {
  int64_t n;
  EMBER_CHECK(!product_overflows(sizes, &n), Runtime, "numel: integer multiplication overflow");
  return n;
}

size_t storage_nbytes(const DimVector& sizes, size_t itemsize) {
  int64_t n;
  bool overflow = product_overflows(sizes, &n);
  overflow |= mul_overflows(n, (int64_t)itemsize, &n);
  EMBER_CHECK(!overflow, Runtime, "Storage size calculation overflowed with sizes=", sizes);
  return (size_t)n;
}

size_t storage_nbytes_strided(const DimVector& sizes, const DimVector& strides, size_t itemsize) {
  // Bytes up to the furthest element: itemsize * (1 + sum((size - 1) * stride)).
  int64_t extent = 1;
  bool overflow = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return 0;
    int64_t span;
    overflow |= mul_overflows(sizes[d] - 1, strides[d], &span);
    overflow |= add_overflows(extent, span, &extent);
  }
  overflow |= mul_overflows(extent, (int64_t)itemsize, &extent);
  EMBER_CHECK(!overflow, Runtime, "Storage size calculation overflowed with sizes=", sizes, " and strides=", strides);
  return (size_t)extent;
}

Tensor empty_tensor(const DimVector& sizes, ScalarType dtype, Device device) {
  check_nonnegative(sizes);
  auto storage = new_storage(storage_nbytes(sizes, itemsize(dtype)), device);
  return Tensor(Ref<TensorImpl>::make(std::move(storage), sizes, contiguous_strides(sizes), 0, dtype));
}

Tensor empty_strided_tensor(const DimVector& sizes, const DimVector& strides, ScalarType dtype, Device device) {
  check_nonnegative(sizes);
  auto storage = new_storage(storage_nbytes_strided(sizes, strides, itemsize(dtype)), device);
  return Tensor(Ref<TensorImpl>::make(std::move(storage), sizes, strides, 0, dtype));
}

void resize_(const Tensor& t, const DimVector& sizes) {
  TensorImpl* impl = t.impl();
  const size_t nbytes = storage_nbytes(sizes, itemsize(impl->dtype));
  if (impl->offset * itemsize(impl->dtype) + nbytes > impl->storage->nbytes) {
    impl->storage = new_storage(nbytes, impl->device());
    impl->offset = 0;
  }
  impl->sizes = sizes;
  impl->strides = contiguous_strides(sizes);
  impl->refresh_geometry();
}

Tensor make_view(const Tensor& base, DimVector sizes, DimVector strides, int64_t offset) {
  return Tensor(Ref<TensorImpl>::make(base.impl()->storage, std::move(sizes), std::move(strides), offset, base.dtype()));
}

Tensor detach_copy(const Tensor& t) {
  return Tensor(Ref<TensorImpl>::make(t.impl()->storage, t.sizes(), t.strides(), t.offset(), t.dtype()));
}

Tensor scalar_tensor(const Scalar& s, ScalarType dtype, Device device) {
  Tensor t = empty_tensor({}, dtype, Device());
  visit_dtype(dtype, [&]<typename T>() { *t.data<T>() = s.to<T>(); });
  EMBER_CHECK(device.is_cpu(), Runtime, "scalar_tensor: only CPU scalars are created directly");
  return t;
}

Tensor wrap_number(const Scalar& s) {
  Tensor t = scalar_tensor(s, s.dtype(), Device());
  t.impl()->is_wrapped_number = true;
  return t;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t n = std::max<int64_t>(ndim, 1);  // a 0-d tensor accepts dims 0 and -1
  if (dim < -n || dim >= n)
    EMBER_FAIL(Index, op, ": Dimension out of range (expected to be in range of [", -n, ", ", n - 1,
               "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

SliceBounds clamp_slice(std::optional<int64_t> start, std::optional<int64_t> end, int64_t size) {
  int64_t s = start.value_or(0);
  int64_t e = end.value_or(std::numeric_limits<int64_t>::max());
  if (s < 0) s += size;
  if (e < 0) e += size;
  if (s < 0) s = 0;
  else if (s >= size) s = size;
  if (e < s) e = s;
  else if (e >= size) e = size;
  return {s, e};
}

DimVector broadcast_shapes(const DimVector& a, const DimVector& b, const char* op) {
  (void)op;  // kept for the callers; PyTorch's message does not name the op
  size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = n; i-- > 0;) {  // from the last dim, as PyTorch's infer_size (which mismatch it names)
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      EMBER_FAIL(Runtime, "The size of tensor a (", da, ") must match the size of tensor b (", db,
                 ") at non-singleton dimension ", i);  // PyTorch's words (`op` no longer shown)
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::string shape_str(const DimVector& s) { return str(s); }

}  // namespace ember
