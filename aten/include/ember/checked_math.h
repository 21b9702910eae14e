#pragma once
// Size arithmetic that reports overflow instead of wrapping: every numel,
// byte-size and stride computed from user-given sizes goes through these.
#include <cstdint>

namespace ember {

// True when a * b (or a + b) does not fit in int64; *out gets the wrapped value either way.
inline bool mul_overflows(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }
inline bool add_overflows(int64_t a, int64_t b, int64_t* out) { return __builtin_add_overflow(a, b, out); }

// ceil(a / b) for a >= 0, b > 0, without the overflow of (a + b - 1) / b for b near 2**63.
inline int64_t ceil_div_nonneg(int64_t a, int64_t b) { return a / b + (a % b != 0); }

// a * b, throwing RuntimeError "<what> overflowed" (an int64 the caller cannot represent).
int64_t checked_mul(int64_t a, int64_t b, const char* what);
int64_t checked_add(int64_t a, int64_t b, const char* what);

}  // namespace ember
