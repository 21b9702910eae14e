#pragma once
// PyTorch's memory-overlap checks for a tensor an op writes (MemOverlap): a
// stride-0 dim of size > 1 in the written tensor raises; layouts that might
// overlap otherwise are too hard to prove and pass, as in PyTorch.
#include <initializer_list>
#include "ember/tensor.h"

namespace ember {

void check_no_internal_overlap(const Tensor& written, const char* op);
// Raises when `input` shares some but not all of `written`'s memory (the same
// view, `a.add_(a)`, is fine; `a.add_(a.t())` or `v[1:].add_(v[:-1])` are not).
void check_no_partial_overlap(const Tensor& written, const Tensor& input, const char* op);
void check_no_partial_overlap(const Tensor& written, const TensorList& inputs, const char* op);
// Raises when `input` shares any memory with `written`, the same view included (PyTorch's cat).
void check_no_overlap(const Tensor& written, const Tensor& input, const char* op);
void check_no_overlap(const Tensor& written, const TensorList& inputs, const char* op);
// True when `t` has a stride-0 dim of size > 1 (an expanded tensor): what check_no_internal_overlap refuses.
bool has_internal_overlap(const Tensor& t);
// Both checks, for an op that reads `inputs` elementwise into `written`.
void check_write_overlap(const Tensor& written, std::initializer_list<const Tensor*> inputs, const char* op);
// check_write_overlap's verdict without raising, so the caller names the op only on failure.
bool write_overlap_ok(const Tensor& written, std::initializer_list<const Tensor*> inputs);

}  // namespace ember
