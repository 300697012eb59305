// Status and Result<T>: how every layer of uzfs reports failure.
//
// The core never throws. A function that can fail returns [[nodiscard]]
// Status (or Result<T> when it also produces a value). Codes are kept
// distinct so callers can react (a Corruption triggers self-healing, a
// NoSpace becomes ENOSPC at the FUSE boundary, ...). Each Status records the
// source location that created it, so a message can say where it started.
// An OK Status holds no heap state and costs one pointer-sized compare.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace uzfs {

// Where a Status was made. Like SourceLocation (which clang 14 with
// libstdc++ 12 lacks, and the fuzz build uses clang): the default arguments
// are evaluated at the call site.
struct SourceLocation {
  static constexpr SourceLocation current(const char* file = __builtin_FILE(),
                                          uint32_t line = __builtin_LINE()) {
    return SourceLocation{file, line};
  }
  constexpr const char* file_name() const { return file_; }
  constexpr uint32_t line() const { return line_; }
  const char* file_ = "";
  uint32_t line_ = 0;
};

enum class Code : uint8_t {
  kOk = 0,
  kCorruption,       // on-disk data failed a checksum or a format check
  kIoError,          // a device reported an error
  kNotFound,         // no such object / name / pool
  kExists,           // already exists
  kNoSpace,          // out of space
  kInvalidArgument,  // caller passed something impossible
  kNotSupported,     // valid, but not implemented by uzfs
  kBusy,             // resource in use
  kOverflow,         // output buffer too small / value out of range
};

std::string_view CodeName(Code c);

class Status;
// The errno a Status stands for (0 for OK): NotFound ENOENT, Exists
// EEXIST, NoSpace ENOSPC, InvalidArgument EINVAL, NotSupported EOPNOTSUPP,
// Busy EBUSY, Overflow EFBIG, Corruption and IoError EIO. What the FUSE
// adapter replies and what the probes report.
int ErrnoOf(const Status& s);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  static Status Ok() { return Status(); }

  static Status Corruption(std::string_view msg,
                           SourceLocation loc = SourceLocation::current()) {
    return Status(Code::kCorruption, msg, loc);
  }
  static Status IoError(std::string_view msg,
                        SourceLocation loc = SourceLocation::current()) {
    return Status(Code::kIoError, msg, loc);
  }
  static Status NotFound(std::string_view msg,
                         SourceLocation loc = SourceLocation::current()) {
    return Status(Code::kNotFound, msg, loc);
  }
  static Status Exists(std::string_view msg,
                       SourceLocation loc = SourceLocation::current()) {
    return Status(Code::kExists, msg, loc);
  }
  static Status NoSpace(std::string_view msg,
                        SourceLocation loc = SourceLocation::current()) {
    return Status(Code::kNoSpace, msg, loc);
  }
  static Status InvalidArgument(std::string_view msg,
                                SourceLocation loc = SourceLocation::current()) {
    return Status(Code::kInvalidArgument, msg, loc);
  }
  static Status NotSupported(std::string_view msg,
                             SourceLocation loc = SourceLocation::current()) {
    return Status(Code::kNotSupported, msg, loc);
  }
  static Status Busy(std::string_view msg,
                     SourceLocation loc = SourceLocation::current()) {
    return Status(Code::kBusy, msg, loc);
  }
  static Status Overflow(std::string_view msg,
                         SourceLocation loc = SourceLocation::current()) {
    return Status(Code::kOverflow, msg, loc);
  }
  Status(Code code, std::string_view msg,
         SourceLocation loc = SourceLocation::current());

  Status(const Status& o) : rep_(o.rep_ ? std::make_unique<Rep>(*o.rep_) : nullptr) {}
  Status& operator=(const Status& o) {
    if (this != &o) rep_ = o.rep_ ? std::make_unique<Rep>(*o.rep_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  bool ok() const { return rep_ == nullptr; }
  Code code() const { return rep_ ? rep_->code : Code::kOk; }
  bool IsCorruption() const { return code() == Code::kCorruption; }
  bool IsNotFound() const { return code() == Code::kNotFound; }
  bool IsNoSpace() const { return code() == Code::kNoSpace; }
  bool IsIoError() const { return code() == Code::kIoError; }
  std::string_view message() const { return rep_ ? std::string_view(rep_->msg) : ""; }
  // "Corruption: <msg>"; with where=true also " [file:line]".
  std::string ToString(bool where = false) const;
  // A new status with "<context>: " prepended to the message, same code/location.
  Status WithContext(std::string_view context) const;

  // Marks a deliberate drop of an error, so such places are easy to find.
  void IgnoreError() const {}

 private:
  struct Rep {
    Code code;
    std::string msg;
    const char* file;
    uint32_t line;
  };
  std::unique_ptr<Rep> rep_;
};

// Result<T>: a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status s) : v_(std::move(s)) {      // NOLINT: implicit by design
    if (std::get<Status>(v_).ok()) v_ = Status(Code::kInvalidArgument, "Result from OK status");
  }
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace uzfs

// Early return on error: UZFS_RETURN_IF_ERROR(DoThing());
#define UZFS_RETURN_IF_ERROR(expr)          \
  do {                                      \
    ::uzfs::Status uzfs_status_ = (expr);   \
    if (!uzfs_status_.ok()) return uzfs_status_; \
  } while (0)

#define UZFS_CONCAT_INNER_(a, b) a##b
#define UZFS_CONCAT_(a, b) UZFS_CONCAT_INNER_(a, b)
// UZFS_ASSIGN_OR_RETURN(auto x, ResultReturningCall());
#define UZFS_ASSIGN_OR_RETURN(lhs, expr)                                   \
  auto UZFS_CONCAT_(uzfs_result_, __LINE__) = (expr);                      \
  if (!UZFS_CONCAT_(uzfs_result_, __LINE__).ok())                          \
    return UZFS_CONCAT_(uzfs_result_, __LINE__).status();                  \
  lhs = std::move(UZFS_CONCAT_(uzfs_result_, __LINE__)).value()
