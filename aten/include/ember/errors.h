#pragma once
// One exception type carrying the Python exception class it maps to.
#include <sstream>
#include <stdexcept>
#include <string>

namespace ember {

enum class ErrorKind { Runtime, Type, Value, Index, NotImplemented, ZeroDivision };

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

}  // namespace ember

// EMBER_CHECK(cond, Kind, "op: message parts", ...) throws ember::Error(ErrorKind::Kind).
#define EMBER_CHECK(cond, kind, ...)                                            \
  do {                                                                          \
    if (!(cond)) throw ::ember::Error(::ember::ErrorKind::kind, ::ember::str(__VA_ARGS__)); \
  } while (0)
#define EMBER_FAIL(kind, ...) throw ::ember::Error(::ember::ErrorKind::kind, ::ember::str(__VA_ARGS__))
