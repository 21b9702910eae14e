#pragma once
// Functions derivative formulas call besides ember ops (codegen/formula.py
// lists their signatures). Built from ember ops, so they are differentiable.
#include <initializer_list>
#include <memory>
#include <optional>
#include "ember/tensor.h"

namespace ember {
struct Node;
enum class CreationMeta : uint8_t;
}

namespace ember::autograd {

Tensor zeros_like(const Tensor& self);
// Arithmetic of two numbers in a formula (`exponent - 1`), in double or int64 as the operands
// are: a wrapped-number tensor op would round to the default dtype (float32).
Scalar scalar_arith(char op, const Scalar& a, const Scalar& b);
Tensor ones_like(const Tensor& self);
// div with rounding_mode (PyTorch's DivBackward2): zero, but the formula names the other operand
// so the node saves it, and an in-place write to it before backward raises, as in PyTorch.
Tensor rounded_div_backward(const Tensor& grad, const Tensor& saved);
// grad * factor, or grad itself when factor is 1 (add's alpha): no pass over the gradient.
Tensor maybe_multiply(const Tensor& grad, const Scalar& factor);
// mm's gradient for mat2 in mat2's layout: a transposed mat2 (nn.Linear's weight.t()) gets a
// transposed gradient, so the weight's .grad comes out row-major without a copy, as in PyTorch.
Tensor mm_mat2_backward(const Tensor& grad, const Tensor& self, const IntList& mat2_strides);
// Sums a broadcast gradient down to `shape`.
Tensor sum_to(const Tensor& grad, const IntList& shape);
// `self` summed over `dim`, all dims when None or empty (amax's, norm's reading of `dim`).
Tensor sum_over(const Tensor& self, const std::optional<IntList>& dim, bool keepdim);
// The gradient of a reduction over `dim`, expanded back to the input `shape`.
Tensor expand_reduced(const Tensor& grad, const IntList& shape, const std::optional<IntList>& dim, bool keepdim);
Tensor prod_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                     const std::optional<IntList>& dim, bool keepdim);
// amax/amin: the gradient split evenly among the elements equal to the result.
Tensor select_extreme_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                               const std::optional<IntList>& dim, bool keepdim);
// max.dim/min.dim: the gradient scattered to `indices` along `dim`.
Tensor index_reduction_backward(const Tensor& grad, const Tensor& indices, const IntList& shape, int64_t dim,
                                bool keepdim);
// linalg.vector_norm: PyTorch's subgradients (0 where the norm is 0, ties of
// the inf norm split evenly, NaN propagated), in self's dtype.
Tensor vector_norm_backward(const Tensor& grad, const Tensor& self, const Scalar& ord, const Tensor& result,
                            const std::optional<IntList>& dim, bool keepdim);
IntList invert_permutation(const IntList& dims);
Tensor select_backward(const Tensor& grad, const IntList& shape, int64_t dim, int64_t index);
Tensor slice_backward(const Tensor& grad, const IntList& shape, int64_t dim, std::optional<int64_t> start,
                      std::optional<int64_t> end, int64_t step);
Tensor index_backward(const Tensor& grad, const IntList& shape, const TensorList& indices);
// A copy of `self` with `values` written (or added) at `indices`.
Tensor index_put(const Tensor& self, const TensorList& indices, const Tensor& values, bool accumulate);
Tensor index_values_backward(const Tensor& grad, const TensorList& indices, const IntList& shape);
// True where `self` lies within [min, max] (bounds may be None).
Tensor clamp_mask(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max);

// A view's autograd record points at its root base and remembers how it was made, so an
// in-place op on it (or on its base) can rebase its history. `multi_output`: unbind/split.
void mark_view(const Tensor& view, const Tensor& base, bool multi_output = false);
// The same with the CreationMeta given (the generated view ops know the grad mode already).
void mark_view(const Tensor& view, const Tensor& base, CreationMeta creation);
// Attaches a node that raises at backward: the op has no derivative.
// It has edges to the inputs, as PyTorch's, so a backward toward them runs it.
void set_not_differentiable(const Tensor& result, std::initializer_list<const Tensor*> inputs, const char* op);
// The same node for an in-place op (floor_divide_), made before the write from its
// tensor inputs; the caller rebases `self` onto it. Null when `self` gets no history.
std::shared_ptr<Node> not_differentiable_node(const Tensor& self, std::initializer_list<const Tensor*> inputs,
                                              const char* op);

}  // namespace ember::autograd
