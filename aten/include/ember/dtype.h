#pragma once
// The ten dtypes, their C++ types, and PyTorch's promotion lattice.
#include <cstdint>
#include <limits>
#include <string>
#include "ember/errors.h"
#include "ember/half.h"

namespace ember {

enum class ScalarType : int8_t {
  Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64, Undefined
};
constexpr int kNumScalarTypes = 10;

template <ScalarType S> struct CppTypeOf;
template <> struct CppTypeOf<ScalarType::Bool> { using type = bool; };
template <> struct CppTypeOf<ScalarType::UInt8> { using type = uint8_t; };
template <> struct CppTypeOf<ScalarType::Int8> { using type = int8_t; };
template <> struct CppTypeOf<ScalarType::Int16> { using type = int16_t; };
template <> struct CppTypeOf<ScalarType::Int32> { using type = int32_t; };
template <> struct CppTypeOf<ScalarType::Int64> { using type = int64_t; };
template <> struct CppTypeOf<ScalarType::Float16> { using type = Half; };
template <> struct CppTypeOf<ScalarType::BFloat16> { using type = BFloat16; };
template <> struct CppTypeOf<ScalarType::Float32> { using type = float; };
template <> struct CppTypeOf<ScalarType::Float64> { using type = double; };

template <typename T> struct ScalarTypeOf;
#define EMBER_SCALAR_TYPE_OF(cpp, st) \
  template <> struct ScalarTypeOf<cpp> { static constexpr ScalarType value = ScalarType::st; };
EMBER_SCALAR_TYPE_OF(bool, Bool)
EMBER_SCALAR_TYPE_OF(uint8_t, UInt8)
EMBER_SCALAR_TYPE_OF(int8_t, Int8)
EMBER_SCALAR_TYPE_OF(int16_t, Int16)
EMBER_SCALAR_TYPE_OF(int32_t, Int32)
EMBER_SCALAR_TYPE_OF(int64_t, Int64)
EMBER_SCALAR_TYPE_OF(Half, Float16)
EMBER_SCALAR_TYPE_OF(BFloat16, BFloat16)
EMBER_SCALAR_TYPE_OF(float, Float32)
EMBER_SCALAR_TYPE_OF(double, Float64)
#undef EMBER_SCALAR_TYPE_OF

// The type arithmetic happens in: float for the 16-bit floats, else the type itself.
template <typename T> struct OpMath { using type = T; };
template <> struct OpMath<Half> { using type = float; };
template <> struct OpMath<BFloat16> { using type = float; };
template <typename T> using opmath_t = typename OpMath<T>::type;

inline size_t itemsize(ScalarType t) {
  static const size_t sizes[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  return sizes[(int)t];
}
inline bool is_floating(ScalarType t) {
  return t == ScalarType::Float16 || t == ScalarType::BFloat16 || t == ScalarType::Float32 ||
         t == ScalarType::Float64;
}
inline bool is_integral(ScalarType t, bool include_bool) {
  return (t >= ScalarType::UInt8 && t <= ScalarType::Int64) || (include_bool && t == ScalarType::Bool);
}
// Short names as PyTorch prints them in dtype reprs ("float32").
const char* dtype_name(ScalarType t);
// Names as PyTorch prints them in error messages ("Float", "Long").
const char* dtype_title(ScalarType t);
// An op called on a dtype it has no kernel for: NotImplementedError, worded as PyTorch's
// `"add" not implemented for 'Bool'`.
[[noreturn]] inline void fail_dtype_not_implemented(const char* op, ScalarType t) {
  EMBER_FAIL(NotImplemented, "\"", op, "\" not implemented for '", dtype_title(t), "'");
}
ScalarType promote_types(ScalarType a, ScalarType b);
// Whether a value computed in `from` may be written to a tensor of `to` (in-place, out=).
bool can_cast(ScalarType from, ScalarType to);
ScalarType default_dtype();
void set_default_dtype(ScalarType t);

// Calls f.template operator()<T>() with T the C++ type of `t`.
template <typename F>
decltype(auto) visit_dtype(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::Bool: return f.template operator()<bool>();
    case ScalarType::UInt8: return f.template operator()<uint8_t>();
    case ScalarType::Int8: return f.template operator()<int8_t>();
    case ScalarType::Int16: return f.template operator()<int16_t>();
    case ScalarType::Int32: return f.template operator()<int32_t>();
    case ScalarType::Int64: return f.template operator()<int64_t>();
    case ScalarType::Float16: return f.template operator()<Half>();
    case ScalarType::BFloat16: return f.template operator()<BFloat16>();
    case ScalarType::Float32: return f.template operator()<float>();
    case ScalarType::Float64: return f.template operator()<double>();
    default: EMBER_FAIL(Runtime, "undefined dtype");
  }
}

// visit_dtype for the floating dtypes only; `op` names the caller in the error for others.
template <typename F>
void visit_floating(ScalarType t, const char* op, F&& f) {
  switch (t) {
    case ScalarType::Float16: return f.template operator()<Half>();
    case ScalarType::BFloat16: return f.template operator()<BFloat16>();
    case ScalarType::Float32: return f.template operator()<float>();
    case ScalarType::Float64: return f.template operator()<double>();
    default: fail_dtype_not_implemented(op, t);
  }
}

// Calls f.template operator()<U>() with U the unsigned integer of `itemsize` bytes
// (copies that move bytes need one instantiation per element size).
template <typename F>
void visit_itemsize(size_t itemsize, const char* op, F&& f) {
  switch (itemsize) {
    case 1: return f.template operator()<uint8_t>();
    case 2: return f.template operator()<uint16_t>();
    case 4: return f.template operator()<uint32_t>();
    case 8: return f.template operator()<uint64_t>();
    default: EMBER_FAIL(Runtime, op, ": unsupported element size ", itemsize);
  }
}

// The lowest and highest values of a type, infinities for floats (reduction identities).
template <typename T> EMBER_HD inline T lowest_value() {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> || std::is_floating_point_v<T>)
    return T(-std::numeric_limits<float>::infinity());
  else return std::numeric_limits<T>::lowest();
}
template <typename T> EMBER_HD inline T highest_value() {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> || std::is_floating_point_v<T>)
    return T(std::numeric_limits<float>::infinity());
  else return std::numeric_limits<T>::max();
}

}  // namespace ember
