// Writes a heap dump of a small, real object graph with format/'s Writer:
// a linked list of Node structs, one byte buffer per node, and the roots that
// hold them, without the runtime: it shows the record layer on its own and
// the record order docs/FORMAT.md gives (heap_dump_example dumps a live heap).
//
//   sample_dump OUT.dump [--nodes N] [--zstd]
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "libdump/format/sink.h"
#include "libdump/format/writer.h"

namespace {

using namespace libdump::format;

struct Node {
  Node* next;
  int64_t value;
  char* buffer;
};

constexpr uint64_t kNodeType = 1;
constexpr uint64_t kBufferType = 2;
constexpr size_t kBufferSize = 48;

uint64_t Addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

Node* g_head = nullptr;  // the data root

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: sample_dump OUT.dump [--nodes N] [--zstd]\n");
    return 2;
  }
  size_t nodes = 1000;
  bool zstd = false;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--nodes") == 0 && i + 1 < argc) {
      nodes = std::stoul(argv[++i]);
    } else if (std::strcmp(argv[i], "--zstd") == 0) {
      zstd = true;
    } else {
      std::fprintf(stderr, "sample_dump: unknown argument %s\n", argv[i]);
      return 2;
    }
  }

  std::vector<std::unique_ptr<Node>> owned;
  std::vector<std::unique_ptr<char[]>> buffers;
  for (size_t i = 0; i < nodes; ++i) {
    buffers.emplace_back(new char[kBufferSize]);
    std::snprintf(buffers.back().get(), kBufferSize, "payload of node %zu", i);
    owned.emplace_back(new Node{g_head, static_cast<int64_t>(i), buffers.back().get()});
    g_head = owned.back().get();
  }
  uint64_t lo = ~0ull, hi = 0;
  for (auto& n : owned) lo = std::min(lo, Addr(n.get())), hi = std::max(hi, Addr(n.get()) + sizeof(Node));
  for (auto& b : buffers) lo = std::min(lo, Addr(b.get())), hi = std::max(hi, Addr(b.get()) + kBufferSize);

  const int fd = ::open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) {
    std::perror(argv[1]);
    return 1;
  }
  FdSink file(fd);
  std::unique_ptr<ZstdSink> z;
  if (zstd) z = std::make_unique<ZstdSink>(file, 1);
  Writer w(z ? static_cast<Sink&>(*z) : file);

  w.Header();
  w.Params({0, sizeof(void*), 0, lo, hi});
  w.Type({kNodeType, sizeof(Node), "Node", false,
          {{kFieldPtr, offsetof(Node, next)}, {kFieldPtr, offsetof(Node, buffer)}}});
  w.TypeFields({kNodeType,
                {{offsetof(Node, next), kFieldPtr, 8, "next"},
                 {offsetof(Node, value), kFieldInt, 8, "value"},
                 {offsetof(Node, buffer), kFieldPtr, 8, "buffer"}}});
  w.Type({kBufferType, kBufferSize, "char", false, {}});
  w.TypeInfo({kBufferType, kTypeArray, 0, 0, 1});
  for (auto& n : owned) w.Object({Addr(n.get()), kNodeType, kObjRegular, sizeof(Node)}, n.get());
  for (auto& b : buffers) w.Object({Addr(b.get()), kBufferType, kObjArray, kBufferSize}, b.get());
  w.DataRoot({Addr(&g_head), Addr(g_head)});
  w.OtherRoot("example: list head", Addr(g_head));
  w.Eof();
  if (z) z->Finish();
  const int err = w.error();
  ::close(fd);
  if (err != 0) {
    std::fprintf(stderr, "sample_dump: writing %s: %s\n", argv[1], std::strerror(err));
    return 1;
  }
  std::printf("wrote %s: %zu nodes, %zu objects\n", argv[1], nodes, 2 * nodes);
  return 0;
}
