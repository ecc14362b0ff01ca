// Replays the memory events of a trace into blocks (memory.h): each
// thread's allocations and frees with the call path and tag open in it then,
// merged in time order across threads and processes, each free paired with
// its allocation.
//
// Processes bound the blocks. A process's blocks end with it: those still
// allocated when it exits, execs or its recording ends are leaked *by it*,
// and from then on they are no longer outstanding (a build's 1,208
// compilers do not add up to a peak when two ran at once). A fork child
// starts with a copy of its parent's blocks live at the fork: its frees of
// them pair with them (no "mismatched free" when an nginx worker frees what
// the master allocated), but they stay the parent's -- not the child's
// leaks, and not counted again in outstanding bytes: the child's copy shares
// the parent's pages until either writes them (docs/memory.md, "Processes").
#include "analysis/memory.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <unordered_map>

#include "format/module_map.h"

namespace callscope::analysis {
namespace {

namespace fmt = callscope::format;

// Which frees belong to which allocations.
enum class Family : uint8_t { kC, kNew, kNewArray, kMmap, kApi };

Family family(uint8_t op) {
  switch (static_cast<fmt::AllocOp>(op)) {
    case fmt::AllocOp::kNew:
    case fmt::AllocOp::kDelete: return Family::kNew;
    case fmt::AllocOp::kNewArray:
    case fmt::AllocOp::kDeleteArray: return Family::kNewArray;
    case fmt::AllocOp::kMmap:
    case fmt::AllocOp::kMremap:
    case fmt::AllocOp::kMunmap:
    case fmt::AllocOp::kMremapFree: return Family::kMmap;
    case fmt::AllocOp::kApi:
    case fmt::AllocOp::kApiFree: return Family::kApi;
    default: return Family::kC;  // malloc's family, realloc's both sides
  }
}

bool op_is(uint8_t op, fmt::AllocOp a) { return op == static_cast<uint8_t>(a); }

// The second half of a move (realloc, reallocarray, mremap): its first half
// told the old block freed.
bool is_move(uint8_t op) {
  return op_is(op, fmt::AllocOp::kRealloc) || op_is(op, fmt::AllocOp::kReallocArray) ||
         op_is(op, fmt::AllocOp::kMremap);
}
bool is_move_free(uint8_t op) { return op_is(op, fmt::AllocOp::kReallocFree) || op_is(op, fmt::AllocOp::kMremapFree); }

// An event as kept per thread until the merge: 32 bytes.
constexpr uint64_t kPtrMask = (uint64_t{1} << 48) - 1;
struct Stored {
  uint64_t tick;
  uint64_t ptr_op;  // ptr[0:48) | op << 48 | alloc << 56
  uint64_t size;
  uint32_t path, tag;
};

struct Event {
  uint64_t tick;
  uint32_t thread, process;
  uint32_t path;  // node
  uint32_t tag;
  bool alloc;
  uint8_t op;
  uint64_t ptr, size;
};

// Modules that are not where a program's allocations come from: the C and
// C++ libraries, the loader, callscope's own. A block is counted in the
// nearest module on its path that is none of these.
bool system_module(const std::string& path) {
  const std::string base = path.substr(path.rfind('/') + 1);
  for (const char* p : {"libc.so", "libc-", "libstdc++", "libc++", "libgcc_s", "ld-linux", "ld-musl", "libcallscope"})
    if (base.rfind(p, 0) == 0) return true;
  return false;
}

// The call path tree and its functions, modules, tags.
class Paths {
 public:
  Paths(MemoryModel& m, const fmt::TraceReader& trace) : m_(m), trace_(trace), map_(trace.modules()) {
    m_.modules.push_back("");
    m_.tags.push_back("");
  }
  uint32_t root(uint32_t process) {
    auto [it, fresh] = roots_.try_emplace(process, 0);
    if (fresh) it->second = add(kMemoryNoNode, process, 0, 0);
    return it->second;
  }
  uint32_t child(uint32_t parent, uint64_t fn, uint64_t tick) {
    // A function calls the same callee again and again: the last one found
    // under each node answers most lookups.
    Last& last = last_[parent];
    if (last.fn == fn && last.node != kMemoryNoNode) return last.node;
    auto [it, fresh] = children_.try_emplace(ChildKey{parent, fn}, 0);
    if (fresh) it->second = add(parent, m_.paths[parent].process, fn, tick);
    last_[parent] = {fn, it->second};  // `last` may have moved (add() grows last_)
    return it->second;
  }
  // Tag `id` of `process` (0: none) as an index in m.tags.
  uint32_t tag(uint32_t process, uint64_t id) {
    if (id == 0) return 0;
    auto [it, fresh] = tag_of_.try_emplace({process, id}, 0);
    if (fresh) {
      std::string text = "[tag " + std::to_string(id) + "]";  // its text lost (a damaged trace)
      for (const fmt::MarkInfo& t : trace_.tags())
        if (t.record.process_index == process && t.record.id == id) text = t.text;
      if (text.empty()) return it->second = 0;  // an empty tag is no tag
      auto [named, added] = tag_index_.try_emplace(text, static_cast<uint32_t>(m_.tags.size()));
      if (added) m_.tags.push_back(text);
      it->second = named->second;
    }
    return it->second;
  }

 private:
  uint32_t add(uint32_t parent, uint32_t process, uint64_t fn, uint64_t tick) {
    MemoryPathNode n;
    n.parent = parent;
    n.process = process;
    n.fn = fn;
    n.tick = tick;
    n.depth = parent == kMemoryNoNode ? 0 : m_.paths[parent].depth + 1;
    auto [f, fresh] = function_of_.try_emplace({process, fn}, static_cast<uint32_t>(m_.functions.size()));
    if (fresh) m_.functions.push_back({process, fn, tick});
    n.function = f->second;
    n.module = parent == kMemoryNoNode ? 0 : m_.paths[parent].module;
    if (fn != 0) {
      const int64_t mod = map_.at(process, fn, tick);
      if (mod >= 0 && !system_module(trace_.modules()[mod].path)) {
        const std::string& path = trace_.modules()[mod].path;
        const std::string base = path.substr(path.rfind('/') + 1);
        auto [it, added] = module_index_.try_emplace(base, static_cast<uint32_t>(m_.modules.size()));
        if (added) m_.modules.push_back(base);
        n.module = it->second;
      }
    }
    m_.paths.push_back(n);
    last_.push_back({});
    return static_cast<uint32_t>(m_.paths.size() - 1);
  }
  struct ChildKey {
    uint32_t parent;
    uint64_t fn;
    bool operator==(const ChildKey&) const = default;
  };
  struct ChildHash {
    size_t operator()(const ChildKey& k) const { return std::hash<uint64_t>()(k.fn * 0x9e3779b97f4a7c15ull ^ k.parent); }
  };
  struct Last {
    uint64_t fn = 0;
    uint32_t node = kMemoryNoNode;
  };
  std::vector<Last> last_;
  MemoryModel& m_;
  const fmt::TraceReader& trace_;
  fmt::ModuleMap map_;
  std::map<uint32_t, uint32_t> roots_;
  std::unordered_map<ChildKey, uint32_t, ChildHash> children_;
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> function_of_;
  std::map<std::string, uint32_t> module_index_;
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> tag_of_;
  std::map<std::string, uint32_t> tag_index_;
};

constexpr uint32_t kNoBlock = ~0u;

// When each process's memory begins and ends. A fork child's begins at the
// fork: its record's start (finalize takes it from the child's runtime,
// which starts right after fork), not before its threads' (a trace written
// by hand), nor after its first memory event. It ends at its record's end
// or at its last memory event, whichever is later, so that none of its
// events comes after its end.
std::vector<MemoryProcess> process_spans(const fmt::TraceReader& trace,
                                         const std::vector<BigVector<Stored>>& per_thread) {
  size_t n = trace.processes().size();
  for (const fmt::ThreadInfo& t : trace.threads()) n = std::max<size_t>(n, t.record.process_index + size_t{1});
  std::vector<MemoryProcess> ps(n);
  std::vector<uint64_t> first_thread(n, kMemoryNever), first_event(n, kMemoryNever), last_event(n, 0);
  for (uint32_t ti = 0; ti < trace.threads().size(); ++ti) {
    const uint32_t p = trace.threads()[ti].record.process_index;
    first_thread[p] = std::min(first_thread[p], trace.threads()[ti].record.start_tick);
    if (per_thread[ti].empty()) continue;
    first_event[p] = std::min(first_event[p], per_thread[ti].front().tick);
    last_event[p] = std::max(last_event[p], per_thread[ti].back().tick);
  }
  for (size_t p = 0; p < n; ++p) {
    MemoryProcess& mp = ps[p];
    if (p < trace.processes().size()) {
      const fmt::ProcessRecord& r = trace.processes()[p].record;
      mp.start_tick = r.start_tick;
      mp.end_tick = r.end_tick;
      if (r.parent_index >= 0 && static_cast<size_t>(r.parent_index) < n && static_cast<size_t>(r.parent_index) != p)
        mp.parent = r.parent_index;
    }
    if (first_thread[p] != kMemoryNever) mp.start_tick = std::max(mp.start_tick, first_thread[p]);
    mp.start_tick = std::min(mp.start_tick, first_event[p]);
    mp.end_tick = std::max(mp.end_tick, last_event[p]);
  }
  return ps;
}

// The replay: blocks made, paired and ended in time order.
class Replay {
 public:
  Replay(MemoryModel& m, bool legacy_moves, size_t allocs)
      : m_(m), legacy_moves_(legacy_moves), at_(m.processes.size()), fork_step_(m.processes.size(), kMemoryNever) {
    prev_.reserve(allocs);
  }

  // Each a step of its own, in time order: a thread's memory event, a fork
  // (the child's copy of its parent's blocks begins), a process's end.
  // Until number(), a block's alloc_seq and free_seq are the steps of its
  // allocation and end.
  void event(const Event& e);
  void fork(uint32_t child) { fork_step_[child] = step_++; }
  void end(uint32_t process);

  // Places in the order (a failed move took one out): what alloc_seq and
  // free_seq mean once the replay is done (steps until then).
  void number() {
    for (uint64_t i = 0; i < m_.order.size(); ++i) {
      MemoryBlock& b = m_.blocks[m_.order[i] >> 1];
      (m_.order[i] & 1 ? b.free_seq : b.alloc_seq) = i;
    }
  }

 private:
  // A block's address within its process: callscope_alloc's blocks are an
  // address space of their own (a pool's first block may start where the
  // malloc'd or mmap'd pool does).
  static uint64_t key(uint64_t ptr, uint8_t op) { return ptr ^ (uint64_t{family(op) == Family::kApi} << 63); }
  bool live(uint32_t b) const { return m_.blocks[b].free_seq == kMemoryNever; }
  // The block process p holds at `k` now, or kNoBlock.
  uint32_t own_live(uint32_t p, uint64_t k) const {
    auto it = at_[p].find(k);
    return it != at_[p].end() && live(it->second) ? it->second : kNoBlock;
  }
  uint32_t held_at(uint32_t p, uint64_t k, uint64_t step, uint32_t depth) const;
  static uint64_t consumed_key(uint32_t p, uint32_t b) { return uint64_t{p} << 32 | b; }
  void end_block(uint32_t b, uint64_t tick, uint64_t step, uint8_t op, bool ended) {
    MemoryBlock& x = m_.blocks[b];
    x.free_tick = tick;
    x.free_seq = step;
    x.free_op = op;
    x.ended = ended;
    m_.order.push_back(uint64_t{b} << 1 | 1);
  }

  // A realloc or mremap that fails is told as its old block freed, then
  // that block again with size 0: it was never freed. Per thread, the last
  // such free, to take back; and an mremap of a mapping the trace never saw
  // made (a file's) is no block.
  struct Move {
    uint64_t ptr = 0;
    uint32_t block = 0;
    bool set = false;
    bool known = false;       // the old block was one the trace knew (its free ended it)
    bool counted = false;     // its free was counted (frees; unknown_frees and a mismatch when not known)
    bool mismatched = false;  // its free was listed as a mismatch
    bool inherited = false;   // `block` was the parent's, inherited at the fork: its free consumed the copy
  };
  void undo(const Move& mv, const Event& e);
  void free(const Event& e, uint64_t now, Move& slot);

  MemoryModel& m_;
  const bool legacy_moves_;
  uint64_t step_ = 0;
  // Per process, by address: the last block allocated there (live until
  // its free); prev_ the one before it at the same address. Kept after the
  // process ends: a child forked before may still free its copies.
  std::vector<std::unordered_map<uint64_t, uint32_t>> at_;
  BigVector<uint32_t> prev_;
  std::vector<uint64_t> fork_step_;
  std::unordered_map<uint64_t, uint64_t> consumed_;  // (child, inherited block) -> step of the child's free
  std::unordered_map<uint32_t, Move> last_move_;
};

// The block process p held at `k` at step `step`: its own, allocated by
// then and not yet freed, or one it inherited at its fork and had not
// freed by then. Its latest own block allocated by then decides when it
// has one at `k`: an address holds one block at a time, so an address
// reused in the process has no inherited block under it any more. (The
// walk goes back over the allocations at `k` made since `step`: few, in a
// parent that forks and waits.)
uint32_t Replay::held_at(uint32_t p, uint64_t k, uint64_t step, uint32_t depth) const {
  if (auto it = at_[p].find(k); it != at_[p].end()) {
    for (uint32_t b = it->second; b != kNoBlock; b = prev_[b]) {
      const MemoryBlock& x = m_.blocks[b];
      if (x.alloc_seq > step) continue;
      return x.free_seq == kMemoryNever || x.free_seq > step ? b : kNoBlock;
    }
  }
  const int32_t parent = m_.processes[p].parent;
  // depth: a damaged trace's processes may name each other as parents.
  if (parent < 0 || fork_step_[p] > step || depth > m_.processes.size()) return kNoBlock;
  const uint32_t b = held_at(static_cast<uint32_t>(parent), k, fork_step_[p], depth + 1);
  if (b == kNoBlock) return kNoBlock;
  auto c = consumed_.find(consumed_key(p, b));
  return c != consumed_.end() && c->second <= step ? kNoBlock : b;
}

void Replay::end(uint32_t process) {
  const uint64_t now = step_++;
  std::vector<uint32_t> left;
  for (const auto& [k, b] : at_[process])
    if (live(b)) left.push_back(b);
  std::sort(left.begin(), left.end());  // in the order they were allocated
  for (uint32_t b : left) end_block(b, m_.processes[process].end_tick, now, 0, true);
}

// Takes back the first half of a move that failed: the old block stays.
void Replay::undo(const Move& mv, const Event& e) {
  if (mv.known) {
    MemoryBlock& b = m_.blocks[mv.block];
    const uint64_t entry = uint64_t{mv.block} << 1 | 1;
    for (size_t i = m_.order.size(); i-- > 0;)
      if (m_.order[i] == entry) {
        m_.order.erase(m_.order.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    b.free_tick = b.free_seq = kMemoryNever;
    b.free_op = 0;
    // Later events' places moved down by one: renumbered at the end.
  } else if (mv.inherited) {
    consumed_.erase(consumed_key(e.process, mv.block));
    --m_.inherited_frees;
    --m_.processes[e.process].inherited_frees;
  } else if (mv.counted) {
    --m_.unknown_frees;
  }
  if (mv.counted) --m_.frees;
  if (mv.mismatched) {
    --m_.mismatch_count;
    for (size_t i = m_.mismatches.size(); i-- > 0;)
      if (m_.mismatches[i].thread == e.thread && m_.mismatches[i].ptr == e.ptr) {
        m_.mismatches.erase(m_.mismatches.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
  }
}

void Replay::event(const Event& e) {
  const uint64_t now = step_++;
  // A move's two halves are adjacent in their thread's stream.
  Move& slot = last_move_[e.thread];
  const Move pending = slot;
  slot.set = false;
  if (e.alloc && pending.set && (is_move(e.op) || op_is(e.op, fmt::AllocOp::kMoveFailed))) {
    // 1.5 told a failure as the move's op with size 0, at the old block
    // (1.6: kMoveFailed; a size 0 is a block of size 0).
    const bool failed =
        op_is(e.op, fmt::AllocOp::kMoveFailed) || (legacy_moves_ && e.size == 0 && pending.ptr == e.ptr);
    if (failed) {
      if (pending.ptr == e.ptr) undo(pending, e);
      return;
    }
    if (!pending.known && !pending.inherited && op_is(e.op, fmt::AllocOp::kMremap)) return;  // not a mapping we know
  }
  if (e.alloc && op_is(e.op, fmt::AllocOp::kMoveFailed)) return;  // no first half: nothing to take back
  if (!e.alloc) return free(e, now, slot);
  if (e.ptr == 0) return;  // an allocation that failed: no block
  MemoryBlock b;
  b.alloc_tick = e.tick;
  b.alloc_seq = now;
  b.size = e.size;
  b.path = e.path;
  b.tag = e.tag;
  b.thread = e.thread;
  b.op = e.op;
  const auto index = static_cast<uint32_t>(m_.blocks.size());
  auto [at, fresh] = at_[e.process].try_emplace(key(e.ptr, e.op), index);
  prev_.push_back(fresh ? kNoBlock : at->second);
  // A block allocated again without a free between: the first was freed
  // where the trace could not see (before it began, or by a path not
  // recorded); it is not counted twice.
  if (!fresh && live(at->second)) end_block(at->second, e.tick, now, 0, false);
  at->second = index;
  m_.blocks.push_back(b);
  m_.order.push_back(uint64_t{index} << 1);
}

void Replay::free(const Event& e, uint64_t now, Move& slot) {
  ++m_.frees;
  const uint64_t k = key(e.ptr, e.op);
  const uint32_t own = own_live(e.process, k);
  // Not its own: one it inherited at its fork, still live in it?
  const uint32_t inherited = own == kNoBlock ? held_at(e.process, k, now, 0) : kNoBlock;
  Move* move = nullptr;
  if (is_move_free(e.op)) {
    slot = {e.ptr, own != kNoBlock ? own : inherited, true, own != kNoBlock, true, false, inherited != kNoBlock};
    move = &slot;
  }
  auto mismatch = [&](uint8_t allocated_by, uint32_t alloc_path, uint64_t alloc_tick) {
    ++m_.mismatch_count;
    if (move) move->mismatched = true;
    if (m_.mismatches.size() < 1000)
      m_.mismatches.push_back({e.thread, e.tick, e.ptr, e.op, allocated_by, e.path, alloc_path, alloc_tick});
  };
  if (inherited != kNoBlock) {
    // The child's copy ends; the parent's block is untouched.
    consumed_[consumed_key(e.process, inherited)] = now;
    ++m_.inherited_frees;
    ++m_.processes[e.process].inherited_frees;
    const MemoryBlock& b = m_.blocks[inherited];
    if (family(b.op) != family(e.op)) mismatch(b.op, b.path, b.alloc_tick);
    return;
  }
  if (own == kNoBlock) {
    // munmap and mremap of what was never an anonymous mapping we saw
    // made (files, the loader's, thread stacks) are not the program's
    // blocks.
    if (family(e.op) == Family::kMmap) {
      --m_.frees;
      if (move) move->counted = false;
      return;
    }
    ++m_.unknown_frees;
    mismatch(0, kMemoryNoNode, 0);
    return;
  }
  const MemoryBlock& b = m_.blocks[own];
  if (family(b.op) != family(e.op)) mismatch(b.op, b.path, b.alloc_tick);
  end_block(own, e.tick, now, e.op, false);
}

}  // namespace

Result<MemoryModel> build_memory_model(format::TraceReader& trace) {
  MemoryModel m;
  Paths paths(m, trace);
  // Each thread's memory events, in its order.
  std::vector<BigVector<Stored>> per_thread(trace.threads().size());
  size_t total = 0, allocs = 0;
  for (uint32_t ti = 0; ti < trace.threads().size(); ++ti) {
    const uint32_t process = trace.threads()[ti].record.process_index;
    const uint32_t root = paths.root(process);
    std::vector<uint32_t> stack{root};  // nodes
    std::vector<uint32_t> tags;
    BigVector<Stored>& events = per_thread[ti];
    // Room for every event of the thread but its entries (a bound on its
    // memory events), up to 64 M (2 GiB of address space): pages never
    // written cost nothing, and the array is never copied.
    const auto& rec = trace.threads()[ti].record;
    events.reserve(std::min<uint64_t>(rec.events - std::min(rec.events, rec.calls), uint64_t{64} << 20));
    CALLSCOPE_CHECK(trace.for_each_event_batch(ti, [&](const fmt::TraceEvent* batch, size_t n) {
      for (const fmt::TraceEvent* e = batch; e != batch + n; ++e) {
        if (fmt::is_entry(e->kind)) {
          stack.push_back(paths.child(stack.back(), e->addr, e->tick));
        } else if (fmt::is_exit(e->kind)) {
          if (stack.size() > 1) stack.pop_back();
        } else if (e->kind == fmt::EventKind::kTag) {
          if (e->arg) tags.push_back(paths.tag(process, e->arg));
          else if (!tags.empty()) tags.pop_back();
        } else if (fmt::is_memory(e->kind)) {
          const bool alloc = e->kind == fmt::EventKind::kAlloc;
          allocs += alloc;
          events.push_back({e->tick, (e->addr & kPtrMask) | uint64_t{e->op} << 48 | uint64_t{alloc} << 56, e->arg,
                            stack.back(), tags.empty() ? 0u : tags.back()});
        }
      }
      return true;
    }));
    total += events.size();
  }
  m.has_memory_events = total != 0;
  m.first_tick = ~uint64_t{0};
  for (const auto& v : per_thread)
    if (!v.empty()) {
      m.first_tick = std::min(m.first_tick, v.front().tick);
      m.last_tick = std::max(m.last_tick, v.back().tick);
    }
  if (total == 0) m.first_tick = 0;
  m.processes = process_spans(trace, per_thread);
  m.blocks.reserve(allocs);
  m.order.reserve(total + allocs);  // every block's allocation and its end
  Replay replay(m, trace.header().version_minor < 6, allocs);

  // The processes' forks and ends among the events: a fork before the
  // child's events of its tick, an end after its process's.
  struct Bound {
    uint64_t tick;
    bool is_end;
    uint32_t process;
    bool operator<(const Bound& o) const {
      return tick != o.tick ? tick < o.tick : is_end != o.is_end ? !is_end : process < o.process;
    }
  };
  std::vector<Bound> bounds;
  for (uint32_t p = 0; p < m.processes.size(); ++p) {
    if (m.processes[p].parent >= 0) bounds.push_back({m.processes[p].start_tick, false, p});
    bounds.push_back({m.processes[p].end_tick, true, p});
  }
  std::sort(bounds.begin(), bounds.end());
  size_t next_bound = 0;
  auto bound = [&](const Bound& b) { b.is_end ? replay.end(b.process) : replay.fork(b.process); };
  auto bounds_before = [&](uint64_t tick) {
    for (; next_bound < bounds.size() && (bounds[next_bound].tick < tick || (bounds[next_bound].tick == tick &&
                                                                           !bounds[next_bound].is_end));
         ++next_bound)
      bound(bounds[next_bound]);
  };
  {
    using Cursor = std::pair<uint64_t, uint32_t>;  // tick, thread
    std::priority_queue<Cursor, std::vector<Cursor>, std::greater<Cursor>> next;
    std::vector<size_t> at(per_thread.size(), 0);
    for (uint32_t ti = 0; ti < per_thread.size(); ++ti)
      if (!per_thread[ti].empty()) next.push({per_thread[ti][0].tick, ti});
    while (!next.empty()) {
      const uint32_t ti = next.top().second;
      next.pop();
      const BigVector<Stored>& v = per_thread[ti];
      // This thread's run up to the next thread's tick.
      const uint64_t limit = next.empty() ? ~uint64_t{0} : next.top().first;
      const uint32_t other = next.empty() ? ~0u : next.top().second;
      const uint32_t process = trace.threads()[ti].record.process_index;
      size_t& i = at[ti];
      for (; i < v.size() && (v[i].tick < limit || (v[i].tick == limit && ti < other)); ++i) {
        const Stored& x = v[i];
        bounds_before(x.tick);
        replay.event({x.tick, ti, process, x.path, x.tag, (x.ptr_op >> 56) != 0, static_cast<uint8_t>(x.ptr_op >> 48),
                      x.ptr_op & kPtrMask, x.size});
      }
      if (i < v.size()) next.push({v[i].tick, ti});
      else BigVector<Stored>().swap(per_thread[ti]);
    }
  }
  for (; next_bound < bounds.size(); ++next_bound) bound(bounds[next_bound]);  // the ends after every event
  replay.number();
  return m;
}

}  // namespace callscope::analysis
