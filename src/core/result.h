// Errors as values: a fallible call returns Status (no value) or Result<T> (a value or an error).
// Exceptions never cross a library boundary; the CLI turns an Error into a message and an exit code.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace gpulse {

enum class ErrorCode {
  kInvalidArgument,  // bad flag, field name, file content: the user can fix it
  kNotFound,         // a file, library, scenario or device does not exist
  kNoPermission,
  kUnavailable,  // a driver or backend is not there (no GPU, driver not loaded)
  kIo,
  kInternal,
};

struct Error {
  ErrorCode code;
  std::string message;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  // REQUIRES: ok()
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // REQUIRES: !ok()
  const Error& error() const { return std::get<Error>(v_); }

 private:
  std::variant<T, Error> v_;
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)
  static Status Ok() { return {}; }

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  // REQUIRES: !ok()
  const Error& error() const { return error_; }

 private:
  Error error_{ErrorCode::kInternal, ""};
  bool ok_ = true;
};

inline Error InvalidArgument(std::string msg) { return {ErrorCode::kInvalidArgument, std::move(msg)}; }
inline Error NotFound(std::string msg) { return {ErrorCode::kNotFound, std::move(msg)}; }
inline Error Unavailable(std::string msg) { return {ErrorCode::kUnavailable, std::move(msg)}; }

}  // namespace gpulse
