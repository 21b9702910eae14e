#pragma once
// TensorImpl: a strided view of a storage, with an optional autograd record.
#include <memory>
#include <optional>
#include <vector>
#include "ember/checked_math.h"
#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/scalar.h"
#include "ember/small_vector.h"
#include "ember/storage.h"

namespace ember {

struct AutogradMeta;
struct Node;
class Tensor;

struct TensorImpl : RefCounted {
  Ref<StorageImpl> storage;
  DimVector sizes, strides;  // after changing either, call refresh_geometry()
  int64_t offset = 0;  // in elements
  int64_t numel = 1;
  bool contiguous = true;  // row-major dense, cached: checked on every op's fast path
  ScalarType dtype = ScalarType::Float32;
  bool is_wrapped_number = false;  // a Python number: promotes like one
  std::unique_ptr<AutogradMeta> autograd;

  TensorImpl(Ref<StorageImpl> s, DimVector sz, DimVector st, int64_t off, ScalarType dt);
  ~TensorImpl();
  void refresh_geometry();  // numel and contiguity from sizes and strides
  bool is_contiguous() const { return contiguous; }
  Device device() const { return storage->device; }
  char* data() const { return static_cast<char*>(storage->data.ptr) + offset * (int64_t)itemsize(dtype); }
  AutogradMeta& autograd_meta();  // creates it on first use
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Ref<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return (bool)impl_; }
  TensorImpl* impl() const { return impl_.get(); }
  const Ref<TensorImpl>& ref() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  void reset() { impl_.reset(); }

  const DimVector& sizes() const { return impl_->sizes; }
  const DimVector& strides() const { return impl_->strides; }
  int64_t dim() const { return (int64_t)impl_->sizes.size(); }
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t numel() const { return impl_->numel; }
  ScalarType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->device(); }
  int64_t offset() const { return impl_->offset; }
  size_t itemsize() const { return ember::itemsize(impl_->dtype); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  bool is_wrapped_number() const { return impl_->is_wrapped_number; }
  void* data_ptr() const { return impl_->data(); }
  template <typename T> T* data() const { return reinterpret_cast<T*>(impl_->data()); }
  StorageImpl* storage() const { return impl_->storage.get(); }
  uint32_t version() const { return impl_->storage->version.load(std::memory_order_relaxed); }
  void bump_version() const { impl_->storage->bump_version(); }
  // The value of a one-element tensor.
  Scalar item() const;

  // Autograd record (see autograd.h).
  bool requires_grad() const;
  void set_requires_grad(bool r) const;
  Tensor grad() const;
  void set_grad(const Tensor& g) const;
  std::shared_ptr<Node> grad_fn() const;
  bool is_leaf() const;
  uint32_t output_nr() const;

 private:
  Ref<TensorImpl> impl_;
};

using TensorList = std::vector<Tensor>;

// Construction helpers (the rest of the API is generated from ops.yaml).
// Row-major strides; RuntimeError "Stride calculation overflowed" when they do not fit in int64.
DimVector contiguous_strides(const DimVector& sizes);
// The product of `sizes`; RuntimeError "numel: integer multiplication overflow" beyond int64.
int64_t compute_numel(const DimVector& sizes);
// Bytes a contiguous tensor (or one with `strides`) of `sizes` needs; RuntimeError
// "Storage size calculation overflowed with sizes=[...]" beyond int64, as in PyTorch.
size_t storage_nbytes(const DimVector& sizes, size_t itemsize);
size_t storage_nbytes_strided(const DimVector& sizes, const DimVector& strides, size_t itemsize);
Tensor empty_tensor(const DimVector& sizes, ScalarType dtype, Device device = Device());
Tensor empty_strided_tensor(const DimVector& sizes, const DimVector& strides, ScalarType dtype, Device device);
// Gives `t` new sizes in place (contiguous), reallocating when its storage is too small.
void resize_(const Tensor& t, const DimVector& sizes);
// A tensor sharing `base`'s storage with new geometry (autograd is the caller's job).
Tensor make_view(const Tensor& base, DimVector sizes, DimVector strides, int64_t offset);
// A shallow copy without autograd history: same storage and geometry.
Tensor detach_copy(const Tensor& t);
// A 0-d tensor holding a Python number; promotes like one.
Tensor wrap_number(const Scalar& s);
Tensor scalar_tensor(const Scalar& s, ScalarType dtype, Device device = Device());
// Wraps a negative dim and checks its range; `op` names the caller in the IndexError.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
// slice's bounds along a dim of `size`: negative ones count from the end, None is
// that end, and both are clamped to [0, size] with end never before start (Python's slicing).
struct SliceBounds {
  int64_t start, end;
};
SliceBounds clamp_slice(std::optional<int64_t> start, std::optional<int64_t> end, int64_t size);
DimVector broadcast_shapes(const DimVector& a, const DimVector& b, const char* op);
std::string shape_str(const DimVector& s);

}  // namespace ember
