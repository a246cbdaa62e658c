//===- Status.h - errors as values in the runtime ----------------*- C++
//-*-===//

#ifndef WHALE_RUNTIME_CORE_STATUS_H
#define WHALE_RUNTIME_CORE_STATUS_H

#include <string>
#include <utility>

namespace whale::rt {

/// The outcome of a runtime call: ok, or a code and a message that says what
/// failed with the numbers involved (device, bytes, shapes).
class Status {
public:
  enum class Code { Ok, OutOfMemory, InvalidArgument, Internal };

  Status() = default;
  static Status ok() { return Status(); }
  static Status outOfMemory(std::string msg) {
    return Status(Code::OutOfMemory, std::move(msg));
  }
  static Status invalid(std::string msg) {
    return Status(Code::InvalidArgument, std::move(msg));
  }
  static Status internal(std::string msg) {
    return Status(Code::Internal, std::move(msg));
  }

  bool isOk() const { return code_ == Code::Ok; }
  explicit operator bool() const { return isOk(); }
  Code code() const { return code_; }
  const std::string &message() const { return message_; }

private:
  Status(Code code, std::string message)
      : code_(code), message_(std::move(message)) {}
  Code code_ = Code::Ok;
  std::string message_;
};

} // namespace whale::rt

#endif
