// The conformance suite's one list of backends, and the helpers every spec test shares.
//
// Each spec test is written once, as
//   TEMPLATE_LIST_TEST_CASE("...", "[topic]", ki_test::backends) { auto b = ki_test::make<TestType>(); ... }
// and compiled into one executable per backend: CMake defines KI_TEST_BACKEND_<NAME>=1 for that
// executable only (KI_TEST_BACKEND_REFERENCE for the C++ build, KI_TEST_BACKEND_CUDA when nvcc
// compiles the very same .cpp files, KI_TEST_BACKEND_HIP when hipcc does), so each compiler only
// sees its own backend.
//
// Kernels are functor structs at namespace scope with a KI_DEVICE operator() (not lambdas inside
// test cases: nvcc's extended lambdas may not live in the functions Catch2 generates). They use
// only ki:: device functions and ki::span, never host-only facilities, so the same source builds
// for GPUs. Expected values are computed on the host in closed form, never by the library.
//
// Everything backend-specific the suite needs is in ki_test::config<B> below, in this one place:
// how to make a backend value for tests, a differently configured one, how to compare two, and
// which extra device shapes (e.g. sub-group widths) the backend can emulate.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <ki/ki.hpp>
// Every executable of the suite includes the oracle: it is the reference result of the GPU ones
// (gpu_vs_reference.cpp) and of simd_cpu's comparisons.
#include <ki/reference.hpp>
#ifndef KI_TEST_BACKEND_REFERENCE
#define KI_TEST_BACKEND_REFERENCE 0
#endif
#ifndef KI_TEST_BACKEND_CUDA
#define KI_TEST_BACKEND_CUDA 0
#endif
#ifndef KI_TEST_BACKEND_HIP
#define KI_TEST_BACKEND_HIP 0
#endif
#if KI_TEST_BACKEND_CUDA
#include <ki/cuda.hpp>
#endif
#ifndef KI_TEST_BACKEND_SIMD_CPU
#define KI_TEST_BACKEND_SIMD_CPU 0
#endif
#if KI_TEST_BACKEND_SIMD_CPU
#include <ki/simd_cpu.hpp>
#endif
#if KI_TEST_BACKEND_HIP
#include <ki/hip.hpp>
#endif

/// INFO for the suite: Catch2's INFO with its scoped message referenced. nvcc 13.0's host front
/// end (cudafe++) spins without end on Catch2's own INFO inside a loop of a
/// TEMPLATE_LIST_TEST_CASE (its ScopedMessage is a local that is never referenced; referencing
/// it avoids the hang: docs/offload.md, "Known problems"). Use KI_INFO, never INFO, in spec tests.
#define KI_TEST_CAT2(a, b) a##b
#define KI_TEST_CAT(a, b) KI_TEST_CAT2(a, b)
#define KI_INFO(...)                                                                                               \
  const ::Catch::ScopedMessage KI_TEST_CAT(ki_info_, __LINE__)(                                                    \
      ::Catch::MessageBuilder("INFO"_catch_sr, CATCH_INTERNAL_LINEINFO, ::Catch::ResultWas::Info) << __VA_ARGS__); \
  (void)KI_TEST_CAT(ki_info_, __LINE__)

namespace ki_test {

/// Per backend: how the suite configures it. Specialised below for each enabled backend.
template <class B>
struct config;

#if KI_TEST_BACKEND_REFERENCE
template <>
struct config<ki::reference::backend> {
  using B = ki::reference::backend;
  static constexpr const char* name = "reference";
  /// Whether backend values differ in configuration (so that same() can tell them apart).
  static constexpr bool configurable = true;
  static bool available(std::string&) { return true; }
  /// The value the tests use: the device of KI_REFERENCE_PROFILE (default: the cuda preset), so
  /// that the whole suite can be run against any profile the oracle emulates.
  static B make() { return B{}; }
  /// A value whose configuration differs from make() (kernel.backend tests).
  static B configured() {
    B b{};
    b.device.sub_group_width = b.device.sub_group_width == 16 ? 8 : 16;
    b.device.max_work_group_size = b.device.max_work_group_size / 2;
    b.device.max_local_memory = b.device.max_local_memory / 2;
    b.device.layout_seed = b.device.layout_seed + 1;
    b.device.name = "configured";
    b.threads = 3;
    b.stack_size = 192 * 1024;
    b.print_warnings = !b.print_warnings;
    return b;
  }
  static bool same(const B& a, const B& b) {
    const auto& p = a.device;
    const auto& q = b.device;
    return p.sub_group_width == q.sub_group_width && p.max_work_group_size == q.max_work_group_size &&
           p.max_work_group_dims == q.max_work_group_dims && p.max_num_groups == q.max_num_groups &&
           p.max_local_memory == q.max_local_memory && p.linear_subgroups == q.linear_subgroups &&
           p.unpromised_layout == q.unpromised_layout && p.independent_subgroups == q.independent_subgroups &&
           p.partitionable_subgroups == q.partitionable_subgroups && p.float64 == q.float64 && p.unified == q.unified &&
           p.layout_seed == q.layout_seed && p.poison_seed == q.poison_seed && std::string(p.name) == q.name &&
           p.devices == q.devices && p.multiprocessor_count == q.multiprocessor_count && a.threads == b.threads &&
           a.stack_size == b.stack_size && a.print_warnings == b.print_warnings && a.queue == b.queue;
  }
  /// A backend value with at least two devices where the backend can emulate them (the
  /// multi-device tests skip where ndevices is 1).
  static B multi_device() {
    B b = make();
    b.device.devices = 3;
    return b;
  }
  /// The devices the sub-group tests run on, declared here once: the oracle emulates other
  /// sub-group widths, layouts and participation rules. The profile of make(); the cuda preset
  /// at widths 1, 4, 16 and 64 (linear, independent, partitionable); every other preset of
  /// profile::presets() (amd-wave64, amd-wave32, apple: linear, not partitionable; intel:
  /// adversarial layouts; strict: adversarial, not independent, random poison); and custom
  /// profiles: adversarial layouts with partitionable sub-groups at widths 4, 32 and 64, the
  /// linear promise with adversarial layouts for the shapes it does not cover (width 16), and
  /// adversarial layouts without independent sub-groups but with the fixed poison word (widths 2
  /// and 8). The sub-group tests read lanes without a work-item on purpose, so warnings are not
  /// printed.
  static std::vector<B> sub_group_variants() {
    std::vector<B> v{make()};
    for (std::int64_t w : {1, 4, 16, 64}) {
      B b{.device = ki::reference::profile::preset("cuda")};
      b.device.sub_group_width = w;
      v.push_back(b);
    }
    for (const auto& p : ki::reference::profile::presets())
      if (std::string_view(p.name) != "cuda") v.push_back(B{.device = p});
    for (std::int64_t w : {4, 32, 64}) {
      B b{.device = ki::reference::profile::preset("cuda")};
      b.device.name = "adversarial-partitionable";
      b.device.sub_group_width = w;
      b.device.linear_subgroups = false;
      b.device.unpromised_layout = ki::reference::layout::adversarial;
      b.device.layout_seed = static_cast<std::uint64_t>(w) + 11;
      v.push_back(b);
    }
    {
      B b{.device = ki::reference::profile::preset("cuda")};
      b.device.name = "linear-promise-only";
      b.device.sub_group_width = 16;
      b.device.unpromised_layout = ki::reference::layout::adversarial;
      b.device.partitionable_subgroups = false;
      b.device.layout_seed = 5;
      v.push_back(b);
    }
    for (std::int64_t w : {2, 8}) {
      B b{.device = ki::reference::profile::preset("strict")};
      b.device.name = "strict-fixed-poison";
      b.device.sub_group_width = w;
      b.device.poison_seed = 0;
      b.device.layout_seed = static_cast<std::uint64_t>(w) * 3;
      v.push_back(b);
    }
    for (auto& b : v) b.print_warnings = false;
    return v;
  }
  /// For messages: what the device looks like.
  /// The sub-group width b was configured with, read from its configuration (not from ki).
  static std::int64_t configured_width(const B& b) { return b.device.sub_group_width; }
  static std::string describe(const B& b) {
    const auto& p = b.device;
    std::ostringstream os;
    os << "profile '" << p.name << "': W = " << p.sub_group_width << ", linear promise " << p.linear_subgroups
       << ", unpromised layout " << (p.unpromised_layout == ki::reference::layout::linear ? "linear" : "adversarial")
       << ", independent " << p.independent_subgroups << ", partitionable " << p.partitionable_subgroups
       << ", layout seed " << p.layout_seed << ", poison seed " << p.poison_seed;
    return os.str();
  }
  /// The word a lane without a work-item reads as, where the backend fixes one (the spec leaves
  /// the value unspecified): the oracle's poison word, unless the profile seeds random poison or
  /// an exploration seed (KI_REFERENCE_SEED, schedule.hpp) derives the poison from itself.
  static std::optional<std::uint32_t> unspecified_word(const B& b) {
    if (b.device.poison_seed != 0 || b.schedule.seed != 0) return std::nullopt;
    return 0xFFBADBADu;
  }
  /// The reference run a result of b is compared with (DESIGN.md: "every check has two
  /// oracles"): the same device (profile, layout seed, poison) in the other item order (forward
  /// <-> reverse), another legal execution. (The very same run would be a self-comparison; the
  /// exploration seed, which also re-derives layouts and poison, is kept.)
  static ki::reference::backend reference_twin(const B& b) {
    B r = b;
    r.schedule.items = b.schedule.items == ki::reference::order::forward ? ki::reference::order::reverse
                                                                         : ki::reference::order::forward;
    r.print_warnings = false;
    return r;
  }
};
#endif

#if KI_TEST_BACKEND_CUDA || KI_TEST_BACKEND_HIP
namespace gpu {
#if KI_TEST_BACKEND_CUDA
using namespace ki::cuda;
#else
using namespace ki::hip;
#endif
}  // namespace gpu
/// The GPU backends (ki::cuda, ki::hip): the hardware's one configuration, on device 0.
template <>
struct config<gpu::backend> {
  using B = gpu::backend;
  static constexpr const char* name = ki::backend_traits<B>::name;
  /// A GPU backend value carries no configuration: configured() is make(), and same() cannot
  /// fail, so the tests that compare backend values skip on GPUs (declared, with the reason).
  static constexpr bool configurable = false;
  static bool available(std::string& why) { return gpu::available(&why); }
  static B make() { return B{}; }
  static B configured() { return B{}; }
  static bool same(const B&, const B&) { return true; }
  static B multi_device() { return B{}; }                       // the machine's devices
  static std::vector<B> sub_group_variants() { return {B{}}; }  // the hardware's width only
  /// NVIDIA's warps are 32 wide; AMD's wavefronts 64 (gfx9) or 32 (RDNA): 0 for "either".
  static std::int64_t configured_width(const B&) { return KI_TEST_BACKEND_CUDA ? 32 : 0; }
  static std::string describe(const B& b) {
    std::ostringstream os;
    os << "the " << name << " device " << ki::device(b) << ": W = " << ki::sub_group_size(b) << ", partitionable "
       << ki::supports_partitionable_subgroups(b);
    return os.str();
  }
  static std::optional<std::uint32_t> unspecified_word(const B&) { return std::nullopt; }
  /// The reference backend emulating this device for differential tests: its sub-group width,
  /// work-group limits and sub-group promises, the linear layout, the fixed poison word.
  static ki::reference::backend reference_of(const B& b) {
    ki::reference::backend r{.device = ki::reference::profile::preset("cuda")};
    auto& p = r.device;
    p.name = "emulated GPU";
    p.sub_group_width = ki::sub_group_size(b);
    p.max_work_group_size = ki::max_work_group_size(b);
    p.max_work_group_dims = ki::max_work_group_dims(b);
    p.linear_subgroups = true;
    p.unpromised_layout = ki::reference::layout::linear;
    p.independent_subgroups = ki::supports_independent_subgroups(b);
    p.partitionable_subgroups = ki::supports_partitionable_subgroups(b);
    p.poison_seed = 0;
    r.print_warnings = false;
    return r;
  }
};
#endif

#if KI_TEST_BACKEND_SIMD_CPU
template <>
struct config<ki::simd_cpu::backend> {
  using B = ki::simd_cpu::backend;
  static constexpr const char* name = "simd_cpu";
  static constexpr bool configurable = true;
  static bool available(std::string&) { return true; }
  static B make() { return B{}; }
  static B configured() { return B{.threads = 3, .stack_size = 192 * 1024, .sub_group_width = 16}; }
  static bool same(const B& a, const B& b) {
    return a.threads == b.threads && a.stack_size == b.stack_size && a.sub_group_width == b.sub_group_width &&
           a.scheduler == b.scheduler;
  }
  static B multi_device() { return B{}; }  // one device: the multi-device tests skip
  /// Every sub-group width the backend offers (all linear, independent, partitionable): the
  /// vector collectives run on whole and partial batches.
  static std::vector<B> sub_group_variants() {
    std::vector<B> v{make()};
    for (std::int64_t w : {1, 2, 4, 8, 16, 64}) v.push_back(B{.sub_group_width = w});
    return v;
  }
  static std::int64_t configured_width(const B& b) { return b.sub_group_width; }
  static std::string describe(const B& b) {
    return "simd_cpu: W = " + std::to_string(b.sub_group_width) + ", threads " + std::to_string(b.threads);
  }
  static std::optional<std::uint32_t> unspecified_word(const B&) { return std::nullopt; }
  /// The reference run a result of b is compared with (DESIGN.md: "every check has two
  /// oracles"): the oracle emulating b's device: its sub-group width, launch limits and
  /// sub-group promises (linear layout, independent, partitionable), the fixed poison word.
  static ki::reference::backend reference_twin(const B& b) {
    ki::reference::backend r{.device = ki::reference::profile::preset("cuda")};
    auto& p = r.device;
    p.name = "simd_cpu emulated";
    p.sub_group_width = ki::sub_group_size(b);
    p.max_work_group_size = ki::max_work_group_size(b);
    p.max_work_group_dims = ki::max_work_group_dims(b);
    p.max_num_groups = ki::max_num_groups(b);
    p.linear_subgroups = ki::supports_linear_subgroups(b);
    p.unpromised_layout = ki::reference::layout::linear;
    p.independent_subgroups = ki::supports_independent_subgroups(b);
    p.partitionable_subgroups = ki::supports_partitionable_subgroups(b);
    p.poison_seed = 0;
    r.print_warnings = false;
    return r;
  }
};
#endif

namespace detail {
template <class... L>
using cat = decltype(std::tuple_cat(std::declval<L>()...));
#if KI_TEST_BACKEND_REFERENCE
using reference_list = std::tuple<ki::reference::backend>;
#else
using reference_list = std::tuple<>;
#endif
#if KI_TEST_BACKEND_CUDA || KI_TEST_BACKEND_HIP
using gpu_list = std::tuple<gpu::backend>;
#else
using gpu_list = std::tuple<>;
#endif
#if KI_TEST_BACKEND_SIMD_CPU
using simd_cpu_list = std::tuple<ki::simd_cpu::backend>;
#else
using simd_cpu_list = std::tuple<>;
#endif
}  // namespace detail

/// The enabled backends of this executable.
using backends = detail::cat<detail::reference_list, detail::gpu_list, detail::simd_cpu_list>;
static_assert(std::tuple_size_v<backends> > 0,
              "spec_tests: define KI_TEST_BACKEND_<NAME>=1 for the backend this executable tests");

/// The backend value for a test; skips the test (with the reason) if the backend has no device.
template <class B>
B make() {
  std::string why;
  if (!config<B>::available(why)) SKIP(std::string(config<B>::name) + ": no device (" + why + ")");
  return config<B>::make();
}

/// config<B>::multi_device(); skips the test (with the reason) where it has a single device.
template <class B>
B make_multi_device() {
  make<B>();
  const B b = config<B>::multi_device();
  if (ki::ndevices(b) < 2) SKIP(std::string(config<B>::name) + ": one device only (the test needs two)");
  return b;
}

/// Copies a device array to a new host vector (synchronizes).
template <class T, class B>
std::vector<T> read(const B& b, const ki::array<T, B>& a) {
  return ki::to_host(b, a);
}

/// An array of n elements, all `value`.
template <class T, class B>
ki::array<T, B> filled(const B& b, const ki::dims& d, T value) {
  auto a = ki::allocate<T>(b, d);
  const std::vector<T> h(static_cast<std::size_t>(a.size()), value);
  ki::copyto(b, a, h);
  return a;
}

/// ki::dims of the first `rank` values of v (rank 0: "not given").
inline ki::dims dims_of(const std::array<std::int64_t, 3>& v, int rank) {
  switch (rank) {
    case 1: return ki::dims(v[0]);
    case 2: return ki::dims(v[0], v[1]);
    case 3: return ki::dims(v[0], v[1], v[2]);
    default: return ki::dims();
  }
}

/// Whether `groups` work-groups of `items` work-items fit b's limits (tests pick fixed shapes;
/// those beyond a profile's limits cannot be launched there and are left out).
template <class B>
bool fits(const B& b, const std::array<std::int64_t, 3>& groups, const std::array<std::int64_t, 3>& items) {
  const auto max_dims = ki::max_work_group_dims(b);
  const auto max_groups = ki::max_num_groups(b);
  for (int d = 0; d < 3; ++d)
    if (items[static_cast<std::size_t>(d)] > max_dims[static_cast<std::size_t>(d)] ||
        groups[static_cast<std::size_t>(d)] > max_groups[static_cast<std::size_t>(d)])
      return false;
  return items[0] * items[1] * items[2] <= ki::max_work_group_size(b);
}

inline std::string str(const std::array<std::int64_t, 3>& v) {
  std::ostringstream os;  // (not "(" + std::to_string(...): GCC 12 warns falsely there, -Wrestrict)
  os << "(" << v[0] << ", " << v[1] << ", " << v[2] << ")";
  return os.str();
}

/// b's launch limits, for the message of a shape left out.
template <class B>
std::string limits(const B& b) {
  return "max_work_group_size " + std::to_string(ki::max_work_group_size(b)) + ", max_work_group_dims " +
         str(ki::max_work_group_dims(b)) + ", max_num_groups " + str(ki::max_num_groups(b));
}

/// Declares a shape (or case) a test leaves out and why: Catch2 prints the warning whether the
/// test passes or not, so narrowing by a profile's limits is never silent. (A plain function,
/// so that no Catch2 macro sits in the loops of the TEMPLATE_LIST_TEST_CASEs: nvcc's front end,
/// backends.hpp's KI_INFO.)
inline void left_out(const std::string& what, const std::string& why) { WARN("left out: " << what << ": " << why); }

/// fits(b, groups, items), declaring the shape left out (left_out) where it does not fit.
template <class B>
bool fits_or_left_out(const B& b, const std::array<std::int64_t, 3>& groups, const std::array<std::int64_t, 3>& items) {
  if (fits(b, groups, items)) return true;
  left_out("numgroups " + str(groups) + ", workgroupsize " + str(items),
           "beyond this device's limits (" + limits(b) + ")");
  return false;
}

/// Skips the test (SKIP, with the reason) when none of its shapes could run on b: a test whose
/// every case was left out has shown nothing and must not pass.
inline void skip_if_none_ran(std::int64_t ran, const std::string& why) {
  if (ran == 0) SKIP("no shape of this test fits: " + why);
}

/// Compares got[i] with expected(i) for every i; one Catch check for the whole range, whose
/// message names the number of mismatches and the first few.
template <class T, class Expected>
void check_all(const std::vector<T>& got, Expected&& expected, const std::string& what = "") {
  std::size_t bad = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const auto e = static_cast<T>(expected(static_cast<std::int64_t>(i)));
    if (!(got[i] == e)) {
      if (bad < 5) first << "\n  [" << i << "] = " << +got[i] << ", expected " << +e;
      ++bad;
    }
  }
  INFO(what << ": " << bad << " of " << got.size() << " elements differ" << first.str());
  CHECK(bad == 0);
}

/// Runs f, which must throw E; returns what() (or a note that nothing / something else was
/// thrown, after failing the check).
template <class E, class F>
std::string thrown_message(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL_CHECK("threw a different exception: " << e.what());
    return "<different exception>";
  }
  FAIL_CHECK("nothing was thrown");
  return "<nothing thrown>";
}

using Catch::Matchers::ContainsSubstring;

}  // namespace ki_test
