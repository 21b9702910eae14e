#include "ember/overlap.h"

#include <algorithm>

namespace ember {

namespace {

// PyTorch's is_non_overlapping_and_dense: the elements tile one memory block.
bool is_non_overlapping_and_dense(const Tensor& t) {
  if (t.numel() == 0 || t.is_contiguous()) return true;
  const int64_t nd = t.dim();
  const DimVector& sizes = t.sizes();
  const DimVector& strides = t.strides();
  if (nd == 1) return sizes[0] < 2 || strides[0] == 1;
  DimVector perm(nd);
  for (int64_t d = 0; d < nd; ++d) perm[d] = d;
  // Size-0/1 dims last, the rest by increasing stride.
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  int64_t expected = 1;
  for (int64_t d : perm) {
    if (sizes[d] < 2) return true;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

enum class Overlap { No, Full, Partial, TooHard };

// PyTorch's get_overlap_status.
Overlap overlap_status(const Tensor& a, const Tensor& b) {
  if (a.is_same(b)) return Overlap::Full;
  // Different storages never overlap (PyTorch says TooHard first for non-dense ones: same verdict here).
  if (a.storage() != b.storage() || a.numel() == 0 || b.numel() == 0) return Overlap::No;
  if (!is_non_overlapping_and_dense(a) || !is_non_overlapping_and_dense(b)) return Overlap::TooHard;
  const char* a_begin = static_cast<const char*>(a.data_ptr());
  const char* a_end = a_begin + a.numel() * (int64_t)a.itemsize();
  const char* b_begin = static_cast<const char*>(b.data_ptr());
  const char* b_end = b_begin + b.numel() * (int64_t)b.itemsize();
  if (a_begin == b_begin && a_end == b_end) return a.strides() == b.strides() ? Overlap::Full : Overlap::Partial;
  return a_begin < b_end && b_begin < a_end ? Overlap::Partial : Overlap::No;
}

}  // namespace

bool has_internal_overlap(const Tensor& t) {
  if (is_non_overlapping_and_dense(t)) return false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.strides()[d] == 0 && t.sizes()[d] > 1) return true;
  return false;
}

void check_no_internal_overlap(const Tensor& written, const char* op) {
  EMBER_CHECK(!has_internal_overlap(written), Runtime, op,
              ": unsupported operation: more than one element of the written-to tensor refers to a single memory "
              "location. Please clone() the tensor before performing the operation.");
}

namespace {

void check_overlap_status(const Tensor& written, const Tensor& input, bool allow_full, const char* op) {
  if (!input.defined()) return;
  const Overlap s = overlap_status(written, input);
  EMBER_CHECK(s != Overlap::Partial && (allow_full || s != Overlap::Full), Runtime, op,
              ": unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
              "single memory location. Please clone() the tensor before performing the operation.");
}

}  // namespace

void check_no_partial_overlap(const Tensor& written, const Tensor& input, const char* op) {
  check_overlap_status(written, input, true, op);
}

void check_no_partial_overlap(const Tensor& written, const TensorList& inputs, const char* op) {
  for (const Tensor& t : inputs) check_no_partial_overlap(written, t, op);
}

void check_no_overlap(const Tensor& written, const Tensor& input, const char* op) {
  check_overlap_status(written, input, false, op);
}

void check_no_overlap(const Tensor& written, const TensorList& inputs, const char* op) {
  for (const Tensor& t : inputs) check_no_overlap(written, t, op);
}

bool write_overlap_ok(const Tensor& written, std::initializer_list<const Tensor*> inputs) {
  if (has_internal_overlap(written)) return false;
  for (const Tensor* t : inputs)
    if (t->defined() && overlap_status(written, *t) == Overlap::Partial) return false;
  return true;
}

void check_write_overlap(const Tensor& written, std::initializer_list<const Tensor*> inputs, const char* op) {
  check_no_internal_overlap(written, op);
  for (const Tensor* t : inputs) check_no_partial_overlap(written, *t, op);
}

}  // namespace ember
