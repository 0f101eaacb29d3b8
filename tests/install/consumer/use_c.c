/* The C API through libdump::runtime or pkg-config libdump. */
#include <fcntl.h>
#include <unistd.h>

#include <libdump/libdump.h>

int main(void) {
  int fd = open("/dev/null", O_WRONLY);
  int err = libdump_write_heap_dump(fd, LIBDUMP_DUMP_ZSTD);
  close(fd);
  return err;
}
