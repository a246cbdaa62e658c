//===- RuntimeAbi.h - the runtime's C ABI as the lowering sees it -*- C++
//-*-===//
//
// The runtime's ABI is declared once: each function's C signature in
// runtime/WhaleRuntime.h, and the list of those lowered code may call in
// runtime/AbiSymbols.def. The lowering takes both from there at build time
// instead of writing them again:
//
//   - WHALE_RT_FN(matmul) names whale_rt_matmul. A name the header does not
//     declare does not compile, nor does one missing from AbiSymbols.def
//     (which the JIT and whale-exec bind, so a call to it would not link).
//   - Its parameter and result types come from the declaration (decltype:
//     nothing of the runtime is linked into the compiler). Each call the
//     lowering emits is checked against them, so an argument missing, extra
//     or of another width is an error in every test that lowers the op,
//     never a crash in the runtime.
//   - The numbers the calls pass (dtypes, operators, groups, pooling kinds)
//     are the header's names, and the dialect's enums are checked here to
//     be numbered as the header's.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_CONVERSION_TORUNTIME_RUNTIMEABI_H
#define WHALE_LOWERING_CONVERSION_TORUNTIME_RUNTIMEABI_H

#include "dialects/Whale/IR/WhaleOps.h"
#include "runtime/WhaleRuntime.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace whale::abi {

/// What a parameter or result of the C ABI is in LLVM: the ABI passes
/// handles, arrays and strings as pointers, and only these scalars. (The
/// lowering maps them to LLVM types by this order.)
enum class Kind : uint8_t { Void, I32, I64, F64, Ptr };

template <class T> constexpr Kind kindOf() {
  if constexpr (std::is_void_v<T>)
    return Kind::Void;
  else if constexpr (std::is_pointer_v<T>)
    return Kind::Ptr;
  else if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t>)
    return Kind::I32;
  else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>)
    return Kind::I64;
  else {
    static_assert(std::is_same_v<T, double>,
                  "the lowering passes i32, i64, f64 and pointers only: "
                  "teach abi::Kind the new type first");
    return Kind::F64;
  }
}

/// A function of the ABI: its name and the kinds of its result and
/// parameters, as runtime/WhaleRuntime.h declares them.
struct Function {
  std::string_view name;
  Kind result;
  const Kind *params;
  size_t arity;
};

template <class Fn> struct SignatureOf;
template <class R, class... A> struct SignatureOf<R (*)(A...)> {
  static constexpr std::array<Kind, sizeof...(A)> params = {kindOf<A>()...};
  static constexpr Kind result = kindOf<R>();
};

template <class Fn> constexpr Function functionOf(std::string_view name) {
  using S = SignatureOf<Fn>;
  return {name, S::result, S::params.data(), S::params.size()};
}

/// The functions lowered code may call (runtime/AbiSymbols.def).
inline constexpr std::string_view kCallable[] = {
#define WHALE_RT_ABI(name) #name,
#include "runtime/AbiSymbols.def"
};

constexpr bool isCallable(std::string_view name) {
  for (std::string_view n : kCallable)
    if (n == name)
      return true;
  return false;
}

// The dialect's enums travel to the runtime as their numbers.
static_assert(static_cast<int32_t>(BinaryKind::add) == WHALE_RT_ADD &&
              static_cast<int32_t>(BinaryKind::sub) == WHALE_RT_SUB &&
              static_cast<int32_t>(BinaryKind::mul) == WHALE_RT_MUL &&
              static_cast<int32_t>(BinaryKind::div) == WHALE_RT_DIV);
static_assert(static_cast<int32_t>(UnaryKind::neg) == WHALE_RT_NEG &&
              static_cast<int32_t>(UnaryKind::relu) == WHALE_RT_RELU &&
              static_cast<int32_t>(UnaryKind::gelu) == WHALE_RT_GELU &&
              static_cast<int32_t>(UnaryKind::tanh) == WHALE_RT_TANH &&
              static_cast<int32_t>(UnaryKind::exp) == WHALE_RT_EXP &&
              static_cast<int32_t>(UnaryKind::log) == WHALE_RT_LOG &&
              static_cast<int32_t>(UnaryKind::sqrt) == WHALE_RT_SQRT);
static_assert(static_cast<int32_t>(ReduceKind::sum) == WHALE_RT_SUM &&
              static_cast<int32_t>(ReduceKind::mean) == WHALE_RT_MEAN &&
              static_cast<int32_t>(ReduceKind::max) == WHALE_RT_MAX);
static_assert(static_cast<int32_t>(InitKind::zeros) == WHALE_RT_INIT_ZEROS &&
              static_cast<int32_t>(InitKind::ones) == WHALE_RT_INIT_ONES &&
              static_cast<int32_t>(InitKind::normal) == WHALE_RT_INIT_NORMAL &&
              static_cast<int32_t>(InitKind::uniform) ==
                  WHALE_RT_INIT_UNIFORM &&
              static_cast<int32_t>(InitKind::xavier) == WHALE_RT_INIT_XAVIER);

} // namespace whale::abi

/// The ABI function whale_rt_<short>, checked at build time to be declared
/// in runtime/WhaleRuntime.h and listed in runtime/AbiSymbols.def.
#define WHALE_RT_FN(short)                                                     \
  ([] {                                                                        \
    static_assert(::whale::abi::isCallable("whale_rt_" #short),                \
                  "whale_rt_" #short " is not in runtime/AbiSymbols.def");     \
    return ::whale::abi::functionOf<decltype(&whale_rt_##short)>(              \
        "whale_rt_" #short);                                                   \
  }())

#endif // WHALE_LOWERING_CONVERSION_TORUNTIME_RUNTIMEABI_H
