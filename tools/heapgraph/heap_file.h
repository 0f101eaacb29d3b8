// The file a loader or an object page reads: opened read-only and closed at
// scope exit, one error type for files that cannot be opened or read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace libdump::heapgraph {

// The file could not be opened or read; what() says why (no offset).
class LoadError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

class InputFile {
 public:
  // Throws LoadError "cannot open: REASON".
  explicit InputFile(const std::string& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  int fd() const { return fd_; }
  // Up to n bytes from offset 0 (what tells the formats apart); throws
  // LoadError "cannot read: REASON".
  size_t ReadHead(uint8_t* buf, size_t n) const;

 private:
  int fd_;
};

}  // namespace libdump::heapgraph
