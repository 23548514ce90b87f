// Private: the oracle's weak memory (ki::reference::memory_model::weak; docs/debugging.md,
// "Weak memory"): a work-item's plain stores become visible to the others only where the model
// promises it, so that a kernel that misses a release, an acquire, a fence or a barrier reads
// the stale value it may read on a GPU, every time.
//
// The model, for the plain stores and loads of a work-group's work-items on checked memory (the
// group's local memory, global memory):
//   * Each work-item's stores stay in its own buffer until it publishes them: at an atomic
//     operation or fence of its own with release semantics (release, acq_rel, seq_cst; never a
//     load): its whole buffer; at a barrier: every work-item's stores to the memory the barrier
//     orders (ki::barrier(flags): local, global or both); at a sub_group_barrier it passes: its
//     whole buffer; at the launch's end: everything still buffered, in the order the groups
//     ended (a group's unpublished stores stay invisible to the later groups of the launch).
//   * A work-item sees what others published only up to its last acquire: an atomic operation
//     or fence of its own with acquire semantics (acquire, acq_rel, seq_cst), a barrier (for the
//     memory it orders), a sub_group_barrier. A work-item starts having acquired nothing of the
//     launch (global memory; local memory: what its group published before it started). Until
//     then it reads the value published before (the stale value), as a GPU's cache may hold it,
//     also what an earlier work-group published: groups are not ordered.
//   * A work-item always sees its own stores, published or not (program order).
//   * Atomic operations act on the latest value at once, whatever the views: a flag is seen
//     set while the plain data around it is what stays behind.
// Work-groups run one after another on one thread. Not modelled: stores and loads the compiler
// did not instrument (memcpy under GCC: they act on the running work-item's buffer and on the
// published values, unbuffered), KA kernels.
//
// How. Memory holds the published values (P), except while a work-item runs (the owner): then
// it holds its buffered stores (its entries keep the published byte under them, `under`), and
// the older versions it read of bytes published since its last acquire (`adjusted_`: a load
// through the hooks puts the version it may see in place, lazily). Each publication of a byte is
// kept as a version of it (`hist_`, the launch's clock), global bytes for the whole launch (later
// groups start without them), local ones until a barrier that lets everybody see everything.
// The owner changes at every resumption of a work-item (and at the hooks' first access by
// another one): its view is stashed (P written back) and the next one's buffer applied.
// Granularity: bytes (a store of 4 bytes is 4 entries), which keeps overlapping stores of
// different sizes exact.
#pragma once
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include <ki/cpu/race_detector.hpp>  // (cpu::weak_memory)

namespace ki::reference::detail {
namespace cpu = ki::detail::cpu;

/// The weak memory checked-access mode's detector sends plain accesses to (cpu::weak_memory).
class store_buffer final : public cpu::weak_memory {
 public:
  /// Per group: `items` work-items, nothing buffered, none having acquired global memory.
  void start_group(std::int64_t items);
  /// The work-item `item` runs from here (it is about to access memory): memory shows its view.
  void run(std::int64_t item) override {
    if (item != owner_ || pending_ != 0) [[unlikely]]
      settle(item);
  }
  /// The running work-item `item` is about to store `n` bytes at `p` (memory shows its view).
  void store(std::int64_t item, unsigned char* p, std::size_t n, bool local) override;
  /// The running work-item `item` is about to load `n` bytes at `p`: where others published a
  /// byte after its last acquire, memory shows it the version it may still see.
  void load(std::int64_t item, unsigned char* p, std::size_t n) override {
    if (!hist_.empty()) [[unlikely]]
      load_versions(item, p, n);
  }
  /// The running work-item publishes its buffer (a release).
  void release(std::int64_t item) override;
  /// The running work-item sees everything published so far (an acquire).
  void acquire(std::int64_t item) override;
  /// A barrier released the work-items: every buffered store to the memory it orders is
  /// published, and every work-item sees that memory as published (`local`, `global`: what it
  /// orders).
  void barrier(bool local, bool global) override;
  /// Work-item `item` passed a sub_group_barrier: its buffer is published, and it acquires when
  /// it runs on (after the others of the barrier published theirs).
  void sub_group_barrier(std::int64_t item) override;
  /// The group ended: stores to local memory are dropped (it dies with the group), those to
  /// global memory stay buffered until the launch ends; a failed group (`publish_all`) publishes
  /// them at once.
  void end_group(bool publish_all);
  /// The launch ended: every store still buffered is published, every version forgotten.
  void end_launch();
  /// Recording ran out of memory (the hooks cannot throw): reported when the group ends.
  bool out_of_memory() const override { return out_of_memory_; }

 private:
  struct entry {
    unsigned char* p;
    unsigned char value;  ///< the work-item's byte (while it is not the owner)
    unsigned char under;  ///< the published byte, while it is the owner (bytes without history)
    bool local;
  };
  struct item_record {
    std::vector<entry> entries;
    std::unordered_map<unsigned char*, std::uint32_t> at;   ///< byte -> its entry
    std::uint64_t seen[2] = {0, 0};                         ///< acquired up to this time: local, global
    std::unordered_map<unsigned char*, std::uint64_t> own;  ///< bytes it published, and when
    bool acquire_pending = false;                           ///< a sub_group_barrier's acquire
  };
  struct version {
    std::uint64_t time;
    unsigned char value;
  };
  /// A byte published in this launch (local memory: in this group, since the last barrier that
  /// let everybody see everything).
  struct history {
    unsigned char before;        ///< the published byte before the first of these versions
    bool local;                  ///< in local memory
    std::vector<version> later;  ///< in time order; never empty
  };
  struct kept_store {
    unsigned char* p;
    unsigned char value;
  };

  void settle(std::int64_t item);
  void load_versions(std::int64_t item, unsigned char* p, std::size_t n);
  void stash();                   // the owner's view off memory (P back); no owner
  void apply(std::int64_t item);  // item's view onto memory; item the owner
  unsigned char view(const item_record& r, unsigned char* p, const history& h) const;
  unsigned char published(unsigned char* p) const;  // P of a byte, whoever owns the memory
  /// Publishes item's entries for the memory selected, as versions of time now_.
  void publish(std::int64_t item, bool local, bool global);
  /// A new version v of byte p, of time now_, by `publisher`.
  void set_published(unsigned char* p, unsigned char v, bool local, std::int64_t publisher);
  /// Everybody has seen everything of this memory (no owner, P in memory): its versions are
  /// dropped (local), or reduced to the first and the latest (global: later groups start
  /// without them).
  void forget_history(bool local, bool global);

  std::vector<item_record> items_;
  std::int64_t owner_ = -1;   ///< whose view the memory shows; -1: nobody's (P)
  std::int64_t pending_ = 0;  ///< work-items with acquire_pending
  std::uint64_t now_ = 0;     ///< the publication clock (per launch)
  std::unordered_map<unsigned char*, history> hist_;
  std::vector<unsigned char*> adjusted_;  ///< bytes showing the owner an older version
  std::vector<kept_store> kept_;          ///< finished groups' unpublished global stores, in order
  bool out_of_memory_ = false;
};

}  // namespace ki::reference::detail
