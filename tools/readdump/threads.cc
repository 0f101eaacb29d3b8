#include "threads.h"

#include "escape.h"
#include "record_fields.h"

namespace libdump::readdump {

using format::Kind;

void ThreadTable::Add(const format::Record& r) {
  switch (r.kind) {
    case Kind::kGoroutine:
      goroutines_.push_back(r.goroutine);
      break;
    case Kind::kFrame:
      frames_.try_emplace(r.frame.sp, r.frame);
      break;
    case Kind::kThreadInfo:
      infos_.try_emplace(r.thread_info.goroutine, r.thread_info);
      break;
    case Kind::kStackRoot:
      roots_[r.stack_root.frame]++;
      break;
    default:
      break;
  }
}

std::vector<ThreadTable::Thread> ThreadTable::Threads() const {
  std::vector<Thread> out;
  out.reserve(goroutines_.size());
  // Each frame is listed under the first thread that reaches it, so a corrupt
  // dump whose chains loop or merge costs time linear in its size.
  std::unordered_map<uint64_t, size_t> owner;  // frame sp -> index into out
  for (const format::GoroutineRecord& g : goroutines_) {
    Thread t;
    t.record = g;
    if (auto it = infos_.find(g.addr); it != infos_.end()) t.info = &it->second;
    for (uint64_t sp = g.tos; sp != 0;) {
      auto it = frames_.find(sp);
      if (it == frames_.end()) {
        t.broken = "frame " + HexString(sp) + " is not in the dump";
        break;
      }
      auto [claim, fresh] = owner.try_emplace(sp, out.size());
      if (!fresh) {
        t.broken = claim->second == out.size()
                       ? "frame " + HexString(sp) + " repeats: the chain loops"
                       : "frame " + HexString(sp) + " is on the stack of thread " +
                             HexString(out[claim->second].record.addr);
        break;
      }
      auto roots = roots_.find(sp);
      t.frames.push_back({&it->second, roots == roots_.end() ? 0 : roots->second});
      sp = it->second.parent;
    }
    out.push_back(std::move(t));
  }
  return out;
}

void PrintThreads(std::ostream& out, const ThreadTable& table) {
  const auto threads = table.Threads();
  out << threads.size() << " threads\n";
  for (const ThreadTable::Thread& t : threads) {
    const format::GoroutineRecord& g = t.record;
    out << "thread " << HexString(g.addr) << " goid=" << g.goid;
    if (t.info != nullptr) out << " tid=" << t.info->tid << " name=" << QuoteText(t.info->name);
    out << " status=" << StatusName(g.status);
    if (!g.wait_reason.empty()) out << " waitreason=" << QuoteText(g.wait_reason);
    if (g.is_system) out << " system";
    if (g.is_background) out << " background";
    out << " frames=" << t.frames.size() << '\n';
    for (size_t i = 0; i < t.frames.size(); ++i) {
      const format::FrameRecord& f = *t.frames[i].record;
      out << "  #" << i << ' ' << HexString(f.pc) << ' ' << EscapeText(f.name)
          << " sp=" << HexString(f.sp);
      if (t.frames[i].roots != 0) out << " roots=" << t.frames[i].roots;
      out << '\n';
    }
    if (!t.broken.empty()) out << "  (stack broken: " << t.broken << ")\n";
  }
}

void WriteThreadsJson(JsonWriter& json, const ThreadTable& table) {
  json.BeginArray();
  for (const ThreadTable::Thread& t : table.Threads()) {
    const format::GoroutineRecord& g = t.record;
    json.BeginObject();
    json.Key("addr");
    json.Hex(g.addr);
    json.Field("goid", g.goid);
    json.Key("tid");
    if (t.info != nullptr) json.Uint(t.info->tid); else json.Null();
    json.Key("name");
    if (t.info != nullptr) json.String(t.info->name); else json.Null();
    json.Field("status", StatusName(g.status));
    json.Field("waitreason", g.wait_reason);
    json.Key("issystem");
    json.Bool(g.is_system);
    json.Key("isbackground");
    json.Bool(g.is_background);
    json.Key("frames");
    json.BeginArray();
    for (const ThreadTable::Frame& f : t.frames) {
      json.BeginObject();
      json.Key("sp");
      json.Hex(f.record->sp);
      json.Key("pc");
      json.Hex(f.record->pc);
      json.Key("entry");
      json.Hex(f.record->entry);
      json.Field("name", f.record->name);
      json.Field("roots", f.roots);
      json.EndObject();
    }
    json.EndArray();
    json.Key("broken");
    if (t.broken.empty()) json.Null(); else json.String(t.broken);
    json.EndObject();
  }
  json.EndArray();
}

}  // namespace libdump::readdump
