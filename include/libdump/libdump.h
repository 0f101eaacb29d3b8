/* libdump's C API: heap dumps of the running process, from C or C++.
 *
 *   #include <libdump/libdump.h>
 *   int fd = open("app.dump", O_WRONLY | O_CREAT | O_EXCL, 0600);
 *   int err = libdump_write_heap_dump(fd, LIBDUMP_DUMP_ZSTD);
 *
 * Link libdump.so (pkg-config libdump, or CMake libdump::runtime); it is also
 * the process's malloc. The C++ API with the same meaning is
 * libdump/heap_dump.h (docs/HEAPDUMP.md). */
#ifndef LIBDUMP_LIBDUMP_H_
#define LIBDUMP_LIBDUMP_H_

#ifdef __cplusplus
extern "C" {
#endif

/* Flags of libdump_write_heap_dump. */
enum {
  LIBDUMP_DUMP_ZSTD = 1,      /* compress the stream with zstd */
  LIBDUMP_DUMP_SEED_ONLY = 2, /* only the seed's record kinds: no libdump extensions */
  LIBDUMP_DUMP_FORK = 4       /* stop, capture, fork: the child writes while the program runs on */
};

/* Writes a heap dump to fd; other threads are stopped while memory is read.
 * Returns 0, or the errno of the failure (EPIPE, ENOSPC, EBADF, ...). */
int libdump_write_heap_dump(int fd, int flags);
/* Registers the pointer stored at *slot as a root, shown with description. */
void libdump_add_root(const void* slot, const char* description);
void libdump_remove_root(const void* slot);
/* Records fn as obj's finalizer in every dump (libdump never calls it); a
 * null fn removes it. */
void libdump_set_finalizer(void* obj, void (*fn)(void*));

#ifdef __cplusplus
}
#endif

#endif /* LIBDUMP_LIBDUMP_H_ */
