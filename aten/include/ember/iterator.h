#pragma once
// TensorIterator: broadcasting, type promotion and output allocation for
// pointwise ops, in one place for every device. Note [Iterator layout]:
// operand 0 is the output, 1.. the inputs; dims are ordered fastest-first and
// coalesced, strides are in bytes (0 along broadcast dims).
#include <initializer_list>
#include "ember/tensor.h"

namespace ember {

enum class Promote : uint8_t {
  Common,  // result dtype = promoted inputs
  Float,   // like Common, but integral/bool results become the default float
  Bool,    // compute in the promoted dtype, write bool
};

struct PointwiseConfig {
  const char* op;
  Promote promote;
  const ScalarType* dtypes;  // dtypes the kernel is instantiated for
  int num_dtypes;
  int bool_input = -1;       // input index converted to bool and kept out of promotion
  bool fit_numbers = false;  // wrapped-number inputs must fit the compute dtype (PyTorch's where.Scalar*)
};

// Dense strides for a new tensor of `shape` in the memory order of `inputs`
// (PyTorch's TensorIterator rule); empty when that order is row-major.
DimVector layout_strides(const DimVector& shape, std::initializer_list<const Tensor*> inputs);
// A new dense tensor of `shape` in that memory order.
Tensor empty_in_memory_order(const DimVector& shape, std::initializer_list<const Tensor*> inputs, ScalarType dtype,
                             Device device);

class TensorIterator {
 public:
  static constexpr int kMaxOperands = 4;

  // `out` may be undefined (allocate), an in-place target, or an out= tensor.
  // `scalars` are positional Scalar arguments (clamp's bounds): they take part
  // in type promotion as Python numbers do; null entries are None.
  static TensorIterator pointwise(const PointwiseConfig& cfg, const Tensor& out, bool inplace,
                                  std::initializer_list<const Tensor*> inputs,
                                  std::initializer_list<const Scalar*> scalars = {});
  // A plain elementwise pass with fixed dtypes (copies, fills), no promotion.
  static TensorIterator unary_copy(const Tensor& dst, const Tensor& src, const char* op);
  static TensorIterator nullary(const Tensor& dst);
  // `out` has `in`'s rank with reduced dims of size 1 (stride 0 in the layout);
  // dims are ordered by the input's memory order.
  static TensorIterator reduction(const Tensor& out, const Tensor& in);

  int ntensors() const { return ntensors_; }
  int ndim() const { return (int)shape_.size(); }
  const DimVector& shape() const { return shape_; }
  const DimVector& strides(int op) const { return strides_[op]; }
  char* data(int op) const { return data_[op]; }
  int64_t numel() const { return numel_; }
  ScalarType compute_dtype() const { return compute_dtype_; }
  ScalarType dtype(int op) const { return operands_[op].dtype(); }
  Device device() const { return device_; }
  const Tensor& operand(int op) const { return operands_[op]; }
  // The result: the allocated output, or the out=/in-place tensor.
  const Tensor& output() const { return result_; }
  // Copies a temporary result into an out= tensor of another dtype.
  void finish();

  // Calls loop(data, inner_strides, n) over linear range [begin, end) of the space.
  template <typename Loop>
  void serial_for_each(Loop&& loop, int64_t begin, int64_t end) const;
  // Narrows dim `d` to [begin, begin + len): how a reduction splits work across threads.
  void restrict_dim(int d, int64_t begin, int64_t len);
  void set_data(int op, char* p) { data_[op] = p; }

 private:
  void compute_layout(const DimVector& shape, int order_by = 0);
  int ntensors_ = 0;
  Tensor operands_[kMaxOperands];
  char* data_[kMaxOperands] = {};
  DimVector strides_[kMaxOperands];
  DimVector shape_;
  int64_t numel_ = 0;
  ScalarType compute_dtype_ = ScalarType::Float32;
  Device device_;
  Tensor result_;    // what the op returns
  Tensor writeback_; // out= tensor to copy into when operand 0 is a temporary
};

template <typename Loop>
void TensorIterator::serial_for_each(Loop&& loop, int64_t begin, int64_t end) const {
  const int nd = ndim();
  const int nt = ntensors_;
  if (begin >= end) return;
  if (nd == 0) {
    if (begin < end) { int64_t zero[kMaxOperands] = {}; char* p[kMaxOperands]; for (int t = 0; t < nt; ++t) p[t] = data_[t]; loop(p, zero, (int64_t)1); }
    return;
  }
  int64_t idx[16];
  DimVector idx_heap;
  int64_t* counter = idx;
  if (nd > 16) { idx_heap.resize(nd); counter = idx_heap.data(); }
  int64_t rem = begin;
  for (int d = 0; d < nd; ++d) { counter[d] = rem % shape_[d]; rem /= shape_[d]; }
  int64_t inner[kMaxOperands];
  for (int t = 0; t < nt; ++t) inner[t] = strides_[t][0];
  int64_t pos = begin;
  while (pos < end) {
    char* p[kMaxOperands];
    for (int t = 0; t < nt; ++t) {
      int64_t off = 0;
      for (int d = 0; d < nd; ++d) off += counter[d] * strides_[t][d];
      p[t] = data_[t] + off;
    }
    int64_t n = std::min(shape_[0] - counter[0], end - pos);
    loop(p, inner, n);
    pos += n;
    counter[0] += n;
    for (int d = 0; d < nd - 1 && counter[d] >= shape_[d]; ++d) { counter[d] = 0; counter[d + 1]++; }
  }
}

}  // namespace ember
