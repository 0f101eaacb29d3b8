#include "snapshot_image.h"

#include <asm/prctl.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace libdump::procimage::testing {

// One line of /proc/self/maps, parsed into memory of the memfd.
struct SnapshotImage::Raw {
  uint64_t start, end, offset;
  bool r, w, x;
  char path[256];
  uint64_t copy_at;  // offset in the copy, or UINT64_MAX
};

namespace {

constexpr size_t kText = 2 << 20, kMaxRaw = 8192;
constexpr const char* kMetaName = "libdump_snapshot_meta";

uint8_t* MapMemfd(const char* name, size_t size) {
  const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  void* p = ftruncate(fd, static_cast<off_t>(size)) == 0 ? mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                                                        : MAP_FAILED;
  close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

uint64_t Hex(const char*& s) {
  uint64_t v = 0;
  for (;; ++s) {
    const char c = *s;
    if (c >= '0' && c <= '9') v = v * 16 + (c - '0');
    else if (c >= 'a' && c <= 'f') v = v * 16 + (c - 'a' + 10);
    else return v;
  }
}

std::string BuildIdInMemory(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
    for (size_t at = 0; at + sizeof(ElfW(Nhdr)) <= ph.p_memsz;) {
      const auto* n = reinterpret_cast<const ElfW(Nhdr)*>(p + at);
      const size_t name = (n->n_namesz + 3) & ~size_t{3}, desc = (n->n_descsz + 3) & ~size_t{3};
      const uint8_t* d = p + at + sizeof(*n) + name;
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::memcmp(p + at + sizeof(*n), "GNU", 4) == 0) {
        std::string s;
        for (size_t k = 0; k < n->n_descsz; ++k) {
          static const char kHex[] = "0123456789abcdef";
          s += kHex[d[k] >> 4];
          s += kHex[d[k] & 15];
        }
        return s;
      }
      at += sizeof(*n) + name + desc;
    }
  }
  return "";
}

}  // namespace

SnapshotThread ThisThread() {
  SnapshotThread t;
  t.tid = static_cast<int>(syscall(SYS_gettid));
  unsigned long fs = 0;
  syscall(SYS_arch_prctl, ARCH_GET_FS, &fs);
  t.fs_base = fs;
  volatile int here = 0;
  t.sp = reinterpret_cast<uint64_t>(&here);
  return t;
}

SnapshotImage::SnapshotImage(const std::vector<SnapshotThread>& threads) {
  // Nothing here allocates until every copy is made.
  meta_size_ = kText + kMaxRaw * sizeof(Raw);
  meta_ = MapMemfd(kMetaName, meta_size_);
  if (meta_ == nullptr) return;
  char* text = reinterpret_cast<char*>(meta_);
  Raw* raw = reinterpret_cast<Raw*>(meta_ + kText);
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  size_t len = 0;
  for (ssize_t n; fd >= 0 && len < kText - 1 && (n = read(fd, text + len, kText - 1 - len)) > 0;) len += n;
  if (fd >= 0) close(fd);
  text[len] = 0;
  size_t count = 0, total = 0;
  for (const char* s = text; *s && count < kMaxRaw;) {
    Raw& r = raw[count];
    r.start = Hex(s);
    ++s;
    r.end = Hex(s);
    ++s;
    r.r = s[0] == 'r', r.w = s[1] == 'w', r.x = s[2] == 'x';
    s += 5;
    r.offset = Hex(s);
    while (*s == ' ') ++s;
    while (*s && *s != ' ') ++s;  // device
    while (*s == ' ') ++s;
    while (*s >= '0' && *s <= '9') ++s;  // inode
    while (*s == ' ') ++s;
    size_t p = 0;
    while (*s && *s != '\n') {
      if (p + 1 < sizeof r.path) r.path[p++] = *s;
      ++s;
    }
    r.path[p] = 0;
    if (*s) ++s;
    const bool libc = std::strstr(r.path, "/libc.so") != nullptr;
    const bool skip = std::strstr(r.path, kMetaName) != nullptr || std::strcmp(r.path, "[vvar]") == 0 ||
                      std::strcmp(r.path, "[vsyscall]") == 0;
    r.copy_at = UINT64_MAX;
    if (r.r && (r.w || libc) && !skip) {
      r.copy_at = total;
      total += r.end - r.start;
    }
    ++count;
  }
  copy_size_ = total;
  copy_ = MapMemfd("libdump_snapshot_copy", total == 0 ? 1 : total);
  if (copy_ == nullptr) return;
  for (size_t i = 0; i < count; ++i) {
    if (raw[i].copy_at != UINT64_MAX)
      std::memcpy(copy_ + raw[i].copy_at, reinterpret_cast<const void*>(raw[i].start), raw[i].end - raw[i].start);
  }
  // The copy is made: from here on allocating is harmless.
  for (size_t i = 0; i < count; ++i) {
    ImageMapping m;
    m.start = raw[i].start, m.end = raw[i].end;
    m.readable = raw[i].r, m.writable = raw[i].w, m.executable = raw[i].x;
    m.path = raw[i].path;
    m.file_offset = raw[i].offset;
    m.present = raw[i].copy_at != UINT64_MAX;
    mappings_.push_back(m);
    copies_.push_back(m.present ? copy_ + raw[i].copy_at : nullptr);
  }
  for (const SnapshotThread& t : threads) {
    ImageThread it;
    it.tid = t.tid;
    it.regs[19] = t.sp;
    it.regs[21] = t.fs_base;
    threads_.push_back(it);
  }
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* self) {
        ImageModule m;
        m.path = info->dlpi_name ? info->dlpi_name : "";
        // The name /proc/self/maps gives it, as a core's NT_FILE would.
        char real[PATH_MAX];
        if (m.path.empty()) {
          const ssize_t n = readlink("/proc/self/exe", real, sizeof real - 1);
          m.path.assign(real, n > 0 ? n : 0);
        } else if (realpath(m.path.c_str(), real) != nullptr) {
          m.path = real;
        }
        m.load_bias = info->dlpi_addr;
        m.start = UINT64_MAX;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          m.start = std::min<uint64_t>(m.start, (info->dlpi_addr + ph.p_vaddr) & ~uint64_t{4095});
          m.end = std::max<uint64_t>(m.end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        m.build_id = BuildIdInMemory(info);
        m.file_matches = true;
        if (m.start != UINT64_MAX) static_cast<SnapshotImage*>(self)->modules_.push_back(m);
        return 0;
      },
      this);
}

SnapshotImage::~SnapshotImage() {
  if (meta_) munmap(meta_, meta_size_);
  if (copy_) munmap(copy_, copy_size_ == 0 ? 1 : copy_size_);
}

size_t SnapshotImage::Read(uint64_t addr, void* out, size_t n) const {
  size_t done = 0;
  while (done < n) {
    const ImageMapping* m = FindMapping(addr + done);
    if (m == nullptr || !m->present) break;
    const size_t i = static_cast<size_t>(m - mappings_.data());
    const size_t k = std::min<uint64_t>(n - done, m->end - (addr + done));
    std::memcpy(static_cast<uint8_t*>(out) + done, copies_[i] + (addr + done - m->start), k);
    done += k;
  }
  return done;
}

}  // namespace libdump::procimage::testing
