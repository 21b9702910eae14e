#pragma once
// A functor's operator() signature, read by the CPU and CUDA pointwise loops:
// the argument and result types of each op's generated functor.
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>

namespace ember {

template <typename F> struct fn_traits : fn_traits<decltype(&F::operator())> {};
template <typename C, typename R, typename... A>
struct fn_traits<R (C::*)(A...) const> {
  using result = R;
  using args = std::tuple<A...>;
  static constexpr int arity = sizeof...(A);
};
template <typename F, std::size_t I> using arg_t = std::tuple_element_t<I, typename fn_traits<F>::args>;
template <typename F> using result_t = typename fn_traits<F>::result;
// bool inputs are read as bytes and converted (GCC does not vectorise loads of bool).
template <typename T> using load_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

}  // namespace ember
