// ki::reference::explore: run a computation under many legal executions and compare outputs.
//
//   auto r = ki::reference::explore(b, 16, [&](const ki::reference::backend& bs) {
//     ki::launch(bs, geometry, my_kernel{}, out, in);
//     ki::synchronize(bs);
//     ki::reference::outputs o;
//     o.add("out", ki::to_host(bs, out));
//     return o;
//   });
//   if (r.found()) std::cerr << r.str();   // buffer, first differing elements, replay seed
//
// Seed 0 (forward order) is the baseline; seeds 1 .. n-1 choose other legal executions (see
// schedule.hpp): work-item order between sync points, work-group order, sub-group layout where
// the profile leaves it open, poison bytes. A correct kernel gives the same outputs under all
// of them; a race, an uninitialised read or a layout assumption shows up as a difference. The
// runs use threads = 1, so that each is deterministic and replayable by its seed.
#pragma once
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <ki/errors.hpp>
#include <ki/reference/backend.hpp>
#include <ki/reference/schedule.hpp>

namespace ki::reference {

/// What one run produced: named buffers, compared bytewise element by element.
class outputs {
 public:
  struct buffer {
    std::string name;
    std::size_t element_size = 0;
    std::vector<unsigned char> bytes;
    std::vector<std::string> shown;  ///< each element as text, for reports
  };

  template <class T>
  void add(std::string name, const std::vector<T>& v) {
    static_assert(std::is_arithmetic_v<T>, "ki::reference::outputs::add: arithmetic element types only");
    buffer b{std::move(name), sizeof(T), {}, {}};
    b.bytes.resize(v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(b.bytes.data(), v.data(), b.bytes.size());
    b.shown.reserve(v.size());
    for (const T& x : v) {
      std::ostringstream os;
      if constexpr (sizeof(T) == 1) os << static_cast<int>(x);
      else os << x;
      b.shown.push_back(os.str());
    }
    buffers.push_back(std::move(b));
  }

  std::vector<buffer> buffers;
  std::string error;  ///< the kernel_error of the run, if it failed (then buffers may be empty)
};

/// One run whose outputs differ from the baseline's.
struct difference {
  std::uint64_t seed = 0;  ///< replay: KI_REFERENCE_SEED=<seed> or schedule::from_seed(seed)
  std::string buffer;      ///< the buffer's name ("" when the error differs)
  std::int64_t count = 0;  ///< differing elements
  struct element {
    std::int64_t index;
    std::string baseline, value;
  };
  std::vector<element> first;  ///< the first (at most 8) differing elements
  std::string error;           ///< when the runs differ in failing: this run's error, or "" (baseline's failed)
};

struct exploration {
  std::int64_t runs = 0;
  std::vector<difference> differences;
  bool found() const { return !differences.empty(); }
  /// Readable: one paragraph per difference, with the replay seed.
  std::string str() const;
  std::string json() const;
};

namespace detail {
/// The differences of `run` (from seed `seed`) against `baseline`.
std::vector<difference> compare(const outputs& baseline, const outputs& run, std::uint64_t seed);
}  // namespace detail

/// Runs f(b') for seeds 0 .. seeds-1, b' being b with that seed's schedule and threads = 1;
/// f returns the outputs to compare. A kernel_error thrown by f is recorded as that run's error.
template <class F>
exploration explore(const backend& b, std::int64_t seeds, F f) {
  exploration r;
  outputs baseline;
  for (std::int64_t s = 0; s < seeds; ++s) {
    backend bs = b;
    bs.threads = 1;
    bs.print_warnings = false;
    bs.schedule = schedule::from_seed(static_cast<std::uint64_t>(s));
    outputs o;
    try {
      o = f(static_cast<const backend&>(bs));
    } catch (const kernel_error& e) {
      o.error = e.what();
    }
    ++r.runs;
    if (s == 0) baseline = std::move(o);
    else
      for (auto& d : detail::compare(baseline, o, static_cast<std::uint64_t>(s))) r.differences.push_back(std::move(d));
  }
  return r;
}

}  // namespace ki::reference
