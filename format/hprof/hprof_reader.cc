#include "libdump/format/hprof_reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace libdump::format::hprof {
namespace {

constexpr std::string_view kFormat101 = "JAVA PROFILE 1.0.1";
constexpr std::string_view kFormat102 = "JAVA PROFILE 1.0.2";
constexpr size_t kChunkElements = 8192;  // array elements handed over per call

enum TopTag : uint8_t {
  kUtf8 = 0x01, kLoadClass = 0x02, kFrame = 0x04, kTrace = 0x05, kStartThread = 0x0A,
  kHeapDump = 0x0C, kSegment = 0x1C, kEnd = 0x2C,
};

std::string Hex(uint64_t v) {
  char b[24];
  snprintf(b, sizeof b, "0x%02llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace

const char* RootKindName(uint8_t t) {
  switch (t) {
    case kSubRootUnknown: return "unknown";
    case kSubRootJniGlobal: return "JNI global";
    case kSubRootJniLocal: return "JNI local";
    case kSubRootJavaFrame: return "Java frame";
    case kSubRootNativeStack: return "native stack";
    case kSubRootStickyClass: return "sticky class";
    case kSubRootThreadBlock: return "thread block";
    case kSubRootMonitorUsed: return "busy monitor";
    case kSubRootThreadObject: return "thread object";
  }
  return "root";
}

uint32_t BasicTypeSize(uint8_t type, uint32_t id_size) {
  switch (type) {
    case 2: return id_size;
    case 4: case 8: return 1;
    case 5: case 9: return 2;
    case 6: case 10: return 4;
    case 7: case 11: return 8;
  }
  return 0;
}

bool LooksLikeHprof(std::span<const uint8_t> head) {
  const std::string_view s(reinterpret_cast<const char*>(head.data()), head.size());
  return s.starts_with("JAVA PROFILE 1.0.");
}

class HprofReader::Impl {
 public:
  Impl(int fd, HprofReaderOptions o) : fd_(fd), o_(o) {
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      sized_ = true;
      size_ = static_cast<uint64_t>(st.st_size);
    }
    // No larger than the file: a small hprof (or the fuzzer's inputs) need
    // not clear a megabyte. Fill grows it for a record that needs more.
    const size_t want = std::max<size_t>(o_.buffer_size, 4096);
    buf_.resize(sized_ ? std::min<uint64_t>(want, std::max<uint64_t>(size_, 4096)) : want);
    p_ = buf_.data();
  }
  Impl(std::span<const uint8_t> data, HprofReaderOptions o) : o_(o), mem_(true), sized_(true), size_(data.size()) {
    p_ = data.data();
    end_ = data.size();
  }

  uint64_t Off() const { return base_ + pos_; }
  uint32_t id_size() const { return id_size_; }

  void Read(HprofVisitor& v) {
    ReadHeader(v);
    while (Fill(1)) {
      const uint64_t at = Off();
      if (!Fill(9)) Fail(at, "record", "truncated record header");
      const uint8_t tag = U1();
      pos_ += 4;  // microseconds since the header's time
      const uint32_t len = U4();
      const uint64_t body = Off();
      if (sized_ && len > size_ - body)
        Fail(at, Ctx(tag), "length " + std::to_string(len) + " runs past the end of the file (" +
                               std::to_string(size_ - body) + " bytes left)");
      switch (tag) {
        case kUtf8: {
          if (len < id_size_) Fail(at, Ctx(tag), "length " + std::to_string(len) + " shorter than an id");
          Bounded(at, tag, len);
          Need(at, tag, len);
          const uint64_t id = Id();
          v.Utf8(id, std::string_view(reinterpret_cast<const char*>(p_ + pos_), len - id_size_));
          pos_ += len - id_size_;
          break;
        }
        case kLoadClass: {
          Exact(at, tag, len, 8 + 2 * id_size_);
          const uint32_t serial = U4();
          const uint64_t cls = Id();
          const uint32_t trace = U4();
          v.LoadClass(serial, cls, trace, Id());
          break;
        }
        case kFrame: {
          Exact(at, tag, len, 4 * id_size_ + 8);
          const uint64_t id = Id(), method = Id(), sig = Id(), src = Id();
          const uint32_t serial = U4();
          v.Frame(id, method, sig, src, serial, static_cast<int32_t>(U4()));
          break;
        }
        case kTrace: {
          if (len < 12) Fail(at, Ctx(tag), "length " + std::to_string(len) + " shorter than 12");
          Bounded(at, tag, len);
          Need(at, tag, len);
          const uint32_t serial = U4(), thread = U4(), n = U4();
          if (uint64_t{n} * id_size_ != len - 12)
            Fail(at, Ctx(tag), std::to_string(n) + " frames do not fill length " + std::to_string(len));
          ids_.clear();
          for (uint32_t i = 0; i < n; ++i) ids_.push_back(Id());
          v.Trace(serial, thread, ids_);
          break;
        }
        case kStartThread: {
          Exact(at, tag, len, 8 + 4 * id_size_);
          const uint32_t serial = U4();
          const uint64_t thread = Id();
          const uint32_t trace = U4();
          const uint64_t name = Id();
          Id();
          Id();
          v.StartThread(serial, thread, trace, name);
          break;
        }
        case kHeapDump:
        case kSegment:
          Heap(v, body + len);
          break;
        case kEnd:
          if (len != 0) Fail(at, Ctx(tag), "length " + std::to_string(len) + ", expected 0");
          v.HeapDumpEnd(at);
          break;
        default:
          Skip(len);  // records no heap analysis needs (CPU samples, alloc sites, ...)
      }
    }
  }

  void ReadSubRecordAt(uint64_t offset, HprofVisitor& v) {
    if (id_size_ == 0) {
      // A reader that has not read this file yet: its header gives the id size.
      HprofVisitor none;
      ReadHeader(none);
    }
    if (!sized_ || offset >= size_) Fail(offset, "heap", "no sub-record here");
    if (mem_) {
      pos_ = offset;
    } else {
      base_ = offset;
      pos_ = end_ = 0;
      eof_ = false;
    }
    Sub(v, size_);
  }

 private:
  [[noreturn]] static void Fail(uint64_t at, const std::string& ctx, const std::string& why) {
    throw FormatError(at, ctx, why);
  }
  static std::string Ctx(uint8_t tag) {
    switch (tag) {
      case kUtf8: return "UTF8";
      case kLoadClass: return "LOAD CLASS";
      case kFrame: return "FRAME";
      case kTrace: return "TRACE";
      case kStartThread: return "START THREAD";
      case kHeapDump: return "HEAP DUMP";
      case kSegment: return "HEAP DUMP SEGMENT";
      case kEnd: return "HEAP DUMP END";
    }
    return "record " + Hex(tag);
  }
  static std::string SubCtx(uint8_t tag) {
    switch (tag) {
      case kSubClassDump: return "CLASS DUMP";
      case kSubInstanceDump: return "INSTANCE DUMP";
      case kSubObjArrayDump: return "OBJ ARRAY DUMP";
      case kSubPrimArrayDump: return "PRIM ARRAY DUMP";
    }
    return std::string("ROOT ") + RootKindName(tag);
  }

  // Makes n bytes available at pos_; false when the input ends first. Grows
  // the buffer beyond its size only for n a caller has bounded.
  bool Fill(size_t n) {
    if (end_ - pos_ >= n) return true;
    if (mem_) return false;
    if (sized_ && n > size_ - Off()) return false;
    if (pos_ > 0) {
      std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
      base_ += pos_;
      end_ -= pos_;
      pos_ = 0;
    }
    while (end_ < n) {
      if (end_ == buf_.size()) {
        // Only a stream gets here with n unbounded by the file: it grows by
        // doubling as bytes actually arrive, up to n (capped by max_record).
        buf_.resize(sized_ ? n : std::min(n, buf_.size() * 2));
        p_ = buf_.data();
      }
      if (eof_) return false;
      ssize_t got;
      if (sized_) {
        got = ::pread(fd_, buf_.data() + end_, buf_.size() - end_, static_cast<off_t>(base_ + end_));
      } else {
        got = ::read(fd_, buf_.data() + end_, buf_.size() - end_);
      }
      if (got < 0) {
        if (errno == EINTR) continue;
        Fail(base_ + end_, "read", std::strerror(errno));
      }
      if (got == 0) {
        eof_ = true;
        return false;
      }
      end_ += static_cast<size_t>(got);
    }
    p_ = buf_.data();
    return true;
  }

  void Skip(uint64_t n) {
    while (n > 0) {
      const size_t step = static_cast<size_t>(std::min<uint64_t>(n, 1 << 16));
      if (!Fill(step)) Fail(Off(), "record", "truncated");
      pos_ += step;
      n -= step;
    }
  }

  uint8_t U1() { return p_[pos_++]; }
  uint16_t U2() {
    const uint16_t v = static_cast<uint16_t>(p_[pos_] << 8 | p_[pos_ + 1]);
    pos_ += 2;
    return v;
  }
  uint32_t U4() {
    const uint32_t v = uint32_t{p_[pos_]} << 24 | uint32_t{p_[pos_ + 1]} << 16 | uint32_t{p_[pos_ + 2]} << 8 |
                       p_[pos_ + 3];
    pos_ += 4;
    return v;
  }
  uint64_t BeN(uint32_t n) {
    uint64_t v = 0;
    for (uint32_t i = 0; i < n; ++i) v = v << 8 | p_[pos_ + i];
    pos_ += n;
    return v;
  }
  uint64_t Id() { return id_size_ == 8 ? BeN(8) : U4(); }

  void Need(uint64_t at, uint8_t tag, size_t n) {
    if (!Fill(n)) Fail(at, Ctx(tag), "truncated");
  }
  void Bounded(uint64_t at, uint8_t tag, uint64_t len) {
    if (len > o_.max_record)
      Fail(at, Ctx(tag), "length " + std::to_string(len) + " exceeds the limit of " + std::to_string(o_.max_record));
  }
  void Exact(uint64_t at, uint8_t tag, uint32_t len, uint32_t want) {
    if (len != want) Fail(at, Ctx(tag), "length " + std::to_string(len) + ", expected " + std::to_string(want));
    Need(at, tag, len);
  }

  void ReadHeader(HprofVisitor& v) {
    if (!Fill(kFormat102.size() + 1) ||
        std::memcmp(p_ + pos_, kFormat102.data(), kFormat102.size() - 1) != 0 || p_[pos_ + 18] != 0 ||
        (p_[pos_ + 17] != '1' && p_[pos_ + 17] != '2'))
      Fail(0, "header", "not a JAVA PROFILE 1.0.1 or 1.0.2 file");
    const std::string_view format(reinterpret_cast<const char*>(p_ + pos_), kFormat102.size());
    const std::string fmt(format);
    pos_ += kFormat102.size() + 1;
    if (!Fill(12)) Fail(Off(), "header", "truncated");
    const uint64_t at = Off();
    id_size_ = U4();
    if (id_size_ != 4 && id_size_ != 8) Fail(at, "header", "id size " + std::to_string(id_size_) + ", expected 4 or 8");
    const uint64_t ts = uint64_t{U4()} << 32 | U4();
    v.Header(fmt, id_size_, ts);
  }

  // Sub-records up to `end`, the end of their segment.
  void Heap(HprofVisitor& v, uint64_t end) {
    while (Off() < end) Sub(v, end);
  }

  // n more bytes of the sub-record starting at `at`, within the segment.
  void In(uint64_t at, uint8_t tag, uint64_t n, uint64_t end) {
    if (n > end - Off())
      Fail(at, SubCtx(tag), "runs past the end of its " + std::string(end == size_ ? "file" : "segment"));
    if (!Fill(static_cast<size_t>(n))) Fail(at, SubCtx(tag), "truncated");
  }

  void Sub(HprofVisitor& v, uint64_t end) {
    const uint64_t at = Off();
    if (!Fill(1)) Fail(at, "heap", "truncated");
    const uint8_t tag = U1();
    const uint32_t id = id_size_;
    HprofRoot r;
    r.kind = tag;
    switch (tag) {
      case kSubRootUnknown:
      case kSubRootStickyClass:
      case kSubRootMonitorUsed:
        In(at, tag, id, end);
        r.object = Id();
        v.Root(at, r);
        return;
      case kSubRootJniGlobal:
        In(at, tag, 2 * id, end);
        r.object = Id();
        r.extra_id = Id();
        v.Root(at, r);
        return;
      case kSubRootJniLocal:
      case kSubRootJavaFrame:
      case kSubRootThreadObject:
        In(at, tag, id + 8, end);
        r.object = Id();
        r.thread_serial = U4();
        r.depth = U4();
        r.has_thread = true;
        v.Root(at, r);
        return;
      case kSubRootNativeStack:
      case kSubRootThreadBlock:
        In(at, tag, id + 4, end);
        r.object = Id();
        r.thread_serial = U4();
        r.has_thread = true;
        v.Root(at, r);
        return;
      case kSubClassDump:
        ClassDump(v, at, end);
        return;
      case kSubInstanceDump: {
        In(at, tag, 2 * id + 8, end);
        const uint64_t obj = Id();
        const uint32_t trace = U4();
        const uint64_t cls = Id();
        const uint32_t n = U4();
        if (n > o_.max_record)
          Fail(at, SubCtx(tag), std::to_string(n) + " field bytes exceed the limit of " +
                                    std::to_string(o_.max_record));
        In(at, tag, n, end);
        v.Instance(at, obj, trace, cls, {p_ + pos_, n});
        pos_ += n;
        return;
      }
      case kSubObjArrayDump: {
        In(at, tag, 2 * id + 8, end);
        const uint64_t obj = Id();
        const uint32_t trace = U4();
        const uint32_t n = U4();
        const uint64_t cls = Id();
        if (uint64_t{n} * id > end - Off()) In(at, tag, uint64_t{n} * id, end);
        v.ObjArray(at, obj, trace, cls, n);
        for (uint32_t done = 0; done < n;) {
          const uint32_t k = static_cast<uint32_t>(std::min<uint64_t>(n - done, kChunkElements));
          In(at, tag, uint64_t{k} * id, end);
          ids_.clear();
          for (uint32_t i = 0; i < k; ++i) ids_.push_back(Id());
          v.ObjArrayElements(ids_);
          done += k;
        }
        return;
      }
      case kSubPrimArrayDump: {
        In(at, tag, id + 9, end);
        const uint64_t obj = Id();
        const uint32_t trace = U4();
        const uint32_t n = U4();
        const uint8_t type = U1();
        const uint32_t es = type == 2 ? 0 : BasicTypeSize(type, id);
        if (es == 0) Fail(at, SubCtx(tag), "element type " + std::to_string(type) + " is not a primitive type");
        uint64_t bytes = uint64_t{n} * es;
        if (bytes > end - Off()) In(at, tag, bytes, end);
        v.PrimArray(at, obj, trace, type, n);
        while (bytes > 0) {
          const size_t k = static_cast<size_t>(std::min<uint64_t>(bytes, kChunkElements * 8));
          In(at, tag, k, end);
          v.PrimArrayBytes({p_ + pos_, k});
          pos_ += k;
          bytes -= k;
        }
        return;
      }
    }
    Fail(at, "heap", "unknown sub-record tag " + Hex(tag));
  }

  uint64_t Value(uint64_t at, uint8_t tag, uint8_t type, uint64_t end) {
    const uint32_t n = BasicTypeSize(type, id_size_);
    if (n == 0) Fail(at, SubCtx(tag), "unknown basic type " + std::to_string(type));
    In(at, tag, n, end);
    return BeN(n);
  }

  void ClassDump(HprofVisitor& v, uint64_t at, uint64_t end) {
    const uint8_t tag = kSubClassDump;
    In(at, tag, 7 * id_size_ + 10, end);  // seven ids, trace, instance size, constant pool count
    HprofClass c;
    c.id = Id();
    c.trace = U4();
    c.super = Id();
    c.loader = Id();
    pos_ += 4 * id_size_;  // signers, protection domain, two reserved
    c.instance_size = U4();
    const uint16_t ncp = U2();
    for (uint32_t i = 0; i < ncp; ++i) {
      In(at, tag, 3, end);
      pos_ += 2;
      Value(at, tag, U1(), end);
    }
    In(at, tag, 2, end);
    const uint16_t nstatic = U2();
    statics_.clear();
    for (uint32_t i = 0; i < nstatic; ++i) {
      In(at, tag, id_size_ + 1, end);
      HprofStatic s;
      s.name = Id();
      s.type = U1();
      s.value = Value(at, tag, s.type, end);
      statics_.push_back(s);
    }
    In(at, tag, 2, end);
    const uint16_t nfields = U2();
    fields_.clear();
    for (uint32_t i = 0; i < nfields; ++i) {
      In(at, tag, id_size_ + 1, end);
      HprofFieldDecl f;
      f.name = Id();
      f.type = U1();
      if (BasicTypeSize(f.type, id_size_) == 0)
        Fail(at, SubCtx(tag), "field of unknown basic type " + std::to_string(f.type));
      fields_.push_back(f);
    }
    c.statics = statics_;
    c.fields = fields_;
    v.ClassDump(at, c);
  }

  int fd_ = -1;
  HprofReaderOptions o_;
  bool mem_ = false;
  bool sized_ = false;
  bool eof_ = false;
  uint64_t size_ = 0;
  std::vector<uint8_t> buf_;
  const uint8_t* p_ = nullptr;
  size_t pos_ = 0;
  size_t end_ = 0;
  uint64_t base_ = 0;  // input offset of p_[0]
  uint32_t id_size_ = 0;
  std::vector<uint64_t> ids_;
  std::vector<HprofStatic> statics_;
  std::vector<HprofFieldDecl> fields_;
};

HprofReader::HprofReader(int fd, HprofReaderOptions o) : impl_(new Impl(fd, o)) {}
HprofReader::HprofReader(std::span<const uint8_t> data, HprofReaderOptions o) : impl_(new Impl(data, o)) {}
HprofReader::~HprofReader() { delete impl_; }
void HprofReader::Read(HprofVisitor& v) { impl_->Read(v); }
void HprofReader::ReadSubRecordAt(uint64_t offset, HprofVisitor& v) { impl_->ReadSubRecordAt(offset, v); }
uint32_t HprofReader::id_size() const { return impl_->id_size(); }
uint64_t HprofReader::offset() const { return impl_->Off(); }

}  // namespace libdump::format::hprof
