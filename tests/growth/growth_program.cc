// Writes a series of three heap dumps of itself for readdump --growth and
// heapview --series. Between dumps it either leaks one known structure (100
// Session objects prepended to the list a global SessionCache holds) or, in
// steady mode, frees as many Sessions as it allocates.
//
//   growth_program leak|steady OUT_PREFIX     (writes OUT_PREFIX.1 .. .3)
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "libdump/heap_dump.h"

namespace app {

struct Node {
  virtual ~Node() = default;
};

struct Session : Node {
  Session* next = nullptr;
  char payload[200] = {};
};

struct SessionCache : Node {
  Session* head = nullptr;
  long size = 0;
};

struct Config : Node {
  long limits[16] = {};
};

}  // namespace app

app::SessionCache* g_cache = nullptr;  // globals: the dumps' data roots
app::Config* g_config = nullptr;

namespace {

constexpr int kPerStep = 100;

void Add(int n) {
  for (int i = 0; i < n; ++i) {
    auto* s = new app::Session;
    s->next = g_cache->head;
    g_cache->head = s;
    ++g_cache->size;
  }
}

// Frees the n oldest (the tail), so the objects that stay keep their addresses.
void DropOldest(int n) {
  for (int i = 0; i < n && g_cache->head; ++i) {
    app::Session** p = &g_cache->head;
    while ((*p)->next) p = &(*p)->next;
    delete *p;
    *p = nullptr;
    --g_cache->size;
  }
}

bool Dump(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return std::perror(path.c_str()), false;
  const int err = libdump::WriteHeapDump(fd);
  ::close(fd);
  if (err) std::fprintf(stderr, "growth_program: %s: %s\n", path.c_str(), std::strerror(err));
  return err == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "leak") && std::strcmp(argv[1], "steady"))) {
    std::fprintf(stderr, "usage: growth_program leak|steady OUT_PREFIX\n");
    return 2;
  }
  const bool leak = !std::strcmp(argv[1], "leak");
  g_cache = new app::SessionCache;
  g_config = new app::Config;
  Add(kPerStep);
  for (int step = 1; step <= 3; ++step) {
    if (!Dump(std::string(argv[2]) + "." + std::to_string(step))) return 1;
    Add(kPerStep);
    if (!leak) DropOldest(kPerStep);
  }
  std::printf("growth_program: %s: 3 dumps, %ld sessions\n", argv[1], g_cache->size);
  return 0;
}
