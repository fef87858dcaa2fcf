// Status: the result of every public call. A failed call has done no work and written nothing.
#pragma once
#include <string>
#include <string_view>
#include <utility>

namespace tejas {

enum class StatusCode : int {
  ok = 0,
  invalid_argument,  // the call was malformed: the message names the argument and what was expected
  unsupported,       // well-formed, but this backend / architecture / dtype combination has no kernel
  cuda_error,        // the CUDA runtime reported an error (message carries cudaGetErrorString)
  internal,          // a Tejas bug: please report with the message
};

std::string_view status_code_name(StatusCode c);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {StatusCode::invalid_argument, std::move(m)}; }
  static Status Unsupported(std::string m) { return {StatusCode::unsupported, std::move(m)}; }
  static Status CudaError(std::string m) { return {StatusCode::cuda_error, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::internal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::ok; }
  explicit operator bool() const { return ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid_argument: x: expected ..." or "ok".
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

}  // namespace tejas

// Returns early from the enclosing function when `expr` yields a failed Status.
#define TEJAS_RETURN_IF_ERROR(expr)             \
  do {                                          \
    ::tejas::Status tejas_status_ = (expr);     \
    if (!tejas_status_.ok()) return tejas_status_; \
  } while (0)
