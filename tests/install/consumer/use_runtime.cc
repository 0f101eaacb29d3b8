// libdump::runtime (libdump.so): a heap dump of this process.
#include <fcntl.h>
#include <unistd.h>

#include "libdump/heap_dump.h"

int main() {
  const int fd = open("/dev/null", O_WRONLY);
  const int err = libdump::WriteHeapDump(fd);
  close(fd);
  return err;
}
