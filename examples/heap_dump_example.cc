// A small program that dumps its own heap: a typed binary tree, polymorphic
// shapes, ordinary std::string and std::vector data, a worker thread waiting
// on a condition variable, and a registered root. The README's main command
// runs it, then readdump and dumptohprof on what it wrote.
//
//   heap_dump_example OUT.dump [--zstd] [--fork]
#include <fcntl.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "libdump/heap_dump.h"
#include "libdump/typed.h"

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

TreeNode* g_tree = nullptr;  // a global: the dump shows it as a data root

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

  g_tree = Build(1, 1000);
  std::vector<std::unique_ptr<shapes::Shape>> shapes;
  for (int i = 0; i < 100; ++i) {
    if (i % 3) shapes.emplace_back(new shapes::Circle);
    else shapes.emplace_back(new shapes::Rect);
  }
  std::vector<std::string> names;
  for (int i = 0; i < 200; ++i) names.push_back("a std::string long enough to live on the heap #" + std::to_string(i));
  static auto* config = new std::string("config: registered as a root");
  libdump::AddRoot(&config, "example: configuration");

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
  Free(g_tree);
  if (err != 0) {
    std::fprintf(stderr, "heap_dump_example: writing %s: %s\n", argv[1], std::strerror(err));
    return 1;
  }
  std::printf("heap_dump_example: wrote %s (1001 tree nodes, 100 shapes, 200 strings, 2 threads)\n", argv[1]);
  return 0;
}
