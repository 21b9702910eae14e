#pragma once
// A Python number crossing into C++: bool, int64 or double, tagged.
#include <cstdint>
#include "ember/dtype.h"

namespace ember {

class Scalar {
 public:
  enum class Tag : uint8_t { Bool, Int, Double };
  Scalar() : tag_(Tag::Int) { v_.i = 0; }
  Scalar(bool b) : tag_(Tag::Bool) { v_.i = b; }
  Scalar(int v) : tag_(Tag::Int) { v_.i = v; }
  Scalar(int64_t v) : tag_(Tag::Int) { v_.i = v; }
  Scalar(double v) : tag_(Tag::Double) { v_.d = v; }
  Scalar(float v) : tag_(Tag::Double) { v_.d = v; }

  Tag tag() const { return tag_; }
  bool is_bool() const { return tag_ == Tag::Bool; }
  bool is_integral() const { return tag_ == Tag::Int; }  // not bool
  bool is_floating() const { return tag_ == Tag::Double; }
  double to_double() const { return tag_ == Tag::Double ? v_.d : (double)v_.i; }
  int64_t to_int() const { return tag_ == Tag::Double ? (int64_t)v_.d : v_.i; }
  bool to_bool() const { return tag_ == Tag::Double ? v_.d != 0 : v_.i != 0; }
  // The dtype a Python number gets as a wrapped 0-d tensor.
  ScalarType dtype() const {
    return tag_ == Tag::Bool ? ScalarType::Bool : tag_ == Tag::Int ? ScalarType::Int64 : ScalarType::Float64;
  }
  template <typename T> T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>) return tag_ == Tag::Double ? (T)(int64_t)v_.d : (T)v_.i;
    else if constexpr (std::is_same_v<T, double>) return to_double();
    else return T((float)to_double());
  }

 private:
  Tag tag_;
  union { int64_t i; double d; } v_;
};

}  // namespace ember
