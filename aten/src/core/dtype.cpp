#include "ember/dtype.h"

#include <atomic>

namespace ember {

const char* dtype_name(ScalarType t) {
  static const char* names[] = {"bool", "uint8", "int8", "int16", "int32", "int64",
                                "float16", "bfloat16", "float32", "float64"};
  return (int)t >= 0 && (int)t < kNumScalarTypes ? names[(int)t] : "undefined";
}

const char* dtype_title(ScalarType t) {
  static const char* names[] = {"Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16", "Float", "Double"};
  return (int)t >= 0 && (int)t < kNumScalarTypes ? names[(int)t] : "Undefined";
}

ScalarType promote_types(ScalarType a, ScalarType b) {
  using S = ScalarType;
  if (a == b) return a;
  if (a == S::Undefined) return b;
  if (b == S::Undefined) return a;
  if (a == S::Bool) return b;
  if (b == S::Bool) return a;
  bool fa = is_floating(a), fb = is_floating(b);
  if (fa && fb) {
    if ((a == S::Float16 && b == S::BFloat16) || (a == S::BFloat16 && b == S::Float16)) return S::Float32;
    return itemsize(a) >= itemsize(b) ? (itemsize(a) == itemsize(b) ? (a > b ? a : b) : a) : b;
  }
  if (fa) return a;
  if (fb) return b;
  // Both integral. uint8 is the only unsigned type.
  if (a == S::UInt8 || b == S::UInt8) {
    S other = a == S::UInt8 ? b : a;
    return other == S::Int8 ? S::Int16 : other;
  }
  return a > b ? a : b;
}

bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating(from) && is_integral(to, true)) return false;
  if (from != ScalarType::Bool && to == ScalarType::Bool) return false;
  return true;
}

// Atomic: ops read it without the GIL while another thread may set it.
static std::atomic<ScalarType> g_default_dtype{ScalarType::Float32};
ScalarType default_dtype() { return g_default_dtype.load(std::memory_order_relaxed); }
void set_default_dtype(ScalarType t) { g_default_dtype.store(t, std::memory_order_relaxed); }

}  // namespace ember
