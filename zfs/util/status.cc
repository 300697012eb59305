// Status: formatting and construction (see status.h).
#include "zfs/util/status.h"

#include <cerrno>
#include <cstring>

namespace uzfs {

std::string_view CodeName(Code c) {
  switch (c) {
    case Code::kOk: return "OK";
    case Code::kCorruption: return "Corruption";
    case Code::kIoError: return "IO error";
    case Code::kNotFound: return "Not found";
    case Code::kExists: return "Exists";
    case Code::kNoSpace: return "No space";
    case Code::kInvalidArgument: return "Invalid argument";
    case Code::kNotSupported: return "Not supported";
    case Code::kBusy: return "Busy";
    case Code::kOverflow: return "Overflow";
  }
  return "Unknown";
}

Status::Status(Code code, std::string_view msg, SourceLocation loc) {
  if (code == Code::kOk) return;
  const char* file = loc.file_name();
  if (const char* slash = std::strrchr(file, '/')) file = slash + 1;
  rep_ = std::make_unique<Rep>(Rep{code, std::string(msg), file, loc.line()});
}

std::string Status::ToString(bool where) const {
  if (ok()) return "OK";
  std::string s(CodeName(rep_->code));
  s += ": ";
  s += rep_->msg;
  if (where) {
    s += " [";
    s += rep_->file;
    s += ":";
    s += std::to_string(rep_->line);
    s += "]";
  }
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return Status();
  Status s;
  s.rep_ = std::make_unique<Rep>(*rep_);
  s.rep_->msg = std::string(context) + ": " + rep_->msg;
  return s;
}

int ErrnoOf(const Status& s) {
  switch (s.code()) {
    case Code::kOk: return 0;
    case Code::kNotFound: return ENOENT;
    case Code::kExists: return EEXIST;
    case Code::kNoSpace: return ENOSPC;
    case Code::kInvalidArgument: return EINVAL;
    case Code::kNotSupported: return EOPNOTSUPP;
    case Code::kBusy: return EBUSY;
    case Code::kOverflow: return EFBIG;
    default: return EIO;
  }
}

}  // namespace uzfs
