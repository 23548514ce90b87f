// The reference executor: runs the work-groups of a launch, one fiber per blocked work-item.
//
// How a work-group runs (forward schedule):
//   * A "runner" fiber runs unstarted work-items one after another, as plain calls. A kernel
//     without barriers therefore costs one fiber per group, not one per item.
//   * When a work-item reaches a barrier, it records where, and its fiber (which is now *its*
//     fiber) is suspended. Control jumps straight to the next work-item to run: the next one
//     released from the last barrier, or a new runner fiber for the next unstarted item, or,
//     when nobody can run, the group's driver on the thread's own stack.
//   * The driver then knows that every work-item waits or has exited. If all live items wait at
//     the same barrier, it releases them (in schedule order) and jumps to the first; otherwise
//     it reports, with the items and the source lines, why the group can never finish.
// A work-item that throws, or faults (e.g. overflows its stack), ends its group; the other
// fibers are dropped without unwinding, and the error is kept for ki::synchronize.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <ki/detail/cpu.hpp>
#include <ki/errors.hpp>
#include <ki/reference/backend.hpp>
#include <ki/source_location.hpp>

#include "fiber.hpp"
#include "layout.hpp"
#include "poison.hpp"
#include "executor.hpp"
#include "sub_group.hpp"

namespace ki::reference::detail {
namespace cpu = ki::detail::cpu;
using i64 = std::int64_t;

namespace {

std::string to_string(const xyz<i64>& v) {
  return "(" + std::to_string(v.x) + ", " + std::to_string(v.y) + ", " + std::to_string(v.z) + ")";
}

std::string to_string(const source_location& s) {
  if (s.line == 0) return "<unknown>";
  const char* f = std::strrchr(s.file, '/');
  std::string r = std::string(f ? f + 1 : s.file) + ":" + std::to_string(s.line);
  return s.column != 0 ? r + ":" + std::to_string(s.column) : r;
}

bool same_point(const source_location& a, const source_location& b) {
  return a.line == b.line && a.column == b.column && (a.file == b.file || std::strcmp(a.file, b.file) == 0);
}

/// "0-31, 64, 66-70" from sorted ids.
std::string ranges(const std::vector<i64>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ", ";
    s += std::to_string(ids[i]);
    if (j > i) s += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return s;
}

std::size_t env_size(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 10);
  if (end == v || *end != '\0' || x == 0) {
    std::fprintf(stderr, "ki::reference: ignoring %s=%s (expected a positive integer)\n", name, v);
    return fallback;
  }
  return static_cast<std::size_t>(x);
}

std::size_t resolve_stack_size(const backend& b) {
  static const std::size_t from_env = env_size("KI_REFERENCE_STACK_SIZE", 256 * 1024);
  return b.stack_size != 0 ? b.stack_size : from_env;
}

int resolve_threads(const backend& b) {
  static const int from_env = static_cast<int>(env_size("KI_REFERENCE_THREADS", 0));
  return b.threads > 0 ? b.threads : from_env;
}

/// Thrown inside a work-item for errors that are the executor's to name (kind != exception).
struct item_failure {
  kernel_error::kind kind;
  std::string message;
  bool group_level = false;  ///< the message describes the group, not the throwing item
};

using status = cpu::item_status;

struct item : cpu::item_state {
  source_location at{};               // the sync point it waits at (or passed last)
  const char* at_what = "barrier";    // what is there: "barrier" or a sub-group function
  cpu::collective* coll = nullptr;    // while in_collective: its record (on its own stack)
};

/// Unspecified reads per call site of one launch, merged from every thread.
struct warning_log {
  std::mutex m;
  std::map<std::string, std::pair<std::string, i64>> by_site;  // "file:line kind" -> (message, count)
};

class group_runner final : public cpu::executor {
 public:
  explicit group_runner(std::size_t stack_size) : fibers_(stack_size) {}
  std::size_t stack_size() const { return fibers_.stack_size(); }

  /// Runs one group of launch d. Returns the error that ended it, if any.
  std::optional<kernel_error> run(const launch_desc& d, std::uint64_t launch_serial, i64 group_linear) {
    prepare(d, launch_serial);
    const i64 gx = d.groups[0], gy = d.groups[1];
    gs_.group_id = {group_linear % gx, (group_linear / gx) % gy, group_linear / (gx * gy)};
    // Statuses are only meaningful for started items (index < loop_.next), and a group that
    // finished normally leaves none waiting; only a failed one needs them reset.
    if (dirty_statuses_)
      for (item& it : items_) it.status = status::unstarted;
    dirty_statuses_ = false;
    loop_.next = 0;
    waiting_.clear();
    ready_.clear();
    ready_pos_ = 0;
    arrived_ = 0;
    in_collective_ = 0;
    mismatch_ = false;
    for (auto& p : pending_) p.clear();
    seq_count_.assign(static_cast<std::size_t>(layout_.count), 0);
    seq_log_.clear();
    failed_item_ = -1;
    group_error_.reset();
    locals_.clear();
    local_bytes_ = 0;
    arena_used_ = 0;
    fibers_.reset(static_cast<int>(n_) + 1);

    const auto fault = fibers_.run_guarded(&group_runner::drive, this);
    dirty_statuses_ = true;  // cleared below when the group finished normally
    const item* faulting = static_cast<const item*>(cpu::current);  // the item that faulted, if any
    cpu::current = nullptr;
    if (fault.happened) {
      const item* it = faulting;
      std::ostringstream os;
      if (fault.stack_overflow)
        os << "overflowed its fiber stack (stack_size = " << fibers_.stack_size()
           << " bytes; raise ki::reference::backend::stack_size or KI_REFERENCE_STACK_SIZE)";
      else
        os << "made an invalid memory access at address " << fault.address;
      return item_error(fault.stack_overflow ? kernel_error::kind::stack_overflow : kernel_error::kind::exception,
                        *it, os.str());
    }
    if (failed_item_ >= 0) {
      fibers_.abandon_all();
      return item_error(failed_kind_, items_[static_cast<std::size_t>(failed_item_)], failed_message_);
    }
    if (group_error_) fibers_.abandon_all();
    else dirty_statuses_ = false;
    return std::move(group_error_);
  }

  /// Moves this runner's unspecified-read counts into the launch's log.
  void flush_warnings(warning_log& log) {
    if (unspecified_.empty()) return;
    std::lock_guard lock(log.m);
    for (auto& [site, entry] : unspecified_) {
      auto& e = log.by_site[site];
      e.first = entry.first;
      e.second += entry.second;
    }
    unspecified_.clear();
  }

  // --- cpu::executor: called from inside work-items ---

  void barrier(const source_location& where) override {
    item& it = current();
    it.status = status::waiting;
    it.at = where;
    it.at_what = "barrier";
    waiting_.push_back(static_cast<int>(it.local_linear));
    if (arrived_++ == 0) round_point_ = where;
    else if (!same_point(where, round_point_)) mismatch_ = true;
    suspend(it);
  }

  void collective(cpu::collective& c) override {
    item& it = current();
    const i64 W = gs_.sub_group_width;
    it.at = c.where;  // errors about this call name its line
    it.at_what = name_of(c.kind);
    if (std::string bad = check_arguments(c, W); !bad.empty())
      throw item_failure{kernel_error::kind::invalid_collective, bad + " (at " + to_string(c.where) + ")"};
    // The scope: the caller's segment where segments may diverge, else the whole sub-group.
    const i64 sg = it.sub_group_id, lane = it.sub_group_lane;
    const bool segment = c.width > 0 && d_->b->device.partitionable_subgroups;
    const i64 begin = segment ? lane / c.width * c.width : 0, lanes = segment ? c.width : W;
    const i64 present = std::max<i64>(0, std::min<i64>(lanes, it.sub_group_size - begin));
    it.status = status::in_collective;
    it.coll = &c;
    ++in_collective_;
    auto& scopes = pending_[static_cast<std::size_t>(sg)];
    auto p = std::find_if(scopes.begin(), scopes.end(), [&](const pending_scope& x) { return x.begin == begin && x.lanes == lanes; });
    if (p == scopes.end()) p = scopes.insert(scopes.end(), pending_scope{begin, lanes, 0});
    if (++p->arrived < present) return suspend(it);
    scopes.erase(p);
    resolve(sg, begin, lanes);  // the last to arrive performs it and runs on
    it.status = status::running;
  }

  void* local_memory(const void* key, std::size_t bytes, std::size_t align, const source_location& where) override {
    for (const auto& l : locals_)
      if (l.key == key) return l.p;
    const std::size_t limit = d_->b->device.max_local_memory;
    if (local_bytes_ + bytes > limit)
      throw item_failure{kernel_error::kind::resource,
                         "localmemory at " + to_string(where) + " needs " + std::to_string(bytes) +
                             " bytes; the work-group already uses " + std::to_string(local_bytes_) +
                             " of max_local_memory = " + std::to_string(limit)};
    void* p = arena_alloc(bytes, align);
    poison_fill(p, bytes);
    locals_.push_back({key, p});
    local_bytes_ += bytes;
    return p;
  }

 private:
  struct pending_scope {
    i64 begin, lanes, arrived;
  };

  /// Every participant of (sg, [begin, begin + lanes)) has arrived: check that they agree,
  /// check the sequence rule without independent sub-groups, perform, release them.
  void resolve(i64 sg, i64 begin, i64 lanes) {
    scope_.sub_group_width = gs_.sub_group_width;
    scope_.sub_group_size = layout_.size[static_cast<std::size_t>(sg)];
    scope_.begin = begin;
    scope_.lanes = lanes;
    scope_.at.assign(static_cast<std::size_t>(lanes), nullptr);
    for (i64 l = begin; l < begin + lanes && l < scope_.sub_group_size; ++l)
      scope_.at[static_cast<std::size_t>(l - begin)] = items_[static_cast<std::size_t>(layout_.item_at(sg, l))].coll;
    const cpu::collective& first = *scope_.at.front();
    if (std::string bad = check_agreement(scope_); !bad.empty())
      throw item_failure{kernel_error::kind::collective_mismatch,
                         "sub-group " + std::to_string(sg) + ": " + bad, true};
    if (!d_->b->device.independent_subgroups) check_sequence(sg, first);
    if (const i64 u = perform(scope_, poison_); u > 0) {
      auto& e = unspecified_[to_string(first.where) + " " + name_of(first.kind)];
      if (e.second == 0)
        e.first = std::string(name_of(first.kind)) + " at " + to_string(first.where) +
                  " read lanes that have no work-item (unspecified values, filled with " +
                  (poison_.seed == 0 ? std::string("the poison word 0xFFBADBAD") : std::string("seeded random bytes")) + ")";
      e.second += u;
    }
    for (i64 l = begin; l < begin + lanes && l < scope_.sub_group_size; ++l) {
      item& p = items_[static_cast<std::size_t>(layout_.item_at(sg, l))];
      p.coll = nullptr;
      --in_collective_;
      if (&p != cpu::current) ready_.push_back(static_cast<int>(p.local_linear));
    }
  }

  /// Without independent sub-groups, every sub-group executes the same communication functions
  /// in the same order: compare this one's k-th with the first sub-group that got that far.
  void check_sequence(i64 sg, const cpu::collective& c) {
    const std::size_t k = static_cast<std::size_t>(seq_count_[static_cast<std::size_t>(sg)]++);
    if (k == seq_log_.size()) {
      seq_log_.push_back({sg, &c, c.kind, c.where, c.width});
      return;
    }
    const auto& e = seq_log_[k];
    if (e.kind != c.kind || e.width != c.width || !same_point(e.where, c.where))
      throw item_failure{kernel_error::kind::collective_mismatch,
                         "without independent sub-groups (profile '" + std::string(d_->b->device.name) +
                             "'), all sub-groups must execute the same communication functions in the same order: "
                             "sub-group " + std::to_string(sg) + " executes " + name_of(c.kind) + " at " + to_string(c.where) +
                             " as its communication function #" + std::to_string(k) + ", sub-group " +
                             std::to_string(e.sub_group) + " executed " + name_of(e.kind) + " at " + to_string(e.where),
                         true};
  }

  // The driver: on the thread's own stack, inside run_guarded.
  static void drive(void* self) { static_cast<group_runner*>(self)->drive(); }
  void drive() {
    const int main = static_cast<int>(n_);
    fibers_.spawn(main, &group_runner::runner_entry, this);
    for (;;) {
      // Every work-item now waits at a barrier, has exited, or one has failed.
      if (failed_item_ >= 0 || group_error_) return;
      if (exited() == n_) {
        if (!d_->b->device.independent_subgroups) group_error_ = sequence_length_error();
        return;
      }
      if (mismatch_ || exited() > 0 || in_collective_ > 0) {
        group_error_ = divergence_error();
        return;
      }
      // All live work-items wait at the same barrier: release them in schedule order (the
      // order they arrived in, which is the forward order).
      ready_.swap(waiting_);
      waiting_.clear();
      arrived_ = 0;
      ready_pos_ = 1;
      fibers_.switch_to(main, ready_[0]);
    }
  }

  static int runner_entry(void* self) { return static_cast<group_runner*>(self)->runner(); }
  /// Runs unstarted work-items as plain calls until one blocks (then this fiber becomes that
  /// item's) or none are left; returns whom to resume when the fiber ends.
  int runner() {
    try {
      d_->run_items(d_->ctx, loop_);
    } catch (const item_failure& f) {  // the failing work-item is the current one
      if (f.group_level) return fail_group(f.kind, f.message);
      return fail(current(), f.kind, f.message);
    } catch (const std::exception& e) {
      return fail(current(), kernel_error::kind::exception, std::string("threw ") + e.what());
    } catch (...) {
      return fail(current(), kernel_error::kind::exception, "threw an exception that is not a std::exception");
    }
    return next_to_resume();
  }

  /// Work-items that have exited, counted when nothing runs (in the driver): every started
  /// item then waits at the barrier, waits in a communication function, or has exited.
  i64 exited() const { return loop_.next - arrived_ - in_collective_; }

  /// The work-item running on this thread.
  static item& current() { return *static_cast<item*>(cpu::current); }

  void resumed(item& it) {
    it.status = status::running;
    cpu::current = &it;
  }

  int fail(item& it, kernel_error::kind k, std::string msg) {
    failed_item_ = it.local_linear;
    failed_kind_ = k;
    failed_message_ = std::move(msg);
    return static_cast<int>(n_);  // back to the driver
  }

  int fail_group(kernel_error::kind k, const std::string& msg) {
    const item& first = current();
    group_error_ = kernel_error(k, gs_.group_id, first.local_id, to_string(first.at),
                                "ki::reference: kernel '" + std::string(d_->kernel_name) + "': work-group " +
                                    to_string(gs_.group_id) + ": " + msg);
    return static_cast<int>(n_);
  }

  std::optional<kernel_error> sequence_length_error() const {
    const i64 expected = static_cast<i64>(seq_log_.size());
    for (i64 sg = 0; sg < layout_.count; ++sg)
      if (seq_count_[static_cast<std::size_t>(sg)] != expected) {
        const auto& e = seq_log_.back();
        return kernel_error(kernel_error::kind::collective_mismatch, gs_.group_id, {0, 0, 0}, to_string(e.where),
                            "ki::reference: kernel '" + std::string(d_->kernel_name) + "': work-group " +
                                to_string(gs_.group_id) + ": without independent sub-groups (profile '" +
                                std::string(d_->b->device.name) + "'), all sub-groups must execute the same communication "
                                "functions: sub-group " + std::to_string(sg) + " executed " +
                                std::to_string(seq_count_[static_cast<std::size_t>(sg)]) + ", sub-group " +
                                std::to_string(e.sub_group) + " executed " + std::to_string(expected) +
                                " (the last at " + to_string(e.where) + ")");
      }
    return std::nullopt;
  }

  /// The next context to run when the current one stops: a released item, else the driver.
  int next_to_resume() {
    if (ready_pos_ < ready_.size()) return ready_[ready_pos_++];
    return static_cast<int>(n_);
  }

  /// Suspends the running work-item (at a barrier) and runs whoever is next.
  void suspend(item& it) {
    const int self = static_cast<int>(it.local_linear);
    if (ready_pos_ < ready_.size()) fibers_.switch_to(self, ready_[ready_pos_++]);
    else if (loop_.next < n_) fibers_.spawn(self, &group_runner::runner_entry, this);
    else fibers_.switch_to(self, static_cast<int>(n_));
    resumed(it);
  }

  std::optional<kernel_error> divergence_error() const {
    // Group the waiting items by barrier, in order of first appearance.
    // Group the waiting items by what they wait at, in order of first appearance.
    struct waiting {
      source_location where;
      const char* what;  // "barrier" or a communication function
      std::vector<i64> items, sub_groups, lanes;
    };
    std::vector<waiting> at;
    std::vector<i64> exited;
    for (const item& it : items_) {
      if (it.local_linear >= loop_.next) continue;  // never started (cannot happen here)
      if (it.status != status::waiting && it.status != status::in_collective) {  // started, not waiting: exited
        exited.push_back(it.local_linear);
        continue;
      }
      const char* what = it.status == status::in_collective ? name_of(it.coll->kind) : "barrier";
      auto g = std::find_if(at.begin(), at.end(), [&](const waiting& w) { return same_point(w.where, it.at) && w.what == what; });
      if (g == at.end()) g = at.insert(at.end(), waiting{it.at, what, {}, {}, {}});
      g->items.push_back(it.local_linear);
      if (std::find(g->sub_groups.begin(), g->sub_groups.end(), it.sub_group_id) == g->sub_groups.end())
        g->sub_groups.push_back(it.sub_group_id);
    }
    std::ostringstream os;
    os << "ki::reference: kernel '" << d_->kernel_name << "': work-group " << to_string(gs_.group_id)
       << " cannot finish: ";
    for (std::size_t i = 0; i < at.size(); ++i) {
      os << (i ? "; " : "") << "items " << ranges(at[i].items) << " wait at " << at[i].what << " " << to_string(at[i].where);
      if (at[i].what != std::string("barrier")) {
        std::sort(at[i].sub_groups.begin(), at[i].sub_groups.end());
        os << " (sub-group" << (at[i].sub_groups.size() > 1 ? "s " : " ") << ranges(at[i].sub_groups) << ")";
      }
    }
    if (!exited.empty()) os << "; items " << ranges(exited) << " exited";
    os << " (items are linear local ids, x fastest; every work-item of a work-group must reach the same barrier, "
          "and every work-item of a sub-group (or of a segment, with a width on a device with partitionable "
          "sub-groups) the same communication function)";
    const item& first = items_[static_cast<std::size_t>(at.front().items.front())];
    return kernel_error(at.size() > 1 ? kernel_error::kind::barrier_mismatch : kernel_error::kind::cannot_finish,
                        gs_.group_id, first.local_id, to_string(first.at), os.str());
  }

  kernel_error item_error(kernel_error::kind k, const item& it, const std::string& what) const {
    std::ostringstream os;
    os << "ki::reference: kernel '" << d_->kernel_name << "': work-item " << to_string(it.local_id)
       << " (linear " << it.local_linear << ") of work-group " << to_string(gs_.group_id) << " " << what;
    std::string where;
    if (it.at.line != 0) {
      where = to_string(it.at);
      // A bad call is named "(at ...)" by `what`; other errors happened after this sync point.
      if (k != kernel_error::kind::invalid_collective) os << " (after " << it.at_what << " " << where << ")";
    }
    return kernel_error(k, gs_.group_id, it.local_id, where, os.str());
  }

  /// Per launch and thread: the work-items' local ids (the same for every group).
  void prepare(const launch_desc& d, std::uint64_t serial) {
    d_ = &d;
    if (serial == prepared_serial_) return;
    prepared_serial_ = serial;
    const i64 lx = d.items[0], ly = d.items[1], lz = d.items[2];
    n_ = lx * ly * lz;
    gs_.local_size = {lx, ly, lz};
    gs_.num_groups = {d.groups[0], d.groups[1], d.groups[2]};
    gs_.items = n_;
    gs_.sub_group_width = d.b->device.sub_group_width;
    gs_.exec = this;
    layout_ = make_layout(d.b->device, gs_.local_size);
    gs_.num_sub_groups = layout_.count;
    pending_.assign(static_cast<std::size_t>(layout_.count), {});
    poison_ = {d.b->device.poison_seed, 0};
    items_.assign(static_cast<std::size_t>(n_), item{});
    i64 k = 0;
    for (i64 z = 0; z < lz; ++z)
      for (i64 y = 0; y < ly; ++y)
        for (i64 x = 0; x < lx; ++x, ++k) {
          item& it = items_[static_cast<std::size_t>(k)];
          it.local_id = {x, y, z};
          it.local_linear = k;
          it.sub_group_id = layout_.sub_group[static_cast<std::size_t>(k)];
          it.sub_group_lane = layout_.lane[static_cast<std::size_t>(k)];
          it.sub_group_size = layout_.size[static_cast<std::size_t>(it.sub_group_id)];
          it.group = &gs_;
        }
    item_ptrs_.resize(static_cast<std::size_t>(n_));
    for (std::size_t i = 0; i < item_ptrs_.size(); ++i) item_ptrs_[i] = &items_[i];
    loop_.items = item_ptrs_.data();
    loop_.count = n_;
  }

  void* arena_alloc(std::size_t bytes, std::size_t align) {
    // Chunks are never moved, so memory handed out stays valid until the group ends.
    for (;;) {
      if (arena_chunk_ < arena_.size()) {
        auto& c = arena_[arena_chunk_];
        // Align the address, not the offset: chunks from new[] are only 16-byte aligned.
        const auto base = reinterpret_cast<std::uintptr_t>(c.p.get());
        const std::size_t off = (base + arena_used_ + align - 1) / align * align - base;
        if (off + bytes <= c.size) {
          arena_used_ = off + bytes;
          return c.p.get() + off;
        }
        ++arena_chunk_;
        arena_used_ = 0;
        continue;
      }
      const std::size_t sz = std::max<std::size_t>(bytes + align, 64 * 1024);
      arena_.push_back({std::unique_ptr<unsigned char[]>(new unsigned char[sz]), sz});
      arena_chunk_ = arena_.size() - 1;
      arena_used_ = 0;
    }
  }

  fiber_core fibers_;
  const launch_desc* d_ = nullptr;
  std::uint64_t prepared_serial_ = 0;
  cpu::group_state gs_;
  std::vector<item> items_;
  i64 n_ = 0;

  item_loop loop_;                 // unstarted work-items, run by the launch's loop
  bool dirty_statuses_ = false;    // a failed group may leave items marked waiting
  std::vector<cpu::item_state*> item_ptrs_;
  std::vector<int> waiting_;       // items waiting at the barrier, in arrival order
  std::vector<int> ready_;  // released items, in the order they run
  std::size_t ready_pos_ = 0;
  i64 arrived_ = 0;
  i64 in_collective_ = 0;  // items waiting in a communication function
  sub_group_layout layout_;
  std::vector<std::vector<pending_scope>> pending_;  // per sub-group: scopes with arrivals
  struct sequence_entry {
    i64 sub_group;
    const cpu::collective* c;
    cpu::collective_kind kind;
    source_location where;
    i64 width;
  };
  std::vector<i64> seq_count_;              // per sub-group: communication functions done
  std::vector<sequence_entry> seq_log_;     // the first sub-group's sequence
  scope scope_;
  poison_source poison_;
  std::map<std::string, std::pair<std::string, i64>> unspecified_;
  source_location round_point_{};
  bool mismatch_ = false;

  i64 failed_item_ = -1;
  kernel_error::kind failed_kind_{};
  std::string failed_message_;
  std::optional<kernel_error> group_error_;

  struct local_alloc {
    const void* key;
    void* p;
  };
  std::vector<local_alloc> locals_;
  std::size_t local_bytes_ = 0;
  struct chunk {
    std::unique_ptr<unsigned char[]> p;
    std::size_t size;
  };
  std::vector<chunk> arena_;
  std::size_t arena_chunk_ = 0, arena_used_ = 0;

 public:
  void reset_arena() {
    arena_chunk_ = 0;
    arena_used_ = 0;
  }
};

group_runner& runner_for(const backend& b) {
  thread_local std::unique_ptr<group_runner> r;
  const std::size_t s = resolve_stack_size(b);
  if (!r || r->stack_size() < s || r->stack_size() > 2 * s) r = std::make_unique<group_runner>(s);
  return *r;
}

std::atomic<std::uint64_t> launch_counter{0};

tbb::task_arena& arena_for(int threads) {
  static std::mutex m;
  static std::map<int, std::unique_ptr<tbb::task_arena>> arenas;
  std::lock_guard lock(m);
  auto& a = arenas[threads];
  if (!a) a = std::make_unique<tbb::task_arena>(threads);
  return *a;
}

}  // namespace

launch_result execute(const launch_desc& d) {
  fiber_core::recheck_fault_handlers();  // a test framework may have replaced them since the last launch
  const i64 ngroups = d.groups[0] * d.groups[1] * d.groups[2];  // each bounded by max_num_groups
  const std::uint64_t serial = ++launch_counter;
  const int threads = resolve_threads(*d.b);

  launch_result result;
  auto& first = result.error;
  warning_log log;
  if (threads == 1 || ngroups == 1) {
    group_runner& r = runner_for(*d.b);
    for (i64 g = 0; g < ngroups && !first; ++g) {
      r.reset_arena();
      first = r.run(d, serial, g);
      r.flush_warnings(log);
    }
  } else {
    // The error reported is the one of the lowest failing group id, whatever the threads'
    // timing: after a failure, only groups with lower ids still run.
    std::mutex m;
    i64 first_group = ngroups;
    std::atomic<i64> stop{ngroups};
    auto body = [&](const tbb::blocked_range<i64>& range) {
      group_runner& r = runner_for(*d.b);
      for (i64 g = range.begin(); g < range.end() && g < stop.load(std::memory_order_relaxed); ++g) {
        r.reset_arena();
        auto e = r.run(d, serial, g);
        r.flush_warnings(log);
        if (e) {
          std::lock_guard lock(m);
          if (g < first_group) first_group = g, first = std::move(e), stop = g;
        }
      }
    };
    if (threads > 1) arena_for(threads).execute([&] { tbb::parallel_for(tbb::blocked_range<i64>(0, ngroups), body); });
    else tbb::parallel_for(tbb::blocked_range<i64>(0, ngroups), body);
  }
  for (auto& [site, entry] : log.by_site) {
    const auto space = site.rfind(' ');
    result.warnings.push_back({"unspecified-lane-read", site.substr(0, space), entry.second,
                               entry.first + ", " + std::to_string(entry.second) + (entry.second == 1 ? " time" : " times")});
  }
  return result;
}

std::int64_t host_threads(const backend& b) {
  const int t = resolve_threads(b);
  return t > 0 ? t : tbb::this_task_arena::max_concurrency();
}

}  // namespace ki::reference::detail
