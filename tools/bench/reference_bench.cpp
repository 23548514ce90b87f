// Benchmarks of the reference backend (the oracle).
//
//   BM_ki_barrier            one work-group of 256 work-items crossing 1000 barriers, threads = 1:
//                            ns per work-item per barrier (target: <= 15 ns)
//   BM_fiber_core_ring       its floor: a ring of 256 fibers of the executor's own fiber core
//                            (<ki/cpu/fiber.hpp>) switching 1000 times around: ns per switch.
//                            A barrier costs at least one such switch per work-item.
//   BM_minimal_switch_ring   (x86-64) the same ring on a bare 6-register switch outside the fiber
//                            core (the core's own switch is the same code on x86-64): what a
//                            context switch costs on this machine, without the core's bookkeeping
//   BM_ki_atomic/0, /1       one work-group of 256 work-items, each making 1000 atomic_fetch_add
//                            on one of 16 global counters (/1: on the next one at every
//                            operation, as a histogram does), threads = 1: ns per operation
//                            (what the spin watch costs: docs/debugging.md, "Spin-waits")
//   BM_ki_vadd / BM_plain_vadd
//                            c[i] = a[i] + b[i] on 2^24 floats: ki (all cores, work-group 256)
//                            against a plain loop over the same arrays on 1 thread and on all
//                            cores (target: ki >= 0.3x the plain loop)
//   BM_ki_reduce / BM_plain_reduce
//                            the threadgroup tree reduction of the Metal document
//                            (partial_sums!): 256 floats of local memory, a barrier after each
//                            halving step, one partial sum per group; against a plain loop
//                            summing the same chunks of 256
//
// Every benchmark checks its result once, outside the timed loop, and reports an error instead
// of a number if the kernel computed something wrong. After the usual table a summary prints the
// medians over the repetitions (--benchmark_repetitions=3) and the ratios.
#include "bench_common.hpp"

#include <ki/cpu/fiber.hpp>  // the CPU runtime's fiber core (ki::cpu_runtime)

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace ki_bench;
template <class T>
using ref_array = ki::array<T, ref_backend>;

constexpr int barrier_count = ops_per_item;  // barriers per work-item in BM_ki_barrier
constexpr i64 vadd_n = i64{1} << 24;

int all_cores() { return std::max(2, static_cast<int>(std::thread::hardware_concurrency())); }

// --- kernels -------------------------------------------------------------------------------

// --- data ----------------------------------------------------------------------------------

/// Inputs a, b, the vadd output c and the per-group sums of a, for one n (made once per n).
struct arrays {
  explicit arrays(i64 n) : n(n) {
    std::vector<float> ha(static_cast<std::size_t>(n)), hb(static_cast<std::size_t>(n));
    for (i64 i = 0; i < n; ++i) {
      ha[static_cast<std::size_t>(i)] = static_cast<float>((i * 7) % 1013) * 0.25f;
      hb[static_cast<std::size_t>(i)] = static_cast<float>((i * 13) % 509) - 100.0f;
    }
    a = ki::to_device(b_, ha);
    b = ki::to_device(b_, hb);
    c = ki::allocate<float>(b_, n);
    sums = ki::allocate<float>(b_, groups());
  }
  i64 groups() const { return (n + group_size - 1) / group_size; }

  ref_backend b_{};
  i64 n;
  ref_array<float> a, b, c, sums;
};

arrays& data(i64 n) {
  static std::map<i64, std::unique_ptr<arrays>> cache;
  auto& p = cache[n];
  if (!p) p = std::make_unique<arrays>(n);
  return *p;
}

/// The host's reference result for partial_sums: the same tree, in the same order, so a correct
/// kernel matches it bit for bit.
std::vector<float> tree_sums(const float* x, i64 n) {
  std::vector<float> out(static_cast<std::size_t>((n + group_size - 1) / group_size));
  float s[group_size];
  for (std::size_t g = 0; g < out.size(); ++g) {
    for (i64 t = 0; t < group_size; ++t) {
      const i64 i = static_cast<i64>(g) * group_size + t;
      s[t] = i < n ? x[i] : 0.0f;
    }
    for (i64 step = group_size / 2; step > 0; step /= 2)
      for (i64 t = 0; t < step; ++t) s[t] += s[t + step];
    out[g] = s[0];
  }
  return out;
}

// --- 1. barrier cost -----------------------------------------------------------------------

void BM_ki_barrier(benchmark::State& state) {
  const ref_backend b{.threads = 1};
  auto passed = ki::allocate<int>(b, group_size);
  const auto launch = [&] {
    ki::launch(b, {.numgroups = 1, .workgroupsize = group_size}, barrier_loop{}, passed, barrier_count);
    ki::synchronize(b);
  };
  const auto check = [&]() -> std::string {
    for (int v : ki::to_host(b, passed))
      if (v != barrier_count) return "a work-item passed " + std::to_string(v) + " barriers, not 1000";
    return "";
  };
  if (!first_run_ok(state, launch, check)) return;
  timed_loop(state, "ns_per_item_barrier", static_cast<double>(group_size) * barrier_count, launch);
}
BENCHMARK(BM_ki_barrier)->Unit(benchmark::kMillisecond)->UseRealTime();

// --- 2. atomic operations (the spin watch's cost) ----------------------------------------------

constexpr int counters = 16;

/// Each work-item adds 1 to a counter `count` times, with relaxed atomics: always counter l % 16
/// (scatter false), or the next one of the 16 at every operation (scatter true: a histogram).
struct atomic_loop {
  void operator()(ki::span<int> c, int count, bool scatter) const {
    const int l = static_cast<int>(ki::get_local_id().x);
    for (int k = 0; k < count; ++k) ki::atomic_fetch_add(&c[(l + (scatter ? k : 0)) % counters], 1);
  }
};

void BM_ki_atomic(benchmark::State& state) {
  const ref_backend b{.threads = 1};
  const bool scatter = state.range(0) != 0;
  auto c = ki::zeros<int>(b, counters);  // (checked after the first launch)
  const auto launch = [&] {
    ki::launch(b, {.numgroups = 1, .workgroupsize = group_size}, atomic_loop{}, c, ops_per_item, scatter);
    ki::synchronize(b);
  };
  const auto check = [&]() -> std::string {
    for (int v : ki::to_host(b, c))
      if (v != group_size / counters * ops_per_item) return "a counter holds " + std::to_string(v);
    return "";
  };
  if (!first_run_ok(state, launch, check)) return;
  timed_loop(state, "ns_per_atomic", static_cast<double>(group_size) * ops_per_item, launch);
}
BENCHMARK(BM_ki_atomic)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

/// A ring of n fibers of the executor's fiber core: fiber k starts fiber k+1 (a spawn, as the
/// executor's runner does), then every fiber switches to the next one until `total` switches
/// have been made; then they end one after another, the last one back to the thread's stack.
class fiber_ring {
 public:
  fiber_ring(int n, i64 total, std::size_t stack_size) : core_(stack_size), n_(n), total_(total) {
    for (int k = 0; k < n; ++k) args_.push_back({this, k});
  }
  /// Returns the number of switches made (total) once every fiber has ended.
  i64 run() {
    done_ = 0;
    ended_ = 0;
    core_.reset(n_ + 1);
    core_.spawn(n_, &entry, &args_[0]);
    return ended_ == n_ ? done_ : -1;
  }

 private:
  struct arg {
    fiber_ring* r;
    int k;
  };
  static int entry(void* p) {
    const arg a = *static_cast<arg*>(p);
    fiber_ring& r = *a.r;
    if (a.k + 1 < r.n_) r.core_.spawn(a.k, &entry, &r.args_[static_cast<std::size_t>(a.k + 1)]);
    const int next = (a.k + 1) % r.n_;
    while (r.done_ < r.total_) {
      ++r.done_;
      r.core_.switch_to(a.k, next);
    }
    return ++r.ended_ == r.n_ ? r.n_ : next;
  }

  ki::detail::cpu::fiber_core core_;
  int n_;
  i64 total_;
  std::vector<arg> args_;
  i64 done_ = 0;
  int ended_ = 0;
};

void BM_fiber_core_ring(benchmark::State& state) {
  const i64 total = group_size * barrier_count;
  fiber_ring ring(static_cast<int>(group_size), total, 256 * 1024);  // the executor's default stack size
  if (ring.run() != total) {
    state.SkipWithError("the fiber ring did not make every switch");
    return;
  }
  timed_loop(state, "ns_per_switch", static_cast<double>(total), [&] { benchmark::DoNotOptimize(ring.run()); });
}
BENCHMARK(BM_fiber_core_ring)->Unit(benchmark::kMillisecond)->UseRealTime();

#if defined(__x86_64__) && (defined(__linux__) || defined(__APPLE__) || defined(__unix__)) && !defined(_WIN32)
// The smallest correct switch for the System V x86-64 ABI: save the six callee-saved registers
// on the old stack, swap stack pointers, restore them from the new stack. (MXCSR and the x87
// control word are not saved: nothing here changes them.) A floor for what a switch can cost.
extern "C" void ki_bench_swap(void** save_sp, void* to_sp);
asm(R"(
  .text
  .p2align 4
  .globl ki_bench_swap
  .type ki_bench_swap, @function
ki_bench_swap:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size ki_bench_swap, .-ki_bench_swap
)");

class minimal_ring {
 public:
  minimal_ring(int n, i64 total) : n_(n), total_(total), sp_(static_cast<std::size_t>(n)) {
    for (int k = 0; k < n; ++k) stacks_.push_back(std::make_unique<char[]>(stack_bytes));
  }
  i64 run() {
    // Each fiber starts at entry() the first time it is switched to; fibers still suspended
    // when the count is reached are simply forgotten (nothing on their stacks needs unwinding).
    for (int k = 0; k < n_; ++k) {
      auto top = reinterpret_cast<std::uintptr_t>(stacks_[static_cast<std::size_t>(k)].get() + stack_bytes) &
                 ~std::uintptr_t{15};
      auto** p = reinterpret_cast<void**>(top);
      *--p = nullptr;                              // entry's return address (it never returns)
      *--p = reinterpret_cast<void*>(&entry);      // where ki_bench_swap "returns" to
      for (int r = 0; r < 6; ++r) *--p = nullptr;  // rbp rbx r12 r13 r14 r15
      sp_[static_cast<std::size_t>(k)] = p;
    }
    done_ = 0;
    started_ = 0;
    self = this;
    ki_bench_swap(&main_sp_, sp_[0]);
    return done_;
  }

 private:
  static constexpr std::size_t stack_bytes = 16 * 1024;
  static inline minimal_ring* self = nullptr;
  [[noreturn]] static void entry() {
    minimal_ring& r = *self;
    const int k = r.started_++;  // fibers start in ring order
    const int next = (k + 1) % r.n_;
    for (;;) {
      if (r.done_ >= r.total_) ki_bench_swap(&r.sp_[static_cast<std::size_t>(k)], r.main_sp_);
      ++r.done_;
      ki_bench_swap(&r.sp_[static_cast<std::size_t>(k)], r.sp_[static_cast<std::size_t>(next)]);
    }
  }
  int n_;
  i64 total_;
  std::vector<void*> sp_;
  std::vector<std::unique_ptr<char[]>> stacks_;
  void* main_sp_ = nullptr;
  i64 done_ = 0;
  int started_ = 0;
};

void BM_minimal_switch_ring(benchmark::State& state) {
  const i64 total = group_size * barrier_count;
  minimal_ring ring(static_cast<int>(group_size), total);
  if (ring.run() != total) {
    state.SkipWithError("the minimal ring did not make every switch");
    return;
  }
  timed_loop(state, "ns_per_switch", static_cast<double>(total), [&] { benchmark::DoNotOptimize(ring.run()); });
}
BENCHMARK(BM_minimal_switch_ring)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

// --- 2. barrier-free vector add ------------------------------------------------------------

/// range(1): host threads running work-groups (0: all cores, the default).
void BM_ki_vadd(benchmark::State& state) {
  arrays& d = data(state.range(0));
  const ref_backend b{.threads = static_cast<int>(state.range(1))};
  const auto launch = [&] {
    ki::launch(b, {.ndrange = d.n, .workgroupsize = group_size}, vadd{}, d.c, d.a, d.b);
    ki::synchronize(b);
  };
  const auto check = [&]() -> std::string {
    const float *a = d.a.data(), *bb = d.b.data(), *c = d.c.data();
    for (i64 i = 0; i < d.n; ++i)
      if (c[i] != a[i] + bb[i]) return "c[" + std::to_string(i) + "] != a[i] + b[i]";
    return "";
  };
  if (!first_run_ok(state, launch, check)) return;
  for (auto _ : state) launch();
  state.SetBytesProcessed(state.iterations() * d.n * 3 * static_cast<i64>(sizeof(float)));
}
BENCHMARK(BM_ki_vadd)
    ->Args({vadd_n, 0})
    ->Args({vadd_n, 1})
    ->Args({1 << 20, 0})
    ->Args({1 << 20, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

/// The same arrays, a plain loop; range(1) threads.
void BM_plain_vadd(benchmark::State& state) {
  arrays& d = data(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  float* c = d.c.data();
  const float *a = d.a.data(), *b = d.b.data();
  const auto run = [&] {
    split(threads, d.n, [=](i64 lo, i64 hi) {
      for (i64 i = lo; i < hi; ++i) c[i] = a[i] + b[i];
    });
    benchmark::DoNotOptimize(c);
    benchmark::ClobberMemory();
  };
  run();
  for (i64 i = 0; i < d.n; ++i)
    if (c[i] != a[i] + b[i]) {
      state.SkipWithError("plain vadd computed a wrong c");
      return;
    }
  for (auto _ : state) run();
  state.SetBytesProcessed(state.iterations() * d.n * 3 * static_cast<i64>(sizeof(float)));
}
BENCHMARK(BM_plain_vadd)
    ->Args({1 << 20, 1})
    ->Args({1 << 20, all_cores()})
    ->Args({vadd_n, 1})
    ->Args({vadd_n, all_cores()})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// --- 3. tree reduction (Metal's partial_sums!) ---------------------------------------------

/// range(1): host threads running work-groups (0: all cores, the default).
void BM_ki_reduce(benchmark::State& state) {
  arrays& d = data(state.range(0));
  const ref_backend b{.threads = static_cast<int>(state.range(1))};
  const auto launch = [&] {
    ki::launch(b, {.numgroups = d.groups(), .workgroupsize = group_size}, partial_sums{}, d.sums, d.a);
    ki::synchronize(b);
  };
  const auto check = [&]() -> std::string {
    const auto expect = tree_sums(d.a.data(), d.n);
    const float* got = d.sums.data();
    for (std::size_t g = 0; g < expect.size(); ++g)
      if (got[g] != expect[g]) return "partial sum of group " + std::to_string(g) + " is wrong";
    return "";
  };
  if (!first_run_ok(state, launch, check)) return;
  // 9 barriers per work-item: one after the load, one after each of the log2(256) halvings.
  timed_loop(state, "ns_per_item_barrier", static_cast<double>(d.groups() * group_size * 9), launch);
  state.SetBytesProcessed(state.iterations() * d.n * static_cast<i64>(sizeof(float)));
}
BENCHMARK(BM_ki_reduce)
    ->Args({1 << 20, 0})
    ->Args({1 << 20, 1})
    ->Args({vadd_n, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

/// A plain loop summing each chunk of 256 in order (what one would write on the host); range(1) threads.
void BM_plain_reduce(benchmark::State& state) {
  arrays& d = data(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  std::vector<float> out(static_cast<std::size_t>(d.groups()));
  const float* x = d.a.data();
  const i64 n = d.n;
  float* o = out.data();
  const auto run = [&] {
    split(threads, d.groups(), [=](i64 g0, i64 g1) {
      for (i64 g = g0; g < g1; ++g) {
        float s = 0.0f;
        const i64 end = std::min(n, (g + 1) * group_size);
        for (i64 i = g * group_size; i < end; ++i) s += x[i];
        o[g] = s;
      }
    });
    benchmark::DoNotOptimize(o);
    benchmark::ClobberMemory();
  };
  run();
  // The inputs are multiples of 1/4 below 256, so every chunk sum is exact in any order.
  const auto expect = tree_sums(x, n);
  for (std::size_t g = 0; g < expect.size(); ++g)
    if (out[g] != expect[g]) {
      state.SkipWithError("plain reduction computed a wrong sum");
      return;
    }
  for (auto _ : state) run();
  state.SetBytesProcessed(state.iterations() * d.n * static_cast<i64>(sizeof(float)));
}
BENCHMARK(BM_plain_reduce)
    ->Args({i64{1} << 20, 1})
    ->Args({i64{1} << 20, all_cores()})
    ->Args({vadd_n, 1})
    ->Args({vadd_n, all_cores()})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// --- summary -------------------------------------------------------------------------------

/// The console table, then the medians over repetitions and the ratios the targets are stated in.
class summary_reporter : public summary_reporter_base {
 public:
  using summary_reporter_base::summary_reporter_base;

 protected:
  void summary(std::ostream& os) override {
    const std::string N = std::to_string(vadd_n), cores = std::to_string(all_cores());

    const auto bar = median("BM_ki_barrier", "ns_per_item_barrier");
    const auto ring = median("BM_fiber_core_ring", "ns_per_switch");
    const auto minimal = median("BM_minimal_switch_ring", "ns_per_switch");
    if (bar)
      print("  barrier (256 items x 1000 barriers, threads=1): %7.2f ns per item per barrier (target <= 15)\n", *bar);
    if (ring) print("  fiber_core ring switch (256 fibers):             %7.2f ns per switch\n", *ring);
    if (minimal) print("  bare minimal switch ring (outside the core):    %7.2f ns per switch\n", *minimal);
    if (bar && ring) print("  barrier / fiber_core switch:                     %7.2fx\n", *bar / *ring);
    if (bar && minimal) print("  barrier / minimal switch:                        %7.2fx\n", *bar / *minimal);
    if (const auto at = median("BM_ki_atomic/0", "ns_per_atomic"))
      print("  atomic_fetch_add (256 items x 1000, threads=1):  %7.2f ns per operation (one counter)\n", *at);
    if (const auto at = median("BM_ki_atomic/1", "ns_per_atomic"))
      print("  atomic_fetch_add (256 items x 1000, threads=1):  %7.2f ns per operation (16 in turn)\n", *at);

    const auto gbs = [&](const std::string& key) {
      auto v = median(key, "bytes_per_second");
      if (v) *v /= 1e9;
      return v;
    };
    // ki on all cores and on 1 thread, each against the plain loop on 1 thread and on all cores.
    const auto compare = [&](const std::string& what, const std::string& ki_key, const std::string& plain_key,
                             const char* note) {
      const auto p1 = gbs(plain_key + "/1"), pn = gbs(plain_key + "/" + cores);
      if (p1) print("  %s plain loop, 1 thread:   %8.3f GB/s\n", what.c_str(), *p1);
      if (pn) print("  %s plain loop, %s threads:  %8.3f GB/s\n", what.c_str(), cores.c_str(), *pn);
      for (const char* t : {"0", "1"}) {
        const auto k = gbs(ki_key + "/" + t);
        if (!k) continue;
        print("  %s ki, %-13s    %8.3f GB/s", what.c_str(), *t == '0' ? "all cores:" : "1 thread:", *k);
        if (p1) print("   ki/plain(1 thread) %.3fx", *k / *p1);
        if (pn) print("   ki/plain(%s threads) %.3fx", cores.c_str(), *k / *pn);
        os << note << "\n";
        if (const auto nb = median(ki_key + "/" + t, "ns_per_item_barrier"))
          print("  %s ki, %-13s    %8.2f ns of wall time per item per barrier\n", what.c_str(),
                *t == '0' ? "all cores:" : "1 thread:", *nb);
      }
    };
    for (const int lg : {20, 24}) {
      const std::string n = std::to_string(i64{1} << lg), what = "vadd   2^" + std::to_string(lg);
      compare(what, "BM_ki_vadd/" + n, "BM_plain_vadd/" + n, lg == 24 ? "   [target >= 0.3x]" : "");
    }
    for (const int lg : {20, 24}) {
      const std::string n = std::to_string(i64{1} << lg), what = "reduce 2^" + std::to_string(lg);
      compare(what, "BM_ki_reduce/" + n, "BM_plain_reduce/" + n, "");
    }
  }
};

}  // namespace

int main(int argc, char** argv) { return ki_bench::run_benchmarks<summary_reporter>(argc, argv); }
