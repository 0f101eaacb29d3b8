/* A program on glibc's malloc (no preload) with known allocations, for
 * tests/coredump/coredump_glibc.sh: N blocks in each of several size classes
 * in the main arena, large blocks malloc mmaps, four threads (so four more
 * arenas and tcaches) holding blocks of their own, and blocks freed into the
 * tcaches, the fastbins, the unsorted, small and large bins. It writes its
 * bookkeeping to ARGV[1] (every block it holds, every block it freed, the
 * blocks libc allocated for it, mallinfo2's totals), then waits for SIGUSR1
 * (at most 300 s), checks that every block it holds still has its contents
 * and that its threads still run, and exits 0 ("checks ok").
 *
 * It is C and writes with write(2) from static buffers, so the only heap
 * blocks beside its own are libc's: each thread's tcache struct and each
 * created thread's dtv (calloc'd by pthread_create; read from the TCB). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/prctl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_BLOCKS 20000
#define THREADS 4

struct block { uintptr_t addr; size_t usable; };
static struct block held[MAX_BLOCKS];
static int nheld;
static uintptr_t freed[MAX_BLOCKS];
static int nfreed;
static struct block dtvs[THREADS];
static uint64_t tcache_chunk_bytes; /* chunk bytes of the blocks freed into a tcache */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int ready, go_check;

static void die(const char *what) {
  write(2, what, strlen(what));
  write(2, "\n", 1);
  _exit(2);
}

static unsigned char pattern(uintptr_t a) { return (unsigned char)((a >> 4) * 31 + 7); }

/* Holds a new block of n bytes filled with its pattern. */
static void *hold(size_t n) {
  unsigned char *p = malloc(n);
  if (p == NULL) die("malloc failed");
  const size_t u = malloc_usable_size(p);
  memset(p, pattern((uintptr_t)p), u);
  pthread_mutex_lock(&lock);
  if (nheld == MAX_BLOCKS) die("too many blocks");
  held[nheld].addr = (uintptr_t)p;
  held[nheld].usable = u;
  nheld++;
  pthread_mutex_unlock(&lock);
  return p;
}

/* Frees a block this program never held (allocated just for freeing). */
static void release(void *p, int to_tcache) {
  pthread_mutex_lock(&lock);
  freed[nfreed++] = (uintptr_t)p;
  if (to_tcache) tcache_chunk_bytes += malloc_usable_size(p) + 8;
  pthread_mutex_unlock(&lock);
  free(p);
}

/* count blocks of n bytes to be freed later, a held 24-byte block after
 * each so that no two free chunks touch (none coalesces). All are
 * allocated before anything is freed: a later malloc could otherwise be
 * carved out of a freed chunk. */
struct to_free { void *p[32]; int count; size_t n; };

static void allocate_apart(struct to_free *f, size_t n, int count) {
  f->n = n;
  f->count = count;
  for (int i = 0; i < count; ++i) {
    f->p[i] = malloc(n);
    if (f->p[i] == NULL) die("malloc failed");
    hold(24);
  }
}

/* The first 7 of a size go to the thread's tcache when n fits one (<= 1032). */
static void free_all(const struct to_free *f) {
  for (int i = 0; i < f->count; ++i) release(f->p[i], f->n <= 1032 && i < 7);
}

static int check_blocks(void) {
  int bad = 0;
  for (int i = 0; i < nheld; ++i) {
    const unsigned char *p = (const unsigned char *)held[i].addr;
    const unsigned char want = pattern(held[i].addr);
    for (size_t j = 0; j < held[i].usable; ++j) {
      if (p[j] != want) { bad++; break; }
    }
  }
  return bad;
}

static void *worker(void *arg) {
  const int k = (int)(intptr_t)arg;
  static const size_t sizes[] = {40, 300, 3000};
  for (int s = 0; s < 3; ++s)
    for (int i = 0; i < 200; ++i) hold(sizes[s]);
  struct to_free f40, f300;
  allocate_apart(&f40, 40, 3);
  allocate_apart(&f300, 300, 10);
  free_all(&f40);  /* tcache */
  free_all(&f300); /* 7 in the tcache, 3 in the unsorted bin */
  /* The dtv pthread_create calloc'd for this thread, from the TCB's second word. */
  uintptr_t *tcb = __builtin_thread_pointer();
  dtvs[k].addr = tcb[1] - 16;
  dtvs[k].usable = malloc_usable_size((void *)dtvs[k].addr);
  pthread_mutex_lock(&lock);
  ready++;
  pthread_cond_broadcast(&cond);
  while (!go_check) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  return NULL;
}

static char out[1 << 20];
static size_t outlen;

static void put(const char *fmt, unsigned long long a, unsigned long long b) {
  if (outlen + 128 > sizeof out) die("bookkeeping too long");
  outlen += (size_t)snprintf(out + outlen, sizeof out - outlen, fmt, a, b);
}

int main(int argc, char **argv) {
  if (argc != 2) die("usage: glibc_heap_program BOOKKEEPING_FILE");
  /* gcore and coretodump --pid are not this process's ancestors (Yama). */
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, NULL);

  /* The main arena: 500 blocks of each size, then what malloc mmaps. */
  static const size_t sizes[] = {24, 100, 1000, 5000, 20000};
  for (int s = 0; s < 5; ++s)
    for (int i = 0; i < 500; ++i) hold(sizes[s]);
  static const size_t large[] = {300000, 1 << 20, 1 << 20, 3 << 20};
  for (int i = 0; i < 4; ++i) hold(large[i]);

  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; ++i)
    if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) != 0) die("pthread_create failed");
  pthread_mutex_lock(&lock);
  while (ready < THREADS) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);

  /* Free blocks in the main arena's bins: 600s (7 in the tcache, 3 sorted
   * into a small bin), 2000s (sorted into a large bin by the 5000-byte
   * request), then the fastbins (after that request: a large request
   * consolidates the fastbins), the tcache, and 2000s left unsorted. */
  static struct to_free f600, f2000, f56, f72, f2000b;
  allocate_apart(&f600, 600, 10);
  allocate_apart(&f2000, 2000, 10);
  allocate_apart(&f56, 56, 20);
  allocate_apart(&f72, 72, 5);
  allocate_apart(&f2000b, 2000, 5);
  free_all(&f600);
  free_all(&f2000);
  hold(5000); /* from the top chunk: no free chunk is that large */
  free_all(&f56); /* 7 in the tcache, 13 in a fastbin */
  free_all(&f72); /* tcache */
  free_all(&f2000b);

  unsigned long long bytes = 0;
  for (int i = 0; i < nheld; ++i) bytes += held[i].usable;
  const struct mallinfo2 mi = mallinfo2();
  for (int i = 0; i < nheld; ++i) put("held %llx %llu\n", held[i].addr, held[i].usable);
  for (int i = 0; i < nfreed; ++i) put("freed %llx %llu\n", freed[i], 0);
  for (int i = 0; i < THREADS; ++i) put("dtv %llx %llu\n", dtvs[i].addr, dtvs[i].usable);
  put("total %llu %llu\n", (unsigned long long)nheld, bytes);
  put("mallinfo2 %llu %llu\n", mi.uordblks, mi.hblkhd);
  put("tcache_chunk_bytes %llu %llu\n", tcache_chunk_bytes, 0);
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
  const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, out, outlen) != (ssize_t)outlen || close(fd) != 0 || rename(tmp, argv[1]) != 0)
    die("cannot write the bookkeeping");

  /* A ptrace stop (gcore's, coretodump's) ends the wait with EINTR, as
   * signal(7) says of sigtimedwait: wait again, to the same deadline. */
  struct timespec now, deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += 300;
  int sig = -1;
  while (sig != SIGUSR1) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    struct timespec left = {deadline.tv_sec - now.tv_sec, deadline.tv_nsec - now.tv_nsec};
    if (left.tv_nsec < 0) left.tv_sec--, left.tv_nsec += 1000000000;
    if (left.tv_sec < 0) die("no SIGUSR1 within 300 s");
    sig = sigtimedwait(&set, NULL, &left);
    if (sig < 0 && errno != EINTR && errno != EAGAIN) die("sigtimedwait failed");
  }
  const int bad = check_blocks();
  pthread_mutex_lock(&lock);
  go_check = 1;
  pthread_cond_broadcast(&cond);
  pthread_mutex_unlock(&lock);
  for (int i = 0; i < THREADS; ++i) pthread_join(t[i], NULL);
  if (bad != 0) {
    char line[64];
    snprintf(line, sizeof line, "%d blocks changed", bad);
    die(line);
  }
  write(1, "checks ok\n", 10);
  return 0;
}
