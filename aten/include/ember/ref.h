#pragma once
// Intrusive reference counting: one atomic in the object, no control block.
#include <atomic>
#include <utility>

namespace ember {

struct RefCounted {
  mutable std::atomic<int32_t> refcount_{0};
};

template <typename T>
class Ref {
 public:
  Ref() = default;
  explicit Ref(T* p) : p_(p) { if (p_) p_->refcount_.fetch_add(1, std::memory_order_relaxed); }
  Ref(const Ref& o) : p_(o.p_) { if (p_) p_->refcount_.fetch_add(1, std::memory_order_relaxed); }
  Ref(Ref&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  ~Ref() { release(); }
  Ref& operator=(const Ref& o) { Ref(o).swap(*this); return *this; }
  Ref& operator=(Ref&& o) noexcept { Ref(std::move(o)).swap(*this); return *this; }
  void swap(Ref& o) noexcept { std::swap(p_, o.p_); }
  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  int32_t use_count() const { return p_ ? p_->refcount_.load() : 0; }
  void reset() { release(); p_ = nullptr; }
  bool operator==(const Ref& o) const { return p_ == o.p_; }
  template <typename... Args>
  static Ref make(Args&&... args) { return Ref(new T(std::forward<Args>(args)...)); }

 private:
  void release() {
    if (p_ && p_->refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
  }
  T* p_ = nullptr;
};

}  // namespace ember
