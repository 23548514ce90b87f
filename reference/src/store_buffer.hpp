// Private: the oracle's weak memory (ki::reference::memory_model::weak; docs/debugging.md,
// "Weak memory"): a store buffer per work-item, so that a plain store becomes visible to the
// other work-items only where the model promises it, and a kernel that misses a release, a
// fence or a barrier reads the stale value it may read on a GPU.
//
// The model. Each work-item's plain stores to checked memory (the group's local memory, global
// memory) stay in its own buffer until it publishes them:
//   * at an atomic operation or fence with release semantics (release, acq_rel, seq_cst) by
//     that work-item: its whole buffer;
//   * at a barrier, when the work-items are released: every work-item's stores to the memory
//     the barrier orders (ki::barrier(flags): local, global or both);
//   * at a sub_group_barrier it passes: its whole buffer;
//   * at the launch's end: everything still buffered, in the order the groups ended.
// Until then the other work-items read the value from before the store (the stale value); the
// work-item itself reads its own stores (program order). Atomic stores and read-modify-writes are
// visible at once: what an atomic read returns is then the latest value (always legal), and
// whatever a flag publishes, the plain data around it is what stays behind. Work-groups run one
// after another on one thread, and a group's unpublished stores stay invisible to the later
// groups of the launch. Not modelled: the reader's side (a load that lacks acquire still sees
// everything published), stores through code the compiler did not instrument (memcpy under GCC).
//
// How. Memory always holds the published values, except where the running work-item (the owner)
// has buffered a store: there it holds the owner's value, and the owner's entry keeps the
// published value (`under`). The buffers change hands lazily: the first access of checked
// memory by another work-item (every one reaches the hooks) stashes the owner's values into its
// entries, writes back what lies under them, and applies the new owner's entries over the
// memory as it is then. So switching costs nothing until somebody looks, and a work-item that
// never shares memory with another is never disturbed. Granularity: bytes (a buffered store of
// 4 bytes is 4 entries), which keeps overlapping stores of different sizes exact.
#pragma once
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace ki::reference::detail {

class store_buffer {
 public:
  /// Per group: `items` work-items, nothing buffered, no owner.
  void start_group(std::int64_t items);
  /// The work-item `item` is about to access checked memory: its view is made the memory's.
  void run(std::int64_t item) {
    if (item != owner_) [[unlikely]]
      switch_to(item);
  }
  /// The running work-item `item` is about to store `n` bytes at `p` (its view is current).
  void store(std::int64_t item, unsigned char* p, std::size_t n, bool local);
  /// The running work-item publishes its buffer (a release).
  void release(std::int64_t item);
  /// A barrier released the work-items: every buffered store to the memory it orders is
  /// published (`local`, `global`: what it orders).
  void barrier(bool local, bool global);
  /// Work-item `item` passed a sub_group_barrier: its buffer is published.
  void sub_group_barrier(std::int64_t item) { publish(item, true, true); }
  /// The group ended: stores to local memory are dropped (it dies with the group), those to
  /// global memory stay buffered until the launch ends; a failed group (`publish_all`) publishes
  /// them at once.
  void end_group(bool publish_all);
  /// The launch ended: every store still buffered is published.
  void end_launch();
  /// Recording a store ran out of memory (the hooks cannot throw): reported when the group ends.
  bool out_of_memory() const { return out_of_memory_; }
  /// Bytes buffered now (all work-items of the group, and the launch's earlier groups).
  std::size_t buffered() const;

 private:
  struct entry {
    unsigned char* p;
    unsigned char value;  ///< the work-item's byte (while it is not the owner)
    unsigned char under;  ///< the published byte (while it is the owner)
    bool local;
  };
  struct item_buffer {
    std::vector<entry> entries;
    std::unordered_map<unsigned char*, std::uint32_t> at;  ///< byte -> its entry
    void clear() {
      entries.clear();
      at.clear();
    }
  };
  struct kept_store {
    unsigned char* p;
    unsigned char value;
  };
  void switch_to(std::int64_t item);
  void stash();  // the owner's values into its entries, the published ones back; no owner
  /// Publishes item's entries for the memory selected (local and / or global).
  void publish(std::int64_t item, bool local, bool global);
  /// Makes `v` the published byte at p.
  void set_published(unsigned char* p, unsigned char v);

  std::vector<item_buffer> items_;
  std::int64_t owner_ = -1;       ///< whose entries the memory holds; -1: nobody's
  std::vector<kept_store> kept_;  ///< finished groups' unpublished global stores, in order
  bool out_of_memory_ = false;
};

}  // namespace ki::reference::detail
