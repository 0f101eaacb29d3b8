// Where a tool writes a file: `-` for standard output, else a temporary beside
// the target renamed over it once complete. Nothing the tool does destroys
// data: an existing target is refused unless `force`, a target that is not a
// regular file (a symlink, a device, a FIFO) is never replaced, the input is
// never the output, and a temporary never outlives the process (removed on
// failure, on SIGINT, SIGTERM and SIGHUP).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace libdump::tools {

// A refused or failed output; what() is one line naming the path.
class OutputError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct OutputSpec {
  std::string path;           // "-": standard output
  bool force = false;         // replace an existing regular file
  mode_t mode = 0600;         // permission bits of the finished file
  const struct stat* input = nullptr;  // the input's stat, when it has one: output == input is refused
};

class OutputFile {
 public:
  // Checks the target and creates the temporary (exclusively, not following a
  // symlink). Throws OutputError.
  explicit OutputFile(const OutputSpec& spec);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  int fd() const { return fd_; }
  bool is_stdout() const { return stdout_; }
  const std::string& path() const { return spec_.path; }

  // Writes all of `bytes`. Throws OutputError.
  void Write(std::string_view bytes);

  // Flushes the file to disk and moves it into place (re-checking the target:
  // without `force` the rename refuses to replace anything). Throws OutputError.
  void Commit();

 private:
  void Discard();

  OutputSpec spec_;
  std::string temp_;
  int fd_ = -1;
  int slot_ = -1;  // index in the signal handler's table
  bool stdout_ = false;
};

// The mode an output takes from its input: the input's permission bits
// without execute, so a 0600 dump gives a 0600 hprof.
mode_t OutputModeFor(const struct stat& input);

}  // namespace libdump::tools
