// Queues of the reference backend: one per (host thread, emulated device), created on first use.
//
// A queue is a list of operations (launches, copies, frees, event waits) run in order by the
// queue's worker thread. Positions count operations: `submitted` were queued, `released` may
// run, `completed` have run. What the backend's queue_mode changes is only when work is released:
//   async      at once (a GPU-like stream);
//   delayed    when the host needs it: synchronize releases the whole queue, and a wait for an
//              event releases the event's queue up to the event;
//   immediate  the caller drains the queue and runs the operation itself.
// Cycles are impossible: an event captures work queued before it was recorded, so a wait can
// only depend on positions that precede every later wait on the other side.
//
// Memory allocated here is ordinary host memory; each emulated device merely owns its arrays
// (ki::array records the device, launches check it), and frees are queued like CUDA's
// stream-ordered frees so that queued work may still use an array the host has dropped.
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <system_error>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <ki/cpu/checked_support.hpp>
#include <ki/config.hpp>
#include <ki/reference/backend.hpp>
#include <ki/rand.hpp>

#include "executor.hpp"
#include "poison.hpp"

namespace ki::reference::detail {
namespace {

struct queue;
using operation = std::function<void(queue&)>;

struct queue {
  explicit queue(int dev) : device(dev) {}
  queue(const queue&) = delete;
  queue& operator=(const queue&) = delete;

  const int device;
  std::mutex m;
  std::condition_variable cv;  // any counter changed, or stopping
  std::deque<operation> ops;   // queued, not started
  std::uint64_t submitted = 0, released = 0, completed = 0;
  bool stopping = false;
  bool busy = false;  // an operation is running (on the worker or on a helping waiter)
  std::thread worker;
  priority prio = priority::normal;
  std::vector<kernel_error> errors;  // failed launches, until synchronize
  std::exception_ptr failure;        // the first operation that threw (e.g. out of memory), until synchronize
  std::vector<warning> warnings;     // until synchronize or take_warnings
  bool print_warnings = true;

  void push(operation op, queue_mode mode) {
    if (mode == queue_mode::immediate) {
      drain();
      op(*this);
      std::lock_guard l(m);
      ++submitted, ++released, ++completed;
      return;
    }
    std::lock_guard l(m);
    ops.push_back(std::move(op));
    ++submitted;
    if (mode == queue_mode::async) released = submitted;
    if (!worker.joinable()) {
      try {
        worker = std::thread([this] { work(); });
      } catch (const std::system_error&) {
        // No thread to be had (out of memory or of threads): the operations run when the host
        // waits for them, as in the delayed mode; the next push tries again.
      }
    }
    cv.notify_all();
  }
  /// Let the worker run the operations before position `upto`.
  void release(std::uint64_t upto) {
    std::lock_guard l(m);
    if (upto > released) released = upto, cv.notify_all();
  }
  /// Block until the operations before `pos` have run. The waiting thread helps: while nobody
  /// runs one, it runs the next released operation itself (order is kept: one at a time), so a
  /// launch followed by synchronize costs no thread hand-off when the worker is not yet awake.
  void wait_for(std::uint64_t pos) {
    std::unique_lock l(m);
    while (completed < pos) {
      if (!run_next(l)) cv.wait(l, [&] { return completed >= pos || can_run(); });
    }
  }
  void drain() {
    std::uint64_t all;
    {
      std::lock_guard l(m);
      all = submitted;
    }
    release(all);
    wait_for(all);
  }
  void work() {
    std::unique_lock l(m);
    for (;;) {
      cv.wait(l, [&] { return stopping || can_run(); });
      if (!run_next(l) && stopping && ops.empty() && !busy) return;
    }
  }
  bool can_run() const { return !busy && !ops.empty() && completed < released; }
  /// With the lock held: runs the next released operation (without the lock) unless another
  /// thread is running one. Returns whether it ran one.
  bool run_next(std::unique_lock<std::mutex>& l) {
    if (!can_run()) return false;
    busy = true;
    operation op = std::move(ops.front());
    ops.pop_front();
    l.unlock();
    try {
      op(*this);
    } catch (...) {  // (out of memory, most likely): kept for synchronize; the queue goes on
      std::lock_guard g(m);
      if (!failure) failure = std::current_exception();
    }
    op = nullptr;  // its captures (e.g. a launch's arguments) go before the count says done
    l.lock();
    busy = false;
    ++completed;
    cv.notify_all();
    return true;
  }
  ~queue() {
    {
      std::lock_guard l(m);
      stopping = true;
      released = submitted;  // queued work still runs (it may write host memory the program reads)
      cv.notify_all();
    }
    if (worker.joinable()) worker.join();
    else {  // never had a worker: the queued work runs here
      std::unique_lock l(m);
      while (run_next(l)) {
      }
    }
    if (failure) std::fprintf(stderr, "ki::reference: an operation failed and its queue was never synchronized\n");
    for (const auto& e : errors)
      std::fprintf(stderr, "ki::reference: a launch failed and its queue was never synchronized: %s\n", e.what());
  }
};

/// The calling thread's queues and warnings.
struct thread_state {
  std::vector<std::shared_ptr<queue>> queues;  // by device
  std::vector<warning> warnings;               // taken from the queues at synchronize
  ~thread_state();
};

thread_local int active = 0;
thread_local bool state_gone = false;  // trivially destructible, so readable during thread exit

thread_state::~thread_state() {
  state_gone = true;
  for (auto& q : queues)
    if (q) q->drain();  // an event held elsewhere may keep a queue alive: run its work now
  queues.clear();
}

/// nullptr once the thread is exiting (e.g. arrays with static storage destroyed late).
thread_state* state() {
  if (state_gone) return nullptr;
  thread_local thread_state s;
  return &s;
}

queue* find_queue(int device) {
  thread_state* s = state();
  if (s == nullptr || device >= static_cast<int>(s->queues.size())) return nullptr;
  return s->queues[static_cast<std::size_t>(device)].get();
}

std::shared_ptr<queue> queue_for(int device) {
  thread_state* s = state();
  if (s == nullptr) return nullptr;
  if (device >= static_cast<int>(s->queues.size())) s->queues.resize(static_cast<std::size_t>(device) + 1);
  auto& q = s->queues[static_cast<std::size_t>(device)];
  if (!q) q = std::make_shared<queue>(device);
  return q;
}

/// The calling thread's queue of the active device, checking that the device exists for b.
std::shared_ptr<queue> current(const backend& b, const char* what) {
  const int n = device_count(b);
  if (active >= n)
    throw std::invalid_argument(
        std::string("ki::reference: ") + what + " on device " + std::to_string(active) + ", but " +
        (b.device_profiles.empty() ? "profile '" + std::string(b.device.name) + "'"
                                   : std::string("the backend's device_profiles")) +
        " has " + std::to_string(n) + (n == 1 ? " device" : " devices") + " (see ki::set_device)");
  auto q = queue_for(active);
  if (!q) throw std::logic_error(std::string("ki::reference: ") + what + " while the host thread exits");
  return q;
}

const char* mode_name(queue_mode m) {
  switch (m) {
    case queue_mode::async: return "async";
    case queue_mode::delayed: return "delayed";
    case queue_mode::immediate: return "immediate";
  }
  return "?";
}

/// A launch's outcome into its queue: the error for ki::synchronize, the warnings to print.
void take_result(queue& q, const backend& b, launch_result r) {
  std::lock_guard l(q.m);
  if (r.error) q.errors.push_back(std::move(*r.error));
  if (!r.warnings.empty()) {
    for (auto& w : r.warnings) q.warnings.push_back(std::move(w));
    q.print_warnings = b.print_warnings;
  }
}

// --- Memory lifetime (docs/debugging.md, "Lifetime") ---
//
// Every allocation of the backend is a `block`, from allocate until its memory is really
// released. free() (an array destroyed, ki::unsafe_free) marks it released at once, naming the
// queue it was freed on; the memory goes back to the system only after that queue's earlier
// work (the release is queued, as the operations before it may use the memory) and once no
// operation queued by another thread still uses it (its pins). A copy or launch pins the blocks
// it uses (its device sides; a launch's ki::span arguments) when it is queued and unpins them
// when it is done. Refused when queued: a use of a block already released. Failed when it would
// run: a use of a block another thread released meanwhile (std::invalid_argument at that
// thread's synchronize): the memory is still there, so nothing reads freed memory. Released
// memory then waits in a quarantine (filled with poison, still known as released) until the
// quarantine holds more than `quarantine_bytes`, so that a ki::span kept past its array's life
// is refused for as long as its memory is there; allocate() empties the quarantine when the
// system has no memory left.
struct block {
  std::size_t bytes = 0;
  int pins = 0;
  bool freed = false;               ///< released (its ki::array destroyed, or ki::unsafe_free)
  const queue* freed_on = nullptr;  ///< ... by the thread of this queue (null: one that queued nothing)
  bool free_queued = false;         ///< ... and that queue has reached the release
};
std::mutex blocks_m;
std::map<const char*, block> blocks;  // by first byte
constexpr std::size_t quarantine_bytes = std::size_t{64} << 20;
std::deque<const char*> quarantine;  // released blocks, oldest first (with blocks_m)
std::size_t quarantined = 0;         // their bytes

/// The block holding p (with blocks_m held), or blocks.end().
std::map<const char*, block>::iterator block_of(const void* p) {
  const char* c = static_cast<const char*>(p);
  auto it = blocks.upper_bound(c);
  if (it == blocks.begin()) return blocks.end();
  --it;
  return c < it->first + (it->second.bytes == 0 ? 1 : it->second.bytes) ? it : blocks.end();
}

void release_memory(void* m) {
  ki::detail::cpu::checked_allocation_removed(m);
  std::free(m);
}

/// With blocks_m held: the block's release is due (its thread's queue reached it and nothing
/// uses it): into the quarantine, poisoned; the blocks the quarantine lets go are added to
/// `now` (released by the caller, without the lock).
void retire(std::map<const char*, block>::iterator it, std::vector<void*>& now) {
  poison_fill(const_cast<char*>(it->first), it->second.bytes);
  quarantine.push_back(it->first);
  quarantined += it->second.bytes;
  while (quarantined > quarantine_bytes && !quarantine.empty()) {
    auto old = blocks.find(quarantine.front());
    quarantine.pop_front();
    if (old == blocks.end()) continue;
    quarantined -= old->second.bytes;
    now.push_back(const_cast<char*>(old->first));
    blocks.erase(old);
  }
}

/// Releases the whole quarantine (allocate, when the system has no memory left).
void empty_quarantine() {
  std::vector<void*> now;
  {
    std::lock_guard l(blocks_m);
    for (const char* q : quarantine)
      if (auto it = blocks.find(q); it != blocks.end()) {
        now.push_back(const_cast<char*>(it->first));
        blocks.erase(it);
      }
    quarantine.clear();
    quarantined = 0;
  }
  for (void* m : now) release_memory(m);
}

/// What a queued operation uses: the blocks it pinned, unpinned when it is destroyed (run, or
/// dropped), releasing those whose release waited for it.
class pins {
 public:
  struct use {
    const char* block;
    std::string what;  // "the source of ki::copyto", "argument 2 of kernel 'k'"
  };
  pins(const pins&) = delete;
  pins& operator=(const pins&) = delete;
  pins() = default;
  ~pins() {
    std::vector<void*> now;
    {
      std::lock_guard l(blocks_m);
      for (const use& u : uses_) {
        auto it = blocks.find(u.block);
        if (it == blocks.end()) continue;
        if (--it->second.pins == 0 && it->second.free_queued) retire(it, now);
      }
    }
    for (void* m : now) release_memory(m);
  }
  /// With blocks_m held: pins the block holding p (if it is one of this backend's) for `what`;
  /// throws std::invalid_argument if it is released already.
  void add(const void* p, std::string what) {
    auto it = block_of(p);
    if (it == blocks.end()) return;  // host memory
    if (it->second.freed)
      throw std::invalid_argument("ki::reference: " + what +
                                  " is memory that was released (its ki::array destroyed, or ki::unsafe_free): a "
                                  "ki::span or pointer kept past its array's life");
    ++it->second.pins;
    uses_.push_back({it->first, std::move(what)});
  }
  /// When the operation runs on `q`: throws std::invalid_argument if another thread released a
  /// block it uses since it was queued (the operation then does not run).
  void check(const queue& q) const {
    std::lock_guard l(blocks_m);
    for (const use& u : uses_) {
      auto it = blocks.find(u.block);
      if (it != blocks.end() && it->second.freed && it->second.freed_on != &q)
        throw std::invalid_argument(
            "ki::reference: " + u.what +
            " was released by another host thread (its ki::array destroyed, or ki::unsafe_free) while this "
            "operation was queued; it did not run (keep an array alive until the work that uses it has finished: "
            "ki::synchronize on the thread that queued it)");
    }
  }

 private:
  std::vector<use> uses_;
};

}  // namespace

int active_device() { return active; }
void set_active_device(int id) { active = id; }

/// Pins what a launch's span arguments point into (refusing memory already released).
std::shared_ptr<pins> pin_arguments(const std::vector<argument_memory>& memory, const std::string& name) {
  auto used = std::make_shared<pins>();
  std::lock_guard l(blocks_m);
  for (const argument_memory& a : memory)
    used->add(a.p, "argument " + std::to_string(a.index) + " (a ki::span) of kernel '" + name + "'");
  return used;
}

void submit(const backend& b, std::array<std::int64_t, 3> groups, std::array<std::int64_t, 3> items,
            void (*run_items)(const void*, item_loop&), std::shared_ptr<const void> ctx, std::string name,
            bool instrumented, std::vector<argument_memory> memory, std::size_t dynamic_local_memory) {
  ki::detail::cpu::host_only("ki::launch");
  check_environment(b);
  if (b.memory == memory_model::weak && !instrumented)
    throw std::invalid_argument(
        "ki::reference: launch of kernel '" + name +
        "': memory_model::weak (ki::reference::backend::memory or KI_REFERENCE_MEMORY=weak) needs the kernel's "
        "translation unit compiled in checked-access mode with the instrumentation hooks (link ki::reference_checked, "
        "with GCC or Clang), so that the oracle sees its stores; this one was compiled without them "
        "(KI_CHECKED_HOOKS=0)");
  start_env_trace();  // KI_REFERENCE_TRACE (tools/ki-trace)
  // The seed is drawn in queue order on the launching thread, so KI_RAND_SEED replays it.
  const std::uint64_t seed = ki::detail::next_launch_seed(backend_traits<backend>::name);
  auto q = current(b, "launch");
  auto used = pin_arguments(memory, name);
  q->push(
      [b, groups, items, run_items, ctx = std::move(ctx), name = std::move(name), seed, used,
       dynamic_local_memory](queue& self) {
        used->check(self);
        take_result(self, b,
                    execute({groups, items, run_items, ctx.get(), &b, name.c_str(), seed, dynamic_local_memory}));
      },
      b.queue);
}

void submit_ka(const backend& b, const ki::ka::detail::cpu_launch_desc& d, std::shared_ptr<const void> ctx,
               std::string name, std::vector<argument_memory> memory) {
  ki::detail::cpu::host_only("a KA kernel's launch");
  check_environment(b);
  start_env_trace();  // KI_REFERENCE_TRACE (tools/ki-trace)
  auto q = current(b, "launch");
  auto used = pin_arguments(memory, name);
  q->push(
      [b, d, ctx = std::move(ctx), name = std::move(name), used](queue& self) {
        used->check(self);
        ki::ka::detail::cpu_launch_desc run = d;
        run.name = name.c_str();
        take_result(self, b, execute_ka(run, b));
      },
      b.queue);
}

void* allocate(const backend& b, std::size_t bytes) {
  ki::detail::cpu::host_only("ki::allocate (or ki::zeros, ki::ones, ki::fill)");
  if (active >= device_count(b)) (void)current(b, "allocate");  // throws, naming the device
  // 64-byte aligned, like device allocations; at least one byte so that the pointer is unique.
  const std::size_t n = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, n == 0 ? 64 : n);
  if (p == nullptr) {  // (the quarantine of released memory goes first)
    empty_quarantine();
    p = std::aligned_alloc(64, n == 0 ? 64 : n);
  }
  if (p == nullptr) throw std::bad_alloc();
  poison_fill(p, bytes);
  ki::detail::cpu::checked_allocation_added(p, bytes);  // (global memory checked-access mode watches)
  try {
    std::lock_guard l(blocks_m);
    blocks[static_cast<const char*>(p)] = block{bytes};
  } catch (...) {
    release_memory(p);
    throw;
  }
  return p;
}

void free(const backend& b, int device, void* p) noexcept {
  // Released after this thread's queued work on the device, and once no other thread's queued
  // operation uses it (pins).
  queue* q = find_queue(device);
  const auto release = [p] {
    std::vector<void*> now;
    {
      std::lock_guard l(blocks_m);
      auto it = blocks.find(static_cast<const char*>(p));
      if (it == blocks.end()) {
        now.push_back(p);  // (not one of the blocks: released at once)
      } else {
        it->second.free_queued = true;  // (else the last operation that uses it does)
        if (it->second.pins == 0) retire(it, now);
      }
    }
    for (void* m : now) release_memory(m);
  };
  {
    std::lock_guard l(blocks_m);
    auto it = blocks.find(static_cast<const char*>(p));
    if (it != blocks.end()) it->second.freed = true, it->second.freed_on = q;
  }
  if (q == nullptr) return release();  // this thread queued nothing there
  try {
    queue_for(device)->push([release](queue&) { release(); }, b.queue);
  } catch (...) {  // no memory for the operation: wait instead
    q->drain();
    release();
  }
}

void copy(const backend& b, void* dst, const void* src, std::size_t bytes, copy_kind kind) {
  ki::detail::cpu::host_only("ki::copyto (or ki::to_host)");
  auto q = current(b, "copyto");
  auto used = std::make_shared<pins>();
  {
    std::lock_guard l(blocks_m);
    if (kind == copy_kind::host_to_device || kind == copy_kind::device_to_device)
      used->add(dst, "the destination of ki::copyto");
    if (kind == copy_kind::device_to_host || kind == copy_kind::device_to_device)
      used->add(src, "the source of ki::copyto");
  }
  if (b.queue == queue_mode::immediate)
    return q->push(
        [=](queue& self) {
          used->check(self);
          std::memmove(dst, src, bytes);
        },
        b.queue);
  if (kind == copy_kind::host_to_device || kind == copy_kind::host_to_host) {
    // The contract: a host source has been read when copyto returns (like CUDA's pageable copies).
    auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                               static_cast<const unsigned char*>(src) + bytes);
    q->push(
        [dst, staged, used](queue& self) {
          used->check(self);
          std::memcpy(dst, staged->data(), staged->size());
        },
        b.queue);
  } else {
    q->push(
        [=](queue& self) {
          used->check(self);
          std::memmove(dst, src, bytes);
        },
        b.queue);
  }
}

void synchronize(const backend& b) {
  ki::detail::cpu::host_only("ki::synchronize");
  thread_state* s = state();
  if (s == nullptr) return;
  auto q = current(b, "synchronize");
  q->drain();
  std::vector<kernel_error> errors;
  std::vector<warning> warnings;
  std::exception_ptr failure;
  bool print = true;
  {
    std::lock_guard l(q->m);
    std::swap(failure, q->failure);
    errors.swap(q->errors);
    warnings.swap(q->warnings);
    print = q->print_warnings;
  }
  for (auto& w : warnings) {
    if (print) std::fprintf(stderr, "ki::reference: warning: %s\n", w.message.c_str());
    s->warnings.push_back(std::move(w));
  }
  if (failure) std::rethrow_exception(failure);
  if (!errors.empty()) throw std::move(errors.front());
}

event record_event(const backend& b) {
  ki::detail::cpu::host_only("ki::record_event");
  auto q = current(b, "record_event");
  std::lock_guard l(q->m);
  return event{q, q->submitted};
}

void wait_event(const backend& b, const event& e) {
  ki::detail::cpu::host_only("ki::wait_event");
  if (!e.queue) throw std::invalid_argument("ki::wait_event: the event was not returned by ki::record_event");
  auto q = current(b, "wait_event");
  auto target = std::static_pointer_cast<queue>(e.queue);
  if (target == q) return;  // a queue is in order
  q->push(
      [target, pos = e.position](queue&) {
        target->release(pos);  // in the delayed mode, the wait is what needs that work
        target->wait_for(pos);
      },
      b.queue);
}

void set_priority(const backend& b, priority p) { current(b, "set_priority")->prio = p; }

void versioninfo(std::ostream& os, const backend& b) {
  const profile& p = active_profile(b);
  os << "ki " << KI_VERSION << ", backend reference (the oracle: fibers emulating work-groups)\n"
     << "  profile:            " << p.name;
  if (!b.device_profiles.empty()) {  // one per device: all of them, the active device's below
    os << " (per device:";
    for (const auto& d : b.device_profiles) os << " " << d.name;
    os << ")";
  }
  os << "\n"
     << "  devices:            " << device_count(b) << " (active: " << active << ")\n"
     << "  queue mode:         " << mode_name(b.queue) << "\n"
     << "  host threads:       " << host_threads(b) << "\n"
     << "  fiber stack:        "
     << (b.stack_size != 0 ? std::to_string(b.stack_size) + " bytes" : "KI_REFERENCE_STACK_SIZE, else 256 KiB") << "\n"
     << "  sub-group width:    " << p.sub_group_width << (p.linear_subgroups ? ", linear" : ", layout not promised")
     << (p.independent_subgroups ? ", independent" : "") << (p.partitionable_subgroups ? ", partitionable" : "") << "\n"
     << "  max work-group:     " << p.max_work_group_size << " items, dims (" << p.max_work_group_dims[0] << ", "
     << p.max_work_group_dims[1] << ", " << p.max_work_group_dims[2] << ")\n"
     << "  max groups:         (" << p.max_num_groups[0] << ", " << p.max_num_groups[1] << ", " << p.max_num_groups[2]
     << ")\n"
     << "  local memory:       " << p.max_local_memory << " bytes per work-group, starting as "
     << (b.local_memory == local_memory_start::leftovers ? "the previous group's leftovers" : "poison") << "\n"
     << "  float64:            " << (p.float64 ? "yes" : "no") << ", atomics: " << (p.atomics ? "yes" : "no")
     << ", 64-bit atomics: " << (p.atomics64 ? "yes" : "no") << "\n"
     << "  poison:             "
     << (p.poison_seed == 0 ? std::string("0xFFBADBAD") : "random, seed " + std::to_string(p.poison_seed)) << "\n";
}

}  // namespace ki::reference::detail

namespace ki::reference {

queue_mode backend::queue_mode_from_environment() {
  static const queue_mode m = [] {
    const char* v = std::getenv("KI_REFERENCE_QUEUE");
    if (v == nullptr || *v == '\0' || std::strcmp(v, "async") == 0) return queue_mode::async;
    if (std::strcmp(v, "delayed") == 0) return queue_mode::delayed;
    if (std::strcmp(v, "immediate") == 0) return queue_mode::immediate;
    ki::detail::cpu::bad_environment("ki::reference", "KI_REFERENCE_QUEUE", v, "async, delayed or immediate");
    return queue_mode::async;
  }();
  return m;
}

priority get_priority(const backend& b) {
  (void)b;
  detail::queue* q = detail::find_queue(detail::active);
  return q != nullptr ? q->prio : priority::normal;
}

std::vector<warning> take_warnings() {
  std::vector<warning> w;
  detail::thread_state* s = detail::state();
  if (s == nullptr) return w;
  w = std::move(s->warnings);
  s->warnings.clear();
  for (auto& q : s->queues) {
    if (!q) continue;
    std::lock_guard l(q->m);
    for (auto& x : q->warnings) w.push_back(std::move(x));
    q->warnings.clear();
  }
  return w;
}

}  // namespace ki::reference
