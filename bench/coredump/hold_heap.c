/* Holds MB mebibytes of glibc malloc blocks (16 B to 64 KiB, log-uniform,
 * fixed seed, each written), in the main thread and three others, for
 * bench/coredump/run.sh; writes READY_FILE when done and waits for SIGUSR1
 * (at most 600 s). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static uint64_t target;

static void *fill(void *arg) {
  uint64_t x = 88172645463325252ull + (uintptr_t)arg, held = 0;
  /* The blocks are kept in a linked list through their first word: the
   * program's own bookkeeping adds no blocks. */
  void *head = NULL;
  while (held < target) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const size_t n = (size_t)exp2(4 + (double)(x % 1200) / 100.0); /* 16 B .. 64 KiB */
    void **p = malloc(n < 8 ? 8 : n);
    if (p == NULL) abort();
    memset(p, (int)(x & 0xff), n);
    *p = head;
    head = p;
    held += n;
  }
  return head;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: hold_heap MB READY_FILE\n");
    return 2;
  }
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  target = (uint64_t)atoll(argv[1]) << 20;
  target /= 4;
  pthread_t t[3];
  static void *heads[4];
  for (int i = 0; i < 3; ++i) pthread_create(&t[i], NULL, fill, (void *)(intptr_t)(i + 1));
  heads[0] = fill(NULL);
  for (int i = 0; i < 3; ++i) pthread_join(t[i], &heads[i + 1]);
  const int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 1;
  close(fd);
  /* A ptrace stop (gcore, coretodump --pid) ends the wait with EINTR. */
  const time_t deadline = time(NULL) + 600;
  const struct timespec second = {1, 0};
  while (time(NULL) < deadline && sigtimedwait(&set, NULL, &second) != SIGUSR1) {
  }
  return 0;
}
