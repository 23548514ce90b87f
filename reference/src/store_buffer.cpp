// The oracle's weak memory: store buffers per work-item (store_buffer.hpp says the model).
#include "store_buffer.hpp"

#include <new>

namespace ki::reference::detail {

void store_buffer::start_group(std::int64_t items) {
  if (items_.size() != static_cast<std::size_t>(items)) items_.resize(static_cast<std::size_t>(items));
  for (auto& b : items_) b.clear();
  owner_ = -1;
  out_of_memory_ = false;
}

void store_buffer::store(std::int64_t item, unsigned char* p, std::size_t n, bool local) {
  item_buffer& b = items_[static_cast<std::size_t>(item)];
  try {
    for (std::size_t k = 0; k < n; ++k) {
      const auto [it, added] = b.at.try_emplace(p + k, static_cast<std::uint32_t>(b.entries.size()));
      if (!added) continue;  // buffered already: its `under` is still the published byte
      try {
        b.entries.push_back({p + k, 0, p[k], local});
      } catch (...) {
        b.at.erase(it);
        throw;
      }
    }
  } catch (const std::bad_alloc&) {  // (the hooks cannot throw: reported when the group ends)
    out_of_memory_ = true;
  }
}

void store_buffer::switch_to(std::int64_t item) {
  stash();
  owner_ = item;
  for (entry& e : items_[static_cast<std::size_t>(item)].entries) {
    e.under = *e.p;
    *e.p = e.value;
  }
}

void store_buffer::stash() {
  if (owner_ < 0) return;
  for (entry& e : items_[static_cast<std::size_t>(owner_)].entries) {
    e.value = *e.p;
    *e.p = e.under;
  }
  owner_ = -1;
}

void store_buffer::set_published(unsigned char* p, unsigned char v) {
  if (owner_ >= 0) {
    item_buffer& o = items_[static_cast<std::size_t>(owner_)];
    if (const auto f = o.at.find(p); f != o.at.end()) {
      o.entries[f->second].under = v;  // the owner still sees its own store
      return;
    }
  }
  *p = v;
}

void store_buffer::publish(std::int64_t item, bool local, bool global) {
  item_buffer& b = items_[static_cast<std::size_t>(item)];
  if (b.entries.empty()) return;
  const bool mine = item == owner_;  // the memory holds its values already
  std::size_t kept = 0;
  for (const entry& e : b.entries) {
    if (e.local ? local : global) {
      if (!mine) set_published(e.p, e.value);
    } else {
      b.entries[kept++] = e;
    }
  }
  b.entries.resize(kept);
  b.at.clear();
  for (std::size_t k = 0; k < kept; ++k) b.at.emplace(b.entries[k].p, static_cast<std::uint32_t>(k));
}

void store_buffer::release(std::int64_t item) { publish(item, true, true); }

void store_buffer::barrier(bool local, bool global) {
  // The owner last: the others' bytes are published under its entries, then its own over them.
  for (std::size_t k = 0; k < items_.size(); ++k)
    if (static_cast<std::int64_t>(k) != owner_) publish(static_cast<std::int64_t>(k), local, global);
  if (owner_ >= 0) publish(owner_, local, global);
}

void store_buffer::end_group(bool publish_all) {
  stash();
  for (auto& b : items_) {
    for (const entry& e : b.entries) {
      if (e.local) continue;  // local memory ends with the group
      if (publish_all) {
        *e.p = e.value;
        continue;
      }
      try {
        kept_.push_back({e.p, e.value});
      } catch (const std::bad_alloc&) {  // publish it now rather than lose it
        *e.p = e.value;
        out_of_memory_ = true;
      }
    }
    b.clear();
  }
}

void store_buffer::end_launch() {
  for (const kept_store& s : kept_) *s.p = s.value;
  kept_.clear();
  kept_.shrink_to_fit();
}

std::size_t store_buffer::buffered() const {
  std::size_t n = kept_.size();
  for (const auto& b : items_) n += b.entries.size();
  return n;
}

}  // namespace ki::reference::detail
