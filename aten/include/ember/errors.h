#pragma once
// One exception type carrying the Python exception class it maps to.
#include <atomic>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ember {

// LinAlg: a failed factorization (a singular or not positive-definite matrix), PyTorch's
// torch.linalg.LinAlgError, a RuntimeError.
enum class ErrorKind { Runtime, Type, Value, Index, NotImplemented, ZeroDivision, LinAlg };

struct Error : std::runtime_error {
  ErrorKind kind;
  Error(ErrorKind k, const std::string& msg) : std::runtime_error(msg), kind(k) {}
};

template <typename... Args>
std::string str(const Args&... args) {
  std::ostringstream ss;
  (ss << ... << args);
  return ss.str();
}

// Warnings for the user (Python UserWarnings), held per thread until the
// binding that ran the op issues them (python::WarningScope).
inline std::vector<std::string>& pending_warnings() {
  thread_local std::vector<std::string> warnings;
  return warnings;
}
// Warnings pending on all threads: while 0, a binding skips the thread-local
// lookups (a measurable share of a small op's cost).
inline std::atomic<size_t> pending_warning_count{0};
template <typename... Args>
void warn(const Args&... args) {
  pending_warnings().push_back(str(args...));
  pending_warning_count.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace ember

// EMBER_CHECK(cond, Kind, "op: message parts", ...) throws ember::Error(ErrorKind::Kind).
#define EMBER_CHECK(cond, kind, ...)                                            \
  do {                                                                          \
    if (!(cond)) throw ::ember::Error(::ember::ErrorKind::kind, ::ember::str(__VA_ARGS__)); \
  } while (0)
#define EMBER_FAIL(kind, ...) throw ::ember::Error(::ember::ErrorKind::kind, ::ember::str(__VA_ARGS__))
