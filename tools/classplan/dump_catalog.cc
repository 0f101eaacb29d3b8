#include "dump_catalog.h"

#include <unordered_map>

namespace libdump::dumptohprof {

using format::Kind;

void DumpCatalog::Add(const format::Record& r) {
  switch (r.kind) {
    case Kind::kObject:
      if (r.object.addr == 0) throw format::FormatError(r.offset, "kind 1 (object)", "object at address 0");
      AddObject(r.object);
      break;
    case Kind::kType: {
      // The first definition wins, as in readdump.
      auto [it, inserted] = types_.try_emplace(r.type.addr);
      if (!inserted) break;
      it->second.type = r.type;
      if (auto f = pending_fields_.find(r.type.addr); f != pending_fields_.end()) {
        it->second.has_fields = true;
        it->second.fields = std::move(f->second);
        pending_fields_.erase(f);
      }
      if (auto i = pending_info_.find(r.type.addr); i != pending_info_.end()) {
        it->second.info = i->second;
        pending_info_.erase(i);
      }
      break;
    }
    case Kind::kTypeFields:
      if (auto it = types_.find(r.type_fields.type); it != types_.end()) {
        if (!it->second.has_fields) {
          it->second.has_fields = true;
          it->second.fields = r.type_fields;
        }
      } else {
        pending_fields_.try_emplace(r.type_fields.type, r.type_fields);
      }
      break;
    case Kind::kTypeInfo:
      if ((r.type_info.flags & format::kTypeOwn) && !seen_object_ && !IsOwnType(r.type_info.type)) {
        own_types_.push_back(r.type_info.type);
      }
      if (auto it = types_.find(r.type_info.type); it != types_.end()) {
        if (it->second.info.type == 0) it->second.info = r.type_info;
      } else {
        pending_info_.try_emplace(r.type_info.type, r.type_info);
      }
      break;
    case Kind::kGoroutine:
      threads_.push_back({r.goroutine, {}, {}});
      break;
    case Kind::kThreadInfo:
      thread_names_.try_emplace(r.thread_info.goroutine, r.thread_info.name);
      break;
    case Kind::kFrame:
      frames_.push_back(r.frame);
      break;
    case Kind::kParams:
      params_ = r.params;
      break;
    case Kind::kModule:
      modules_.push_back(r.module);
      break;
    case Kind::kMemStats:
      mem_stats_ = r.mem_stats.stats;
      break;
    case Kind::kAllocStack: {
      auto [it, inserted] = stack_ids_.try_emplace(r.alloc_stack.pcs, alloc_stacks_.stacks.size());
      if (inserted) alloc_stacks_.stacks.push_back(r.alloc_stack.pcs);
      alloc_stacks_.of_object.try_emplace(r.alloc_stack.obj, it->second);  // the first record wins
      break;
    }
    default:
      break;
  }
}

bool DumpCatalog::InOwnObject(uint64_t p) const {
  auto it = std::upper_bound(own_ranges_.begin(), own_ranges_.end(), std::pair<uint64_t, uint64_t>{p, UINT64_MAX});
  return it != own_ranges_.begin() && p - std::prev(it)->first < std::prev(it)->second;
}

void DumpCatalog::Finish() {
  std::sort(own_ranges_.begin(), own_ranges_.end());
  for (uint64_t d : index_.Finish()) duplicates_.insert(d);
  std::unordered_map<uint64_t, size_t> by_sp;
  for (size_t i = 0; i < frames_.size(); ++i) by_sp.try_emplace(frames_[i].sp, i);
  for (Thread& t : threads_) {
    if (auto it = thread_names_.find(t.goroutine.addr); it != thread_names_.end()) t.name = it->second;
    // Follow the parent links from the top of the stack; the bound stops a cycle.
    uint64_t sp = t.goroutine.tos;
    for (size_t guard = 0; sp != 0 && guard < frames_.size(); ++guard) {
      auto it = by_sp.find(sp);
      if (it == by_sp.end()) break;
      t.frames.push_back(frames_[it->second]);
      sp = frames_[it->second].parent;
    }
  }
  // Allocation pcs are named after frame records at the same pc, when any.
  stack_ids_.clear();
  std::unordered_set<uint64_t> alloc_pcs;
  for (const auto& pcs : alloc_stacks_.stacks) alloc_pcs.insert(pcs.begin(), pcs.end());
  for (const format::FrameRecord& f : frames_) {
    if (!f.name.empty() && alloc_pcs.contains(f.pc)) alloc_stacks_.names.try_emplace(f.pc, f.name);
  }
  frames_.clear();
  frames_.shrink_to_fit();
  thread_names_.clear();
}

}  // namespace libdump::dumptohprof
