// The oracle's weak memory (store_buffer.hpp says the model and how).
#include "store_buffer.hpp"

#include <algorithm>
#include <iterator>
#include <new>

namespace ki::reference::detail {

namespace {
/// Runs f; running out of memory sets `failed` instead (the hooks' callers cannot take an
/// exception; the group then ends with a resource error).
template <class F>
void guarded(bool& failed, F&& f) {
  try {
    f();
  } catch (const std::bad_alloc&) {
    failed = true;
  }
}
}  // namespace

void store_buffer::start_group(std::int64_t items) {
  items_.assign(static_cast<std::size_t>(items), item_record{});
  for (item_record& r : items_) {
    r.seen[0] = now_;  // local memory: nothing published in it yet
    r.seen[1] = 0;     // global memory: nothing of the launch acquired yet
  }
  owner_ = -1;
  pending_ = 0;
  adjusted_.clear();
  out_of_memory_ = false;
}

void store_buffer::settle(std::int64_t item) {
  guarded(out_of_memory_, [&] {
    if (item != owner_) {
      stash();
      apply(item);  // (takes a pending acquire)
    } else if (items_[static_cast<std::size_t>(item)].acquire_pending) {
      acquire(item);
    }
  });
}

unsigned char store_buffer::published(unsigned char* p) const {
  if (const auto h = hist_.find(p); h != hist_.end()) return h->second.later.back().value;
  if (owner_ >= 0) {  // the owner's buffered store hides it: the byte under the entry
    const item_record& o = items_[static_cast<std::size_t>(owner_)];
    if (const auto f = o.at.find(p); f != o.at.end()) return o.entries[f->second].under;
  }
  return *p;
}

unsigned char store_buffer::view(const item_record& r, unsigned char* p, const history& h) const {
  std::uint64_t upto = r.seen[h.local ? 0 : 1];
  if (const auto f = r.own.find(p); f != r.own.end()) upto = std::max(upto, f->second);
  unsigned char v = h.before;
  for (const version& x : h.later) {
    if (x.time > upto) break;
    v = x.value;
  }
  return v;
}

void store_buffer::stash() {
  if (owner_ < 0) return;
  for (entry& e : items_[static_cast<std::size_t>(owner_)].entries) {
    e.value = *e.p;
    const auto h = hist_.find(e.p);
    *e.p = h != hist_.end() ? h->second.later.back().value : e.under;
  }
  for (unsigned char* p : adjusted_) *p = hist_.find(p)->second.later.back().value;
  adjusted_.clear();
  owner_ = -1;
}

void store_buffer::apply(std::int64_t item) {
  item_record& r = items_[static_cast<std::size_t>(item)];
  if (r.acquire_pending) {
    r.acquire_pending = false;
    --pending_;
    r.seen[0] = r.seen[1] = now_;
  }
  for (entry& e : r.entries) {
    e.under = *e.p;  // (P for a byte without versions; one with versions gets P from there)
    *e.p = e.value;
  }
  owner_ = item;
}

void store_buffer::load_versions(std::int64_t item, unsigned char* p, std::size_t n) {
  const item_record& r = items_[static_cast<std::size_t>(item)];
  guarded(out_of_memory_, [&] {
    for (std::size_t k = 0; k < n; ++k) {
      const auto h = hist_.find(p + k);
      if (h == hist_.end() || r.at.count(p + k) != 0) continue;  // (its own store: it sees that)
      const unsigned char v = view(r, p + k, h->second);
      if (p[k] == v) continue;
      p[k] = v;
      adjusted_.push_back(p + k);
    }
  });
}

void store_buffer::store(std::int64_t item, unsigned char* p, std::size_t n, bool local) {
  item_record& r = items_[static_cast<std::size_t>(item)];
  guarded(out_of_memory_, [&] {
    for (std::size_t k = 0; k < n; ++k) {
      const auto [it, added] = r.at.try_emplace(p + k, static_cast<std::uint32_t>(r.entries.size()));
      if (!added) continue;  // buffered already
      try {
        r.entries.push_back({p + k, 0, p[k], local});
      } catch (...) {
        r.at.erase(it);
        throw;
      }
    }
  });
}

void store_buffer::set_published(unsigned char* p, unsigned char v, bool local, std::int64_t publisher) {
  auto h = hist_.find(p);
  if (h == hist_.end()) h = hist_.emplace(p, history{published(p), local, {}}).first;
  h->second.later.push_back({now_, v});
  if (owner_ < 0) {
    *p = v;
    return;
  }
  if (publisher == owner_) return;                                        // the memory holds its value already
  if (items_[static_cast<std::size_t>(owner_)].at.count(p) != 0) return;  // it sees its own store
  *p = v;  // P; where the owner may not see it yet, its next load puts back the version it may
}

void store_buffer::publish(std::int64_t item, bool local, bool global) {
  item_record& r = items_[static_cast<std::size_t>(item)];
  if (r.entries.empty()) return;
  const bool mine = item == owner_;  // the memory holds its values
  std::size_t kept = 0;
  for (std::size_t k = 0; k < r.entries.size(); ++k) {
    const entry e = r.entries[k];
    if (!(e.local ? local : global)) {
      r.entries[kept++] = e;
      continue;
    }
    set_published(e.p, mine ? *e.p : e.value, e.local, item);
    r.own[e.p] = now_;  // it sees at least this version of the byte from now on
  }
  r.entries.resize(kept);
  r.at.clear();
  for (std::size_t k = 0; k < kept; ++k) r.at.emplace(r.entries[k].p, static_cast<std::uint32_t>(k));
}

void store_buffer::release(std::int64_t item) {
  guarded(out_of_memory_, [&] {
    ++now_;
    publish(item, true, true);
  });
}

void store_buffer::acquire(std::int64_t item) {
  guarded(out_of_memory_, [&] {
    item_record& r = items_[static_cast<std::size_t>(item)];
    if (r.acquire_pending) {
      r.acquire_pending = false;
      --pending_;
    }
    r.seen[0] = r.seen[1] = now_;
    if (item == owner_) {  // it sees every version now: the older ones it was shown go
      for (unsigned char* p : adjusted_)
        if (r.at.count(p) == 0) *p = hist_.find(p)->second.later.back().value;
      adjusted_.clear();
    }
  });
}

void store_buffer::barrier(bool local, bool global) {
  guarded(out_of_memory_, [&] {
    const std::int64_t owner = owner_;
    stash();
    ++now_;
    for (std::size_t k = 0; k < items_.size(); ++k) publish(static_cast<std::int64_t>(k), local, global);
    for (item_record& r : items_) {
      if (local) r.seen[0] = now_;
      if (global) r.seen[1] = now_;
    }
    if (pending_ == 0) forget_history(local, global);  // everybody sees everything of that memory
    if (owner >= 0) apply(owner);
  });
}

void store_buffer::sub_group_barrier(std::int64_t item) {
  release(item);
  item_record& r = items_[static_cast<std::size_t>(item)];
  if (!r.acquire_pending) {
    r.acquire_pending = true;
    ++pending_;
  }
}

void store_buffer::forget_history(bool local, bool global) {
  for (auto h = hist_.begin(); h != hist_.end();) {
    history& x = h->second;
    if (x.local ? !local : !global) {
      ++h;
    } else if (x.local) {
      h = hist_.erase(h);  // (no later group sees this group's local memory)
    } else {
      if (x.later.size() > 1) x.later.erase(x.later.begin(), x.later.end() - 1);
      ++h;
    }
  }
  if (local && global)
    for (item_record& r : items_) r.own.clear();  // (every version is seen: none needs a floor)
}

void store_buffer::end_group(bool publish_all) {
  stash();
  for (auto& r : items_) {
    for (const entry& e : r.entries) {
      if (e.local) continue;  // local memory ends with the group
      if (publish_all) {
        *e.p = e.value;
        hist_.erase(e.p);  // (its versions are out of date now)
        continue;
      }
      try {
        kept_.push_back({e.p, e.value});
      } catch (const std::bad_alloc&) {  // published now rather than lost
        *e.p = e.value;
        out_of_memory_ = true;
      }
    }
    r.entries.clear();
    r.at.clear();
  }
  for (auto h = hist_.begin(); h != hist_.end();) h = h->second.local ? hist_.erase(h) : std::next(h);
}

void store_buffer::end_launch() {
  hist_.clear();  // (the memory holds the published bytes)
  now_ = 0;
  for (const kept_store& s : kept_) *s.p = s.value;
  kept_.clear();
  kept_.shrink_to_fit();
}

}  // namespace ki::reference::detail
