// The oracle's checked-access mode: race detection for KI and KA kernels
// (ki/cpu/race_detector.hpp says how it works).
#include <ki/cpu/race_detector.hpp>

#include <new>

#include <algorithm>
#include <cstring>
#include <functional>

#include <ki/cpu/support.hpp>

namespace ki::detail::cpu {
using i64 = std::int64_t;

namespace {
constexpr std::size_t max_instances = 8;
}  // namespace

void race_detector::start_group(const checked_group& g, i64 group_linear, xyz<i64> group_id) {
  g_ = g;
  group_linear_ = group_linear;
  group_id_ = group_id;
  checked::forget_calls();  // (the shadow call stacks: what a fault or an exception left)
  races_ = 0;
  race_instances_.clear();
  race_where_.clear();
  first_race_.reset();
  // (empty unless the kernel was compiled in checked mode)
  if (!shadow_.empty()) {
    shadow_.clear();
    shadow_cache_.fill({});
  }
  if (!group_globals_.empty()) group_globals_.clear();
  drop_pending();
  deferred_.size = 0;
  names_.clear_arrays();
  plain_owner_ = -1;
  ka_epoch_ = ~0ull;
  out_of_memory_ = false;
  allocs_.refresh();
  round_flags_ = local_bit | global_bit;  // (a failed group may have left a narrowed round)
  if (sg_passes_.size() != static_cast<std::size_t>(g.count)) sg_passes_.assign(static_cast<std::size_t>(g.count), {});
  else if (sg_dirty_)
    for (auto& h : sg_passes_) h.count = 0;
  sg_dirty_ = false;
  sg_serial_ = 0;
}

void race_detector::drop_pending() {
  deferred_.size = 0;
  accesses_.clear();
  access_bytes_.clear();
  access_index_.clear();
  access_owner_ = -1;
}

void race_detector::sub_group_barrier_passed(i64 linear, i64 begin, i64 lanes) {
  if (weak_ != nullptr) weak_->sub_group_barrier(linear);  // (publishes more than its segment needs)
  // A serial above every access judged so far (accesses are judged at the latest when their
  // work-item reaches its next sync point, so before the barrier resolves).
  const sg_pass now{++sg_serial_, begin, lanes};
  sg_history& h = sg_passes_[static_cast<std::size_t>(linear)];
  std::size_t kept = 0;
  for (std::size_t k = 0; k < h.count; ++k) {
    const sg_pass& p = h.pass[k];
    if (p.begin >= begin && p.begin + p.lanes <= begin + lanes) continue;  // covered by the new one
    h.pass[kept++] = p;
  }
  if (kept == max_sg_passes) {  // (not reached with valid widths: see sg_history)
    std::copy(h.pass + 1, h.pass + kept, h.pass);
    --kept;
  }
  h.pass[kept++] = now;
  h.count = kept;
  sg_dirty_ = true;
}

void race_detector::access(const checked::array_info& a, i64 index, const source_location& where) {
  const i64 it = running();
  if (it < 0) return;
  if (it != access_owner_) {
    flush();
    access_owner_ = it;
  }
  const auto* addr = static_cast<const unsigned char*>(a.data) + index * static_cast<i64>(a.element_size);
  if (g_.on_access != nullptr) [[unlikely]]
    g_.on_access(g_.on_access_ctx, item_at(it), addr, index, where);
  if (const std::size_t k = find_access(addr); k != npos) {
    pending_access& p = accesses_[k];
    if (g_.ka != nullptr && !p.lead_settled) {  // (KA: the element's second access)
      p.lead_settled = true;
      p.leading_read = std::memcmp(addr, access_bytes_.data() + p.old, p.size) == 0;
    }
    p.last = where;
    return;
  }
  accesses_.push_back({addr, a.element_size, access_bytes_.size(), a.count, index, where, where, false, false, false});
  if (g_.fast_point != nullptr) *g_.fast_point = g_.closed;  // the next barrier flushes them (its slow path)
  access_bytes_.insert(access_bytes_.end(), addr, addr + a.element_size);
}

void race_detector::name(const checked::array_info& a, i64 index, const source_location& where) {
  const i64 it = running();
  if (it < 0) return;
  if (it != plain_owner_) {
    names_.clear_subscripts();
    plain_owner_ = it;
  }
  try {
    names_.add(a, index, where);
  } catch (...) {  // (the hooks' callers expect no exception)
    out_of_memory_ = true;
  }
}

void race_detector::plain(const void* addr, std::size_t size, bool write, const void* pc) {
  if (size == 0) return;
  const i64 it = running();
  if (it < 0) return;
  // Which memory: an element of a subscripted array, local memory, an allocation; else none.
  // (The misses, most accesses of a kernel, cost a few comparisons and a binary search, here,
  // without the frame of the recording below.)
  const local_alloc* local = local_of(addr);
  const checked::array_info* named = names_.array_of(addr);
  const allocation_view::range* alloc = local == nullptr && named == nullptr ? allocs_.find(addr) : nullptr;
  if (local == nullptr && named == nullptr && alloc == nullptr)
    return;                // not memory this mode checks (the stack, the kernel object, the executor's state)
  if (weak_ != nullptr) {  // weak memory: the store buffers instead of the race record
    weak_->run(it);
    auto* bytes = static_cast<unsigned char*>(const_cast<void*>(addr));
    if (write) weak_->store(it, bytes, size, local != nullptr);
    else weak_->load(it, bytes, size);
    return;
  }
  record_plain(it, addr, size, write, pc, local, named, alloc);
}

void race_detector::ordering(const void* p, int order, bool writes) {
  (void)p;
  if (weak_ == nullptr) return;
  const i64 it = running();
  if (it < 0) return;
  weak_->run(it);                // (an atomic reads and writes the memory as this item sees it)
  const int o = order & 0xFFFF;  // (GCC may add hardware lock elision bits)
  // A release: a store, read-modify-write or fence with release semantics (a load has none,
  // seq_cst or not). An acquire: a load, read-modify-write or fence with acquire semantics.
  if (writes && (o == __ATOMIC_RELEASE || o == __ATOMIC_ACQ_REL || o == __ATOMIC_SEQ_CST)) weak_->release(it);
  if (o == __ATOMIC_ACQUIRE || o == __ATOMIC_CONSUME || o == __ATOMIC_ACQ_REL || o == __ATOMIC_SEQ_CST)
    weak_->acquire(it);
}

void race_detector::record_plain(i64 it, const void* addr, std::size_t size, bool write, const void* pc,
                                 const local_alloc* local, const checked::array_info* named,
                                 const allocation_view::range* alloc) {
  const auto* b = static_cast<const unsigned char*>(addr);
  std::optional<array_names::subscript> sub;
  if (plain_owner_ == it) sub = names_.take(addr);
  if (sub) named = &sub->a;
  const accessed_elements a = local != nullptr ? elements_of(b, size, named, local->p, local->bytes)
                                               : elements_of(b, size, named, alloc->begin, alloc->bytes);
  try {
    if (it != access_owner_) {
      flush();  // (another item's pending accesses, subscripts-only translation units)
      access_owner_ = it;
    }
    if (deferred_.size != 0) settle();
    const source_location where = sub ? sub->where : source_location{};
    const void* caller = checked::caller_of(pc);
    for (i64 index = a.first; index <= a.last; ++index) {
      const unsigned char* e = a.element(index);
      const access_rec mine{it, where, sg_serial_, pc, touch::read, caller};
      if (g_.on_access != nullptr) [[unlikely]]
        g_.on_access(g_.on_access_ctx, item_at(it), e, index, loc(mine));
      if (write && !g_.same_value_race && a.element_size <= sizeof deferred_.old && a.first == a.last) {
        // same_value_writes::allowed: judged once the new bytes are there.
        deferred_.addr = e;
        deferred_.size = a.element_size;
        std::memcpy(deferred_.old, e, a.element_size);
        deferred_.rec = mine;
        deferred_.count = a.count;
        deferred_.index = index;
        if (g_.fast_point != nullptr) *g_.fast_point = g_.closed;  // (the next barrier settles it first)
        continue;
      }
      judge(e, mine, write, !write, a.count, index, local_of(e), nullptr);
    }
  } catch (...) {  // (the hooks' callers expect no exception: reported when the group ends)
    out_of_memory_ = true;
  }
}

void race_detector::settle() {
  const deferred_write d = deferred_;
  deferred_.size = 0;
  const bool changed = std::memcmp(d.addr, d.old, d.size) != 0;
  judge(d.addr, d.rec, changed, false, d.count, d.index, local_of(d.addr), nullptr, true);
}

void race_detector::atomic(const void* p) {
  names_.forget(p);
  if (running() != access_owner_) return;
  if (const std::size_t k = find_access(p); k != npos) accesses_[k].atomic = true;
}

std::size_t race_detector::find_access(const void* addr) {
  if (accesses_.size() <= 32) {
    for (std::size_t k = accesses_.size(); k-- > 0;)
      if (accesses_[k].addr == addr) return k;
    return npos;
  }
  for (std::size_t k = access_index_.size(); k < accesses_.size(); ++k) access_index_.emplace(accesses_[k].addr, k);
  const auto f = access_index_.find(addr);
  return f == access_index_.end() ? npos : f->second;
}

// Ordered within a barrier interval: the same work-item, or a sub_group_barrier that r's
// work-item passed after r and whose lanes include mine (then I passed it too, with it, and my
// access being judged now comes after it).
bool race_detector::ordered(const access_rec& r, i64 mine) const {
  if (r.item == mine) return true;
  if (g_.items == nullptr) return false;  // (KA: no sub-group barriers)
  const item_state& me = item_at(mine);
  const item_state& other = item_at(r.item);
  if (other.sub_group_id != me.sub_group_id) return false;
  const sg_history& h = sg_passes_[static_cast<std::size_t>(r.item)];
  const i64 lane = me.sub_group_lane;
  for (std::size_t k = 0; k < h.count; ++k) {
    const sg_pass& p = h.pass[k];
    if (p.serial > r.at && lane >= p.begin && lane < p.begin + p.lanes) return true;
  }
  return false;
}

std::string race_detector::describe(i64 index, i64 count, const local_alloc* local) const {
  if (local && is_private(local)) local = nullptr;  // (named as the array it is, like global memory)
  if (local && local->where.line == 0) return "element " + std::to_string(index) + " of " + local->where.file;
  if (local) return "element " + std::to_string(index) + " of " + g_.words->local + " at " + to_string(local->where);
  return "element " + std::to_string(index) + " of a ki::span of " + std::to_string(count) + " elements";
}

void race_detector::race(const char* kind, const access_rec& a, const char* a_did, const access_rec& b,
                         const char* b_did, const void* addr, i64 index, i64 count, const local_alloc* local) {
  const source_location* declared =
      g_.launch != nullptr && !g_.launch->intended.empty() ? g_.launch->intended.match(addr, loc(a), loc(b)) : nullptr;
  race_tally* tally = declared == nullptr && g_.launch != nullptr ? g_.launch->tally : nullptr;
  if (declared == nullptr) ++races_;
  if (declared != nullptr || tally != nullptr || race_instances_.size() < max_instances || g_.on_race != nullptr) {
    std::string text = std::string(kind) + " race on " + describe(index, count, local) + ": work-item " +
                       to_string(local_id_of(a.item)) + " " + a_did + " at " + to_string(loc(a)) +
                       helper_note(a.pc, loc(a), a.caller) + ", then work-item " + to_string(local_id_of(b.item)) +
                       " " + b_did + " at " + to_string(loc(b)) + helper_note(b.pc, loc(b), b.caller) + ", with no " +
                       g_.words->sync + " between them";
    if (a.how == touch::read_or_same_value_write || b.how == touch::read_or_same_value_write)
      text += ambiguous_read_note;
    if (declared != nullptr) {  // the kernel means it: a warning, not a failure
      count_intended(*g_.warnings, *declared, text);
      return;
    }
    if (tally != nullptr) tally->add(group_linear_, kind, loc(a), loc(b), text);
    if (g_.on_race != nullptr) [[unlikely]]
      g_.on_race(g_.on_access_ctx, race_note{kind, a.item, b.item, loc(a), loc(b), addr, index, text});
    if (race_instances_.size() < max_instances) race_instances_.push_back(std::move(text));
  }
  if (!first_race_) {
    first_race_.emplace(loc(b), local_id_of(b.item));
    race_where_ = {to_string(loc(a))};
    if (to_string(loc(b)) != race_where_.front()) race_where_.push_back(to_string(loc(b)));
  }
}

void race_detector::flush_accesses() {
  const i64 me = access_owner_;
  for (const pending_access& p : accesses_) {
    if (p.atomic) continue;
    const bool changed = std::memcmp(p.addr, access_bytes_.data() + p.old, p.size) != 0;
    if (changed && p.leading_read) {  // (KA) first a read, named by its line; then the write
      const access_rec read{me, p.first, sg_serial_, nullptr};
      judge(p.addr, read, false, false, p.count, p.index, local_of(p.addr), &p.first);
    }
    // A write is named by the last access of the segment, a read by the first (what comparing
    // bytes at the segment's end can tell).
    const access_rec mine{me, changed ? p.last : p.first, sg_serial_, nullptr};
    judge(p.addr, mine, changed, false, p.count, p.index, local_of(p.addr), &p.first);
  }
  drop_pending();
}

void race_detector::judge(const void* addr, access_rec mine, bool changed, bool real_read, i64 count, i64 index,
                          const local_alloc* local, const source_location* first, bool known_write) {
  const i64 me = mine.item;
  mine.how = touch_of(changed, real_read, known_write);
  shadow& sh = shadow_of(addr);
  const std::uint64_t interval = local != nullptr ? local_interval_ : global_interval_;
  if (sh.epoch != interval) {
    sh.epoch = interval;
    sh.writer.item = sh.readers[0].item = sh.readers[1].item = -1;
  }
  if (changed) {
    if (sh.writer.item >= 0 && !ordered(sh.writer, me)) {
      race("write-write", sh.writer, "wrote it", mine, "wrote it", addr, index, count, local);
    } else {
      for (const access_rec& r : sh.readers)
        if (r.item >= 0 && !ordered(r, me)) {
          race("read-write", r, did(r.how), mine, "wrote it", addr, index, count, local);
          break;
        }
    }
    sh.writer = mine;
    sh.written = true;
  } else {
    // Unchanged bytes: a load (real_read), or, without the hooks, a load or a write of the value
    // the element held (then a race only by the same-value policy).
    if (sh.writer.item >= 0 && !ordered(sh.writer, me)) {
      if (real_read || g_.same_value_race)
        race(mine.how == touch::same_value_write ? "write-write"
             : g_.words->in_order                ? "write-read"
                                                 : "read-write",
             sh.writer, "wrote it", mine, did(mine.how), addr, index, count, local);
    } else if (local != nullptr && !sh.written && !local->filled) {
      uninitialized_read(first != nullptr ? *first : loc(mine), index, *local, me);
    }
    if (sh.readers[0].item < 0) sh.readers[0] = mine;
    else if (sh.readers[0].item != mine.item && sh.readers[1].item < 0) sh.readers[1] = mine;
  }
  if (local == nullptr) {
    auto [g, fresh] = group_globals_.try_emplace(addr);
    // The group's record of the element: its first access, its first write, or a read that
    // follows an access that may have been a same-value write (under the policy `allowed` only
    // the read can race with another group's write).
    if (fresh || (changed && !g->second.wrote) ||
        (!g->second.wrote && may_keep(g->second.how) && mine.how == touch::read))
      g->second = global_access{addr,       group_linear_, group_id_, local_id_of(me), changed,    mine.how,
                                mine.where, count,         index,     mine.pc,         mine.caller};
  }
}

void race_detector::uninitialized_read(const source_location& where, i64 index, const local_alloc& l, i64 item) {
  const bool local = !is_private(&l);
  const char* kind = local ? "uninitialized-local-read" : "uninitialized-private-read";
  auto& e = (*g_.warnings)[to_string(where) + " " + kind];
  if (e.count == 0) {
    e.kind = kind;
    e.where = to_string(where);
    e.message = local ? "read at " + to_string(where) + " of " + g_.words->local + " at " + to_string(l.where) +
                            " before any work-item of the group wrote the element (e.g. element " +
                            std::to_string(index) + "; unspecified values, filled with " + g_.fill + ")"
                      : "read at " + to_string(where) + " of private memory at " + to_string(l.where) +
                            " before its work-item wrote the element (e.g. element " + std::to_string(index) +
                            " of work-item " + to_string(local_id_of(item)) + "; unspecified values, filled with " +
                            g_.fill + ")";
  }
  ++e.count;
}

std::optional<group_failure> race_detector::finish(const char* kernel_name, global_log& globals) {
  flush();  // the last work-item's accesses
  if (weak_ != nullptr && weak_->out_of_memory()) out_of_memory_ = true;
  if (out_of_memory_) {
    out_of_memory_ = false;
    group_globals_.clear();
    return group_failure{kernel_error(kernel_error::kind::resource, group_id_, {0, 0, 0}, "",
                                      std::string(g_.prefix) + ": kernel '" + std::string(kernel_name) +
                                          "': checked-access mode ran out of memory recording the work-group's "
                                          "accesses: check a smaller launch")};
  }
  // (race_reports::all: the group's global accesses still join the launch's record)
  if (first_race_ && globals.tally == nullptr) return race_failure(kernel_name);
  if (!group_globals_.empty()) {
    std::lock_guard lock(globals.m);
    for (const auto& [addr, a] : group_globals_) {
      bool merged = false;
      try {
        merged = globals.merge(a);
      } catch (const std::bad_alloc&) {  // (on the runner's own stack: not a work-item's failure)
        group_globals_.clear();
        return group_failure{kernel_error(kernel_error::kind::resource, group_id_, {0, 0, 0}, "",
                                          std::string(g_.prefix) + ": kernel '" + std::string(kernel_name) +
                                              "': checked-access mode ran out of memory recording the launch's "
                                              "accesses of global memory (" +
                                              std::to_string(globals.elements.size()) +
                                              " elements so far): check a smaller launch")};
      }
      if (!merged) {
        const std::string msg =
            std::string(g_.prefix) + ": kernel '" + std::string(kernel_name) +
            "': checked-access mode would need more than " + std::to_string(globals.limit) +
            " records of elements of global memory to find races between the launch's work-groups "
            "(about " +
            std::to_string(sizeof(global_element) + 4 * sizeof(void*)) +
            " bytes each; the limit is ki::reference::backend::checked_elements or KI_REFERENCE_CHECKED_ELEMENTS): "
            "check a smaller launch, or raise the limit";
        group_globals_.clear();
        return group_failure{kernel_error(kernel_error::kind::resource, group_id_, {0, 0, 0}, "", msg)};
      }
    }
  }
  if (first_race_) return race_failure(kernel_name);
  return std::nullopt;
}

group_failure race_detector::race_failure(const char* kernel_name) const {
  std::string msg = std::string(g_.prefix) + ": kernel '" + std::string(kernel_name) + "': work-group " +
                    to_string(group_id_) + ": " + race_instances_.front();
  if (races_ > 1) msg += " (" + std::to_string(races_ - 1) + " more in this work-group)";
  msg += " [checked-access mode]";
  return group_failure{
      kernel_error(kernel_error::kind::data_race, group_id_, first_race_->second, to_string(first_race_->first), msg),
      races_, race_instances_, race_where_};
}

bool global_log::merge(const global_access& a) {
  if (!same_value_race && !a.wrote && may_keep(a.how)) return true;  // (races with no write)
  auto it = elements.find(a.addr);
  if (it == elements.end()) {
    if (limit != 0 && elements.size() >= limit) {
      overflowed = true;
      return false;
    }
    global_access none = a;
    none.group = -1;
    it = elements.emplace(a.addr, global_element{{a, none}, none}).first;
    if (a.wrote) it->second.writer = a;
    return true;
  }
  global_element& e = it->second;
  // (each group merges an element once: its record says whether it ever wrote it)
  if (a.group < e.lo[0].group) {
    e.lo[1] = e.lo[0];
    e.lo[0] = a;
  } else if (a.group != e.lo[0].group && (e.lo[1].group < 0 || a.group < e.lo[1].group)) {
    e.lo[1] = a;
  }
  if (a.wrote && (e.writer.group < 0 || a.group < e.writer.group)) e.writer = a;
  return true;
}

std::optional<group_failure> inter_group_race(const char* prefix, const char* kernel_name, global_log& log,
                                              warning_sites& intended) {
  // The racy elements: some group wrote, two groups touched. Reported: the lowest address of
  // those not declared intended.
  struct described {
    const global_access *a, *b;
    source_location a_where, b_where;
    bool writes;
    std::string inst;
  };
  const auto describe = [](const global_element& e) {
    const global_access& w = e.writer;
    const global_access& o = e.lo[0].group != w.group ? e.lo[0] : e.lo[1];
    const global_access& a = o.group < w.group ? o : w;  // in group order
    const global_access& b = o.group < w.group ? w : o;
    described d{&a,
                &b,
                access_location(a.pc, a.where),
                access_location(b.pc, b.where),
                o.wrote || o.how == touch::same_value_write,
                {}};
    d.inst = std::string(d.writes ? "write-write" : "read-write") + " race between work-groups on element " +
             std::to_string(a.index) + " of a ki::span of " + std::to_string(a.count) + " elements: work-item " +
             to_string(a.local_id) + " of work-group " + to_string(a.group_id) + " " + did(a.how) + " at " +
             to_string(d.a_where) + helper_note(a.pc, d.a_where, a.caller) + ", work-item " + to_string(b.local_id) +
             " of work-group " + to_string(b.group_id) + " " + did(b.how) + " at " + to_string(d.b_where) +
             helper_note(b.pc, d.b_where, b.caller);
    return d;
  };
  const global_element* first = nullptr;
  const void* first_addr = nullptr;
  std::int64_t count = 0;
  for (const auto& [addr, e] : log.elements) {
    if (e.writer.group < 0 || e.lo[1].group < 0) continue;
    if (!log.intended.empty() || log.tally != nullptr) {
      const described d = describe(e);
      if (const source_location* declared = log.intended.match(addr, d.a_where, d.b_where)) {
        count_intended(intended, *declared, d.inst);
        continue;
      }
      if (log.tally != nullptr)
        log.tally->add(-1, d.writes ? "write-write" : "read-write", d.a_where, d.b_where, d.inst);
    }
    ++count;
    if (first == nullptr || std::less<const void*>()(addr, first_addr)) first = &e, first_addr = addr;
  }
  if (first == nullptr) return std::nullopt;
  const described d = describe(*first);
  const global_access& a = *d.a;
  const global_access& b = *d.b;
  const bool ambiguous = a.how == touch::read_or_same_value_write || b.how == touch::read_or_same_value_write;
  const std::string msg = std::string(prefix) + ": kernel '" + std::string(kernel_name) + "': " + d.inst +
                          " (nothing orders the work-groups of a launch: use atomics, or separate launches)" +
                          (ambiguous ? ambiguous_read_note : "");
  group_failure found{kernel_error(kernel_error::kind::data_race, b.group_id, b.local_id, to_string(d.b_where), msg),
                      count,
                      {d.inst},
                      {to_string(d.a_where)}};
  if (to_string(d.b_where) != to_string(d.a_where)) found.where.push_back(to_string(d.b_where));
  return found;
}

}  // namespace ki::detail::cpu
