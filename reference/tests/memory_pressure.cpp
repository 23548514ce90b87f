// Out of memory anywhere is a clear error and leaves the backend usable (issue "never crash,
// never hang"). The process's address space is capped (RLIMIT_AS) a little above what it uses,
// then allocations, launches and copies of growing sizes are made until they fail: each must
// fail with std::bad_alloc (or a kernel_error saying the kernel ran out of memory), the queue
// must keep working (no hang at synchronize or at exit: CTest's TIMEOUT turns one into a
// failure), and with the cap lifted the same backend value runs a launch right.
#include <sys/resource.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include <ki/ki.hpp>
#include <ki/reference.hpp>

namespace {
using i64 = std::int64_t;

struct touch {
  void operator()(ki::span<char> a, i64 n) const {
    const i64 g = ki::get_global_id().x;
    for (i64 k = g; k < n; k += ki::get_global_size().x) a[k] = 1;
    ki::barrier();
  }
};

std::size_t address_space_used() {
  std::ifstream f("/proc/self/statm");
  std::size_t pages = 0;
  f >> pages;
  return pages * 4096;
}

/// One round: an allocation of `bytes`, a launch over it, a copy back, synchronize.
void round(const ki::reference::backend& b, std::size_t bytes) {
  auto a = ki::zeros<char>(b, static_cast<i64>(bytes));
  ki::launch(b, {.numgroups = 4, .workgroupsize = 64}, touch{}, a, static_cast<i64>(bytes));
  std::vector<char> h(bytes);
  ki::copyto(b, h, a);
  ki::synchronize(b);
}
}  // namespace

TEST_CASE("memory pressure: out of memory is std::bad_alloc, and the queue goes on", "[pressure]") {
  for (const auto mode :
       {ki::reference::queue_mode::async, ki::reference::queue_mode::delayed, ki::reference::queue_mode::immediate}) {
    INFO("queue mode " << static_cast<int>(mode));
    const ki::reference::backend b{.queue = mode};
    round(b, 1 << 20);  // warm: the queue's worker, the runner and its stacks exist
    rlimit old{};
    REQUIRE(getrlimit(RLIMIT_AS, &old) == 0);
    rlimit cap = old;
    cap.rlim_cur = address_space_used() + (std::size_t{48} << 20);
    REQUIRE(setrlimit(RLIMIT_AS, &cap) == 0);
    int failed = 0, other = 0;
    std::string unexpected;
    for (std::size_t mb = 1; mb <= 96; mb += 5) {
      try {
        round(b, mb << 20);
      } catch (const std::bad_alloc&) {
        ++failed;
      } catch (const ki::kernel_error& e) {
        if (std::string(e.what()).find("ran out of memory") != std::string::npos) ++failed;
        else ++other, unexpected = e.what();
      } catch (const std::exception& e) {
        ++other, unexpected = e.what();
      }
    }
    // A round that failed before its synchronize (its host vector, say) leaves its launch in
    // the queue; that launch's own failure is reported at the next synchronize: drained here,
    // still under the cap, counted like the others.
    try {
      ki::synchronize(b);
    } catch (const ki::kernel_error& e) {
      if (std::string(e.what()).find("ran out of memory") != std::string::npos) ++failed;
      else ++other, unexpected = e.what();
    } catch (const std::bad_alloc&) {
      ++failed;
    }
    REQUIRE(setrlimit(RLIMIT_AS, &old) == 0);
    INFO(unexpected);
    CHECK(other == 0);
    CHECK(failed > 0);  // the cap was reached
    // The same backend value, uncapped: everything works.
    auto a = ki::zeros<char>(b, 1 << 20);
    ki::launch(b, {.numgroups = 4, .workgroupsize = 64}, touch{}, a, i64{1} << 20);
    ki::synchronize(b);
    CHECK(ki::to_host(b, a) == std::vector<char>(1 << 20, 1));
  }
}

TEST_CASE("memory pressure: a host thread whose queue gets no worker thread loses nothing", "[pressure]") {
  // The thread exists before the cap, and has run a launch in the immediate mode (which needs no
  // worker thread): its queue and its fibers (64 stacks of 256 KiB) exist. Under a cap 4 MiB above
  // what the process uses, its first asynchronous launch cannot create the queue's worker thread
  // (an 8 MiB stack); the queue then runs its operations when the thread waits for them (as in
  // the delayed mode). One thread runs the groups (threads = 1): the calling thread.
  const ki::reference::backend b{.threads = 1, .queue = ki::reference::queue_mode::async};
  const ki::reference::backend warm{.threads = 1, .queue = ki::reference::queue_mode::immediate};
  std::mutex m;
  std::condition_variable cv;
  bool ready = false, go = false, done = false;
  std::vector<int> result;
  std::string error;
  std::thread t([&] {
    {
      auto w = ki::zeros<char>(warm, 4096);
      ki::launch(warm, {.numgroups = 4, .workgroupsize = 64}, touch{}, w, i64{4096});
      ki::synchronize(warm);
    }
    {
      std::unique_lock l(m);
      ready = true;
      cv.notify_all();
      cv.wait(l, [&] { return go; });
    }
    try {
      auto a = ki::zeros<char>(b, 4096);
      ki::launch(b, {.numgroups = 4, .workgroupsize = 64}, touch{}, a, i64{4096});
      std::vector<char> h(4096);
      ki::copyto(b, h, a);
      ki::synchronize(b);
      for (const char c : h) result.push_back(c);
    } catch (const std::exception& e) {
      error = e.what();
    }
    std::lock_guard l(m);
    done = true;
    cv.notify_all();
  });
  {
    std::unique_lock l(m);
    cv.wait(l, [&] { return ready; });
  }
  rlimit old{};
  REQUIRE(getrlimit(RLIMIT_AS, &old) == 0);
  rlimit cap = old;
  cap.rlim_cur = address_space_used() + (std::size_t{4} << 20);
  REQUIRE(setrlimit(RLIMIT_AS, &cap) == 0);
  {
    std::unique_lock l(m);
    go = true;
    cv.notify_all();
    cv.wait(l, [&] { return done; });
  }
  REQUIRE(setrlimit(RLIMIT_AS, &old) == 0);
  t.join();  // (its queue ran what it still held)
  CHECK(error == "");
  CHECK(result == std::vector<int>(4096, 1));
}
