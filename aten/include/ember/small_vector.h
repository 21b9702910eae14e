#pragma once
// A vector of int64 with inline room for the common ranks: shapes and strides
// are built on every op, so they should not touch the heap.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <ostream>
#include <vector>

namespace ember {

class DimVector {
 public:
  static constexpr int kInline = 6;
  DimVector() = default;
  explicit DimVector(size_t n, int64_t value = 0) { resize(n, value); }
  DimVector(std::initializer_list<int64_t> il) { assign(il.begin(), il.end()); }
  DimVector(const std::vector<int64_t>& v) { assign(v.data(), v.data() + v.size()); }
  DimVector(const int64_t* b, const int64_t* e) { assign(b, e); }
  DimVector(const DimVector& o) { assign(o.begin(), o.end()); }
  DimVector(DimVector&& o) noexcept { move_from(std::move(o)); }
  DimVector& operator=(const DimVector& o) { if (this != &o) assign(o.begin(), o.end()); return *this; }
  DimVector& operator=(DimVector&& o) noexcept { if (this != &o) { free_heap(); move_from(std::move(o)); } return *this; }
  ~DimVector() { free_heap(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return data_; }
  const int64_t* data() const { return data_; }
  int64_t* begin() { return data_; }
  int64_t* end() { return data_ + size_; }
  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  int64_t& operator[](size_t i) { return data_[i]; }
  int64_t operator[](size_t i) const { return data_[i]; }
  int64_t& back() { return data_[size_ - 1]; }
  int64_t back() const { return data_[size_ - 1]; }

  void reserve(size_t n) {
    if (n <= cap_) return;
    int64_t* p = new int64_t[n];
    std::memcpy(p, data_, size_ * sizeof(int64_t));
    free_heap();
    data_ = p; cap_ = n;
  }
  void resize(size_t n, int64_t value = 0) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = value;
    size_ = n;
  }
  void push_back(int64_t v) { if (size_ == cap_) reserve(cap_ * 2); data_[size_++] = v; }
  void pop_back() { --size_; }
  void insert(size_t pos, int64_t v) {
    push_back(0);
    std::memmove(data_ + pos + 1, data_ + pos, (size_ - 1 - pos) * sizeof(int64_t));
    data_[pos] = v;
  }
  void erase(size_t pos) {
    std::memmove(data_ + pos, data_ + pos + 1, (size_ - pos - 1) * sizeof(int64_t));
    --size_;
  }
  void assign(const int64_t* b, const int64_t* e) {
    size_t n = e - b;
    if (n > cap_) { free_heap(); data_ = new int64_t[n]; cap_ = n; }
    if (n) std::memmove(data_, b, n * sizeof(int64_t));  // b may be null when n is 0
    size_ = n;
  }
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }
  bool operator==(const DimVector& o) const {
    return size_ == o.size_ && std::equal(begin(), end(), o.begin());
  }
  bool operator!=(const DimVector& o) const { return !(*this == o); }

 private:
  void free_heap() { if (data_ != inline_) delete[] data_; data_ = inline_; cap_ = kInline; }
  void move_from(DimVector&& o) {
    if (o.data_ == o.inline_) {
      std::memcpy(inline_, o.inline_, o.size_ * sizeof(int64_t));
      data_ = inline_; cap_ = kInline;
    } else {
      data_ = o.data_; cap_ = o.cap_;
      o.data_ = o.inline_; o.cap_ = kInline;
    }
    size_ = o.size_; o.size_ = 0;
  }
  int64_t inline_[kInline];
  int64_t* data_ = inline_;
  size_t size_ = 0, cap_ = kInline;
};

inline std::ostream& operator<<(std::ostream& os, const DimVector& v) {
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  return os << "]";
}

using IntList = DimVector;

}  // namespace ember
