#include "platform/output/exclusive_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

namespace libdump::output {

int CreateExclusive(const char* path, int mode) {
  // open(2) alone: async-signal-safe, for the crash handlers. O_EXCL alone
  // already fails on a link; O_NOFOLLOW says so twice.
  return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
}

int RenameNoReplace(const char* from, const char* to) {
  if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return 0;
  int err = errno;
  if (err != EINVAL && err != ENOSYS) return err;
  // No RENAME_NOREPLACE here: link() refuses an existing name just as well.
  if (link(from, to) != 0) return errno;
  unlink(from);
  return 0;
}

void CloseAndRemove(int fd, const char* path) {
  if (fd >= 0) close(fd);
  unlink(path);
}

}  // namespace libdump::output
