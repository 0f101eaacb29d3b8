/* The C API compiled as C (c99, -pedantic): a program dumps its own heap with
 * libdump_write_heap_dump and registers a root and a finalizer. */
#include <libdump/libdump.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void finalize(void* p) { (void)p; }

int main(int argc, char** argv) {
  static void* root;
  char head[16];
  int fd, err;
  if (argc != 2) {
    fprintf(stderr, "usage: c_api_test OUT.dump\n");
    return 2;
  }
  root = malloc(100);
  libdump_add_root(&root, "c_api_test root");
  libdump_set_finalizer(root, finalize);
  fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return 1;
  err = libdump_write_heap_dump(fd, 0);
  close(fd);
  if (err != 0) {
    fprintf(stderr, "libdump_write_heap_dump: %s\n", strerror(err));
    return 1;
  }
  libdump_set_finalizer(root, NULL);
  libdump_remove_root(&root);
  free(root);
  fd = open(argv[1], O_RDONLY);
  if (fd < 0 || read(fd, head, sizeof head) != (ssize_t)sizeof head) return 1;
  close(fd);
  /* The format's header (docs/FORMAT.md). */
  return memcmp(head, "go1.3 heap dump\n", 16) == 0 ? 0 : 1;
}
