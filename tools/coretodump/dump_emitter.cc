#include "dump_emitter.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>

#include "block_index.h"
#include "vtable_classes.h"
#include "word_scan.h"

namespace libdump::coretodump {

namespace {

using format::Writer;
using procimage::ImageMapping;
using procimage::ImageModule;
using procimage::ImageThread;
using procimage::ProcessImage;

constexpr uint64_t kRedZone = 128;  // x86-64 leaf functions may keep data below sp
constexpr uint64_t kPage = 4096;
// user_regs_struct indices that never hold a heap pointer worth a root.
constexpr int kRegRip = 16, kRegRsp = 19;
constexpr const char* kRegNames[27] = {"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9",
                                       "r8",  "rax", "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs",
                                       "eflags", "rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs", "gs"};

std::string Hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

class Emitter {
 public:
  Emitter(const ProcessImage& image, const heapwalk::HeapWalk& walk, Writer& w, const EmitOptions& options)
      : image_(image), walk_(walk), w_(w), options_(options), blocks_(walk.blocks), classes_(image) {}

  EmitResult Run() {
    w_.Header();
    WriteParams();
    WriteMemStats();
    WriteModules();
    WriteObjects();
    WriteClasses();
    WriteThreads();
    WriteDataRoots();
    WriteOtherRoots();
    w_.Eof();
    return std::move(result_);
  }

 private:
  void Damage(uint64_t addr, const std::string& what) {
    if (result_.damage.size() < EmitResult::kMaxDamageLines) result_.damage.push_back(Hex(addr) + ": " + what);
  }

  void WriteParams() {
    uint64_t start = 0, end = 0;
    if (!walk_.blocks.empty()) {
      start = walk_.blocks.front().addr;
      end = walk_.blocks.back().addr + walk_.blocks.back().size;
    }
    w_.Params({0, 8, 0, start, end});
  }

  void WriteMemStats() {
    format::MemStatsRecord r;
    for (const auto& [name, value] : walk_.stats) r.stats.push_back({name, value});
    r.stats.push_back({"live_blocks", walk_.blocks.size()});
    r.stats.push_back({"live_bytes", walk_.live_bytes});
    r.stats.push_back({"free_blocks", walk_.free_blocks});
    r.stats.push_back({"free_bytes", walk_.free_bytes});
    for (const auto& [list, n] : walk_.free_by_list) r.stats.push_back({"free_blocks_" + list, n});
    r.stats.push_back({"heap_damage", walk_.damage.size()});
    w_.MemStats(r);
  }

  void WriteModules() {
    for (const ImageModule& m : image_.Modules()) {
      auto of_module = [&](const ImageMapping& map) {
        return map.path == m.path && map.start >= m.start && map.end <= m.end;
      };
      bool any = false;
      for (const ImageMapping& map : image_.Mappings()) {
        if (map.executable && of_module(map)) {
          w_.Module({map.start, map.end, map.file_offset, m.path, m.build_id});
          any = true;
        }
      }
      // Neither the core nor the module's file says which mapping was
      // executable (gcore keeps no text flags; the file is missing or
      // differs): every read-only mapping then, so that pcs still resolve.
      for (const ImageMapping& map : image_.Mappings()) {
        if (!any && !map.writable && of_module(map)) w_.Module({map.start, map.end, map.file_offset, m.path, m.build_id});
      }
    }
  }

  // Copies up to n bytes at addr into buf; bytes the image lacks are zeros.
  // Returns how many were missing.
  uint64_t ReadFilled(uint64_t addr, uint8_t* buf, uint64_t n) {
    uint64_t missing = 0, off = 0;
    while (off < n) {
      const size_t got = image_.Read(addr + off, buf + off, n - off);
      off += got;
      if (off == n) break;
      // A hole: zeros up to the next page, where memory may resume.
      const uint64_t at = addr + off;
      const uint64_t gap = std::min(n - off, (at / kPage + 1) * kPage - at);
      std::memset(buf + off, 0, gap);
      off += gap;
      missing += gap;
    }
    return missing;
  }

  // One object whose first bytes (up to the whole block) are in buf.
  void WriteObject(const heapwalk::LiveBlock& b, const uint8_t* first, uint64_t n_first, uint64_t missing,
                   std::vector<uint8_t>& buf) {
    uint64_t type = 0;
    if (b.size >= 8 && missing < n_first) {
      uint64_t vptr;
      std::memcpy(&vptr, first, 8);
      if (vptr != 0 && classes_.Note(vptr, b.size)) {
        type = vptr;
        ++result_.polymorphic_objects;
      }
    }
    w_.ObjectHead({b.addr, type, format::kObjRegular, b.size});
    w_.ObjectBytes(first, n_first);
    for (uint64_t off = n_first; off < b.size;) {
      const uint64_t n = std::min<uint64_t>(b.size - off, buf.size());
      missing += ReadFilled(b.addr + off, buf.data(), n);
      w_.ObjectBytes(buf.data(), n);
      off += n;
    }
    ++result_.objects;
    result_.object_bytes += b.size;
    if (missing != 0) {
      ++result_.damaged_objects;
      result_.missing_bytes += missing;
      Damage(b.addr, "block of " + std::to_string(b.size) + " bytes lacks " + std::to_string(missing) +
                         " bytes in the image (written as zeros)");
    }
  }

  // Neighbouring blocks are read together, one Read for as many as the
  // buffer holds (a syscall each for a live process otherwise), the gaps
  // between them (chunk headers, small free chunks) read and dropped.
  void WriteObjects() {
    constexpr uint64_t kMaxGap = 4096;
    std::vector<uint8_t> buf(std::max<size_t>(options_.buffer_size, 4096));
    const auto& blocks = walk_.blocks;
    for (size_t i = 0; i < blocks.size();) {
      const uint64_t start = blocks[i].addr;
      size_t j = i;
      uint64_t end = start;
      while (j < blocks.size() && blocks[j].addr - end <= kMaxGap &&
             blocks[j].addr + blocks[j].size - start <= buf.size()) {
        end = blocks[j].addr + blocks[j].size;
        ++j;
      }
      if (j == i) {  // larger than the buffer: read in pieces
        const uint64_t n = buf.size();
        const uint64_t missing = ReadFilled(start, buf.data(), n);
        WriteObject(blocks[i], buf.data(), n, missing, buf);
        ++i;
        continue;
      }
      if (ReadFilled(start, buf.data(), end - start) == 0) {
        for (; i < j; ++i) WriteObject(blocks[i], buf.data() + (blocks[i].addr - start), blocks[i].size, 0, buf);
        continue;
      }
      // Memory is missing somewhere in the run: block by block, for exact counts.
      for (; i < j; ++i) {
        const uint64_t missing = ReadFilled(blocks[i].addr, buf.data(), blocks[i].size);
        WriteObject(blocks[i], buf.data(), blocks[i].size, missing, buf);
      }
    }
  }

  void WriteClasses() {
    for (const PolymorphicClass& c : classes_.classes()) {
      w_.Type({c.vtable, c.size, c.name, false, {}});
      w_.TypeInfo({c.vtable, format::kTypePolymorphic | format::kTypeConservative, c.vtable, 0, 0});
    }
    for (const PolymorphicClass& c : classes_.classes()) w_.Itab({c.vtable, 1});
    result_.polymorphic_classes = classes_.classes().size();
  }

  // The gopc of a thread: the function its start routine called, the frame
  // below start_thread (or __libc_start_call_main); without libc's symbols,
  // the first frame above the C library's own at the bottom.
  static uint64_t StartRoutine(const std::vector<UnwoundFrame>& f, const ProcessImage& image) {
    for (size_t i = 1; i < f.size(); ++i) {
      if (f[i].symbol == "start_thread" || f[i].symbol == "__libc_start_call_main") return f[i - 1].entry;
    }
    for (size_t i = f.size(); i-- > 0;) {
      const ImageModule* m = image.FindModule(f[i].pc);
      if (m == nullptr || m->path.find("/libc.so") == std::string::npos) return f[i].entry;
    }
    return 0;
  }

  // The innermost frame whose sp is at or below addr (the red zone belongs
  // to the top frame).
  static uint64_t FrameOf(const std::vector<UnwoundFrame>& f, uint64_t addr) {
    size_t best = 0;
    for (size_t i = 0; i < f.size() && f[i].sp <= addr; ++i) best = i;
    return f[best].sp;
  }

  void WriteThreads() {
    ThreadUnwinder unwinder(image_, options_.unwind);
    for (const std::string& p : unwinder.problems()) Damage(0, p);
    std::set<uint64_t> ids;
    for (const ImageThread& t : image_.Threads()) {
      const std::vector<UnwoundFrame> frames = unwinder.Unwind(t);
      // The runtime's thread id is the thread pointer; a tid when that is
      // missing or repeated.
      uint64_t id = t.fs_base();
      if (id == 0 || !ids.insert(id).second) id = static_cast<uint64_t>(t.tid);
      ids.insert(id);
      format::GoroutineRecord g;
      g.addr = id;
      g.tos = frames.empty() ? 0 : frames[0].sp;
      g.goid = static_cast<uint64_t>(t.tid);
      g.gopc = StartRoutine(frames, image_);
      g.status = format::kStatusWaiting;
      g.wait_reason = "stopped";
      w_.Goroutine(g);
      w_.ThreadInfo({id, static_cast<uint64_t>(t.tid), t.name});
      for (size_t i = 0; i < frames.size(); ++i) {
        const UnwoundFrame& f = frames[i];
        w_.Frame({f.sp, i + 1 < frames.size() ? frames[i + 1].sp : 0, f.entry, f.pc, f.name});
      }
      ++result_.threads;
      result_.frames += frames.size();
      const std::string where = "stack of thread " + std::to_string(t.tid);
      auto root = [&](uint64_t addr, uint64_t v) {
        if (!frames.empty()) {
          w_.StackRoot({addr, v, FrameOf(frames, addr)});
          ++result_.stack_roots;
        } else {  // no frame to name
          w_.OtherRoot(where, v);
          ++result_.other_roots;
        }
      };
      // Registers: roots of the top frame. They have no address in memory;
      // the slot is the register's index.
      for (int r = 0; r < 27; ++r) {
        const uint64_t v = t.regs[r];
        if (r == kRegRip || r == kRegRsp || v == 0 || !blocks_.Contains(v)) continue;
        if (!frames.empty()) {
          w_.StackRoot({static_cast<uint64_t>(r), v, frames[0].sp});
          ++result_.stack_roots;
        } else {
          w_.OtherRoot("register " + std::string(kRegNames[r]) + " of thread " + std::to_string(t.tid), v);
          ++result_.other_roots;
        }
      }
      const ImageMapping* stack = t.sp() >= kRedZone ? image_.FindMapping(t.sp()) : nullptr;
      if (stack == nullptr) {
        Damage(t.sp(), "thread " + std::to_string(t.tid) + ": sp is in no mapping, its stack is not scanned");
        continue;
      }
      stacks_.push_back(stack);
      ScanWords(image_, blocks_, std::max(stack->start, t.sp() - kRedZone), stack->end, root);
    }
  }

  // ScanWords less the allocator's own state (HeapWalk::not_roots).
  void Scan(uint64_t lo, uint64_t hi, const std::function<void(uint64_t, uint64_t)>& emit) {
    for (const auto& [start, end] : walk_.not_roots) {
      if (end <= lo || start >= hi) continue;
      if (lo < start) Scan(lo, start, emit);
      if (end < hi) Scan(end, hi, emit);
      return;
    }
    ScanWords(image_, blocks_, lo, hi, emit);
  }

  bool Scanned(const ImageMapping* m) const {
    return std::find(stacks_.begin(), stacks_.end(), m) != stacks_.end() ||
           std::find(scanned_.begin(), scanned_.end(), m) != scanned_.end();
  }

  void WriteDataRoots() {
    const auto& maps = image_.Mappings();
    auto data = [&](uint64_t a, uint64_t v) {
      w_.DataRoot({a, v});
      ++result_.data_roots;
    };
    for (const ImageModule& m : image_.Modules()) {
      const ImageMapping* last = nullptr;
      for (const ImageMapping& map : maps) {
        if (map.path != m.path || !map.writable || !map.present) continue;
        if (map.end > map.start && !Scanned(&map)) {
          Scan(map.start, map.end, data);
          scanned_.push_back(&map);
        }
        last = &map;
      }
      if (last == nullptr) continue;
      // The .bss past the file's last page is an anonymous mapping right after it.
      const size_t i = static_cast<size_t>(last - maps.data());
      if (i + 1 < maps.size()) {
        const ImageMapping& next = maps[i + 1];
        if (next.start == last->end && next.path.empty() && next.writable && next.present && !Scanned(&next)) {
          Scan(next.start, next.end, data);
          scanned_.push_back(&next);
        }
      }
    }
  }

  void WriteOtherRoots() {
    for (const ImageThread& t : image_.Threads()) {
      const ImageMapping* tls = image_.FindMapping(t.fs_base());
      if (tls == nullptr || !tls->present || Scanned(tls)) continue;
      const std::string what = "thread-local storage of thread " + std::to_string(t.tid);
      Scan(tls->start, tls->end, [&](uint64_t, uint64_t v) {
        w_.OtherRoot(what, v);
        ++result_.other_roots;
      });
      scanned_.push_back(tls);
    }
    // What else the program wrote to: memory it mapped itself (a custom
    // allocator's arenas, buffers). Mappings holding live blocks are the
    // heap's own (arenas, mmapped chunks) and are not roots.
    for (const ImageMapping& m : image_.Mappings()) {
      if (!m.path.empty() || !m.writable || !m.present || Scanned(&m) || blocks_.AnyStartsIn(m.start, m.end)) continue;
      const std::string what = "anonymous mapping " + Hex(m.start) + "-" + Hex(m.end);
      Scan(m.start, m.end, [&](uint64_t, uint64_t v) {
        w_.OtherRoot(what, v);
        ++result_.other_roots;
      });
    }
  }

  const ProcessImage& image_;
  const heapwalk::HeapWalk& walk_;
  Writer& w_;
  const EmitOptions& options_;
  BlockIndex blocks_;
  VtableClasses classes_;
  std::vector<const ImageMapping*> stacks_, scanned_;
  EmitResult result_;
};

}  // namespace

EmitResult EmitDump(const ProcessImage& image, const heapwalk::HeapWalk& walk, Writer& w,
                    const EmitOptions& options) {
  return Emitter(image, walk, w, options).Run();
}

}  // namespace libdump::coretodump
