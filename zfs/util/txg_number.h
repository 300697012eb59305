// Txg: the number of a transaction group, as a type of its own.
//
// Object numbers, offsets, sizes, block births and txg numbers are all
// 64-bit integers; the DMU, the DSL, the ZIL and the txg engine pass a Txg
// where they mean "the transaction group this change belongs to", so a
// caller cannot hand an object number or a block's birth where a txg goes.
//
// What it promises:
//   - A run-time integer becomes a Txg only by naming it: `Txg{n}`.
//   - An integer constant converts implicitly (`os.Write(obj, 0, data, 5)`
//     in a test); the conversion is consteval, so a variable never does.
//   - number() gives the integer back, for on-disk fields (a block
//     pointer's birth, an uberblock's txg) and for the layers below the DMU
//     (space maps, allocators), which deal in births, not transactions.
//   - Ordered, comparable, printable; next()/prev() step by one.
#pragma once

#include <compare>
#include <concepts>
#include <cstdint>
#include <functional>
#include <ostream>
#include <type_traits>

namespace uzfs {

class Txg {
 public:
  constexpr Txg() = default;
  constexpr explicit Txg(uint64_t number) : number_(number) {}
  // Integer constants only (a negative one does not compile).
  template <std::integral I>
  consteval Txg(I constant) : number_(Checked(constant)) {}  // NOLINT(google-explicit-constructor)

  constexpr uint64_t number() const { return number_; }
  constexpr Txg next() const { return Txg{number_ + 1}; }
  constexpr Txg prev() const { return Txg{number_ - 1}; }

  friend constexpr auto operator<=>(Txg, Txg) = default;
  friend constexpr bool operator==(Txg, Txg) = default;
  friend std::ostream& operator<<(std::ostream& out, Txg t) { return out << t.number_; }

 private:
  template <std::integral I>
  static consteval uint64_t Checked(I constant) {
    if constexpr (std::is_signed_v<I>) {
      if (constant < 0) throw "a txg number is never negative";
    }
    return static_cast<uint64_t>(constant);
  }
  uint64_t number_ = 0;
};

}  // namespace uzfs

template <>
struct std::hash<uzfs::Txg> {
  size_t operator()(uzfs::Txg t) const noexcept { return std::hash<uint64_t>{}(t.number()); }
};
