// A program that dumps its own heap, as a service would to find out what
// holds its memory: a session cache (hash buckets of chained sessions, each
// with a 1 KiB payload) holds most of it, a typed binary-tree index and
// polymorphic shapes the rest, and a worker thread waits on a condition
// variable holding a node on its stack. Every object is named in the dump:
// the structs through libdump's typed API (LIBDUMP_TYPE, make<T>), the
// polymorphic classes from their vtables. `make demo` runs it, then
// readdump (histogram, top retainers, a path from a root) and heapview.
//
//   heap_dump_example OUT.dump [--zstd] [--fork]
#include <fcntl.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "libdump/heap_dump.h"
#include "libdump/typed.h"

struct Payload {
  char bytes[1024];
};
LIBDUMP_TYPE(Payload)

struct Session {
  Session* next;  // the bucket's chain
  Payload* payload;
  long user;
};
LIBDUMP_TYPE(Session, next, payload)

struct SessionCache {
  Session* buckets[64];
  long size;
};
LIBDUMP_TYPE(SessionCache, buckets)

struct TreeNode {
  TreeNode* left;
  TreeNode* right;
  long key;
};
LIBDUMP_TYPE(TreeNode, left, right)

namespace shapes {
struct Shape {
  virtual ~Shape() = default;
  virtual double Area() const = 0;
};
struct Circle : Shape {
  double r = 1.5;
  double Area() const override { return 3.14159 * r * r; }
};
struct Rect : Shape {
  double w = 2, h = 3;
  double Area() const override { return w * h; }
};
}  // namespace shapes

namespace {

constexpr int kSessions = 400;
SessionCache* g_cache = nullptr;  // registered as a root below
TreeNode* g_index = nullptr;      // a global: the dump shows it as a data root

// Returns the session added; new sessions go to the front of their chain.
Session* AddSession(SessionCache* c, long user) {
  auto* p = libdump::make<Payload>();
  std::snprintf(p->bytes, sizeof p->bytes, "session of user %ld", user);
  Session*& head = c->buckets[user % 64];
  head = libdump::make<Session>(head, p, user);
  ++c->size;
  return head;
}

void FreeCache(SessionCache* c) {
  for (Session* s : c->buckets) {
    while (s != nullptr) {
      Session* next = s->next;
      libdump::destroy(s->payload);
      libdump::destroy(s);
      s = next;
    }
  }
  libdump::destroy(c);
}

TreeNode* Build(long lo, long hi) {
  if (lo > hi) return nullptr;
  const long mid = (lo + hi) / 2;
  return libdump::make<TreeNode>(Build(lo, mid - 1), Build(mid + 1, hi), mid);
}

void Free(TreeNode* n) {
  if (n == nullptr) return;
  Free(n->left);
  Free(n->right);
  libdump::destroy(n);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: heap_dump_example OUT.dump [--zstd] [--fork]\n");
    return 2;
  }
  libdump::HeapDumpOptions options;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--zstd")) options.zstd = true;
    else if (!std::strcmp(argv[i], "--fork")) options.fork_snapshot = true;
    else return std::fprintf(stderr, "heap_dump_example: unknown option %s\n", argv[i]), 2;
  }

  g_cache = libdump::make<SessionCache>();
  libdump::AddRoot(&g_cache, "example: session cache");
  for (long user = 0; user < kSessions; ++user) AddSession(g_cache, user);
  g_index = Build(1, 1000);
  std::vector<std::unique_ptr<shapes::Shape>> shapes;
  for (int i = 0; i < 100; ++i) {
    if (i % 3) shapes.emplace_back(new shapes::Circle);
    else shapes.emplace_back(new shapes::Rect);
  }

  std::mutex mu;
  std::condition_variable cv;
  bool quit = false;
  std::thread worker([&] {
    pthread_setname_np(pthread_self(), "example-worker");
    auto* job = libdump::make<TreeNode>(nullptr, nullptr, -1);  // held only by this stack
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return quit; });
    libdump::destroy(job);
  });

  const int fd = ::open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return std::perror(argv[1]), 1;
  const int err = libdump::WriteHeapDump(fd, options);
  ::close(fd);
  {
    std::lock_guard<std::mutex> l(mu);
    quit = true;
  }
  cv.notify_all();
  worker.join();
  // Found after the dump, so that no stack slot held it then: the first
  // session is last in its chain, the longest path from the cache's root.
  const Session* oldest = g_cache->buckets[0];
  while (oldest->next != nullptr) oldest = oldest->next;
  const void* oldest_payload = oldest->payload;

  if (err != 0) {
    std::fprintf(stderr, "heap_dump_example: writing %s: %s\n", argv[1], std::strerror(err));
    return 1;
  }
  libdump::RemoveRoot(&g_cache);
  FreeCache(g_cache);
  Free(g_index);
  std::printf("heap_dump_example: wrote %s (%d sessions in a SessionCache, 1001 tree nodes, 100 shapes, 2 threads)\n",
              argv[1], kSessions);
  std::printf("heap_dump_example: the oldest session's payload is at %p\n", oldest_payload);
  return 0;
}
