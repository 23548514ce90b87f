// The backend contract (ki/backend.hpp): the concept ki::backend checks every member of
// ki::backend_traits<B> that the portable code calls, with its signature, so that a backend
// missing one is refused at the concept; and the shared launch policy
// (ki/detail/launch_policy.hpp) names the backend in its messages.
#include <array>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <variant>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <ki/ki.hpp>
#include <ki/reference.hpp>

namespace {

using i64 = std::int64_t;
using Catch::Matchers::ContainsSubstring;

/// Which member a contract_probe backend gets wrong.
enum class fault { none, no_ka_launch, free_may_throw, no_event, int_sub_group_size, launch_without_arguments };

template <fault X>
struct contract_probe {};

}  // namespace

/// The contract, declared only (the concept asks; nothing is called), with the fault X.
template <fault X>
struct ki::backend_traits<contract_probe<X>> {
  using B = contract_probe<X>;
  static constexpr const char* name = "probe";
  static int ndevices(const B&);
  static int device(const B&);
  static void set_device(const B&, int);
  static std::optional<bool> functional(const B&);
  static void versioninfo(std::ostream&, const B&);
  static std::int64_t multiprocessor_count(const B&);
  static void* allocate(const B&, std::size_t, bool);
  static void free(const B&, int, void*) noexcept(X != fault::free_may_throw);
  static void copy(const B&, void*, const void*, std::size_t, copy_kind);
  static std::optional<std::monostate> pagelock(const B&, const void*, std::size_t);
  static bool supports_unified(const B&);
  static void synchronize(const B&);
  using event = std::conditional_t<X == fault::no_event, void, int>;
  static int record_event(const B&);
  static void wait_event(const B&, const int&);
  static void set_priority(const B&, priority);
  static bool supports_atomics(const B&);
  static bool supports_atomics64(const B&);
  static bool supports_float64(const B&);
  static bool supports_subgroups(const B&);
  static bool supports_linear_subgroups(const B&);
  static bool supports_independent_subgroups(const B&);
  static bool supports_partitionable_subgroups(const B&);
  template <class T>
  static bool supports_shuffle(const B&);
  static std::int64_t max_work_group_size(const B&);
  static std::array<std::int64_t, 3> max_work_group_dims(const B&);
  static std::array<std::int64_t, 3> max_num_groups(const B&);
  static std::conditional_t<X == fault::int_sub_group_size, int, std::int64_t> sub_group_size(const B&);
  static std::int64_t max_local_memory(const B&);
  static void check_compile_options(const B&, const kwargs&);
  template <class F>
  static std::int64_t kernel_max_work_group_size(const kernel<B, F>&);
  template <class F>
  static std::int64_t launch_configuration(const kernel<B, F>&, std::optional<std::int64_t>, std::int64_t);
  template <class F, class... A>
  requires(X != fault::launch_without_arguments ||
           sizeof...(A) == 0) static void launch(const kernel<B, F>&, std::array<std::int64_t, 3>,
                                                 std::array<std::int64_t, 3>, const launch_extras&, A...);
  template <class S, class F, class... A>
  requires(X != fault::no_ka_launch) static void ka_launch(const B&, const ki::ka::geometry&, const F&, const char*,
                                                           A...);
};

namespace {

static_assert(ki::backend<ki::reference::backend>);
static_assert(ki::backend<contract_probe<fault::none>>, "the contract as ki/backend.hpp states it");
static_assert(!ki::backend<contract_probe<fault::no_ka_launch>>, "ka_launch is part of the contract");
static_assert(!ki::backend<contract_probe<fault::free_may_throw>>, "free is noexcept");
static_assert(!ki::backend<contract_probe<fault::no_event>>, "the event type is copyable");
static_assert(!ki::backend<contract_probe<fault::int_sub_group_size>>, "sub_group_size is std::int64_t");
static_assert(!ki::backend<contract_probe<fault::launch_without_arguments>>, "launch takes the arguments");
static_assert(!ki::backend<int>);

struct fill {
  KI_DEVICE void operator()(ki::span<i64> a, i64 v) const {
    const i64 i = ki::get_global_id().x;
    if (i < a.size()) a[i] = v;
  }
};

TEST_CASE("the shared launch policy names the backend in its messages", "[backend_contract]") {
  // The cuda profile (the defaults), whatever KI_REFERENCE_PROFILE says.
  const ki::reference::backend b{.device = {}, .threads = 1, .device_profiles = {}};
  CHECK_THROWS_WITH(ki::kernel_function(b, fill{}, {.options = {{"maxthreads", 0}}}),
                    "ki::reference: compiler option maxthreads = 0 must be positive");
  CHECK_THROWS_WITH(ki::kernel_function(b, fill{}, {.options = {{"maxthreads", 2.5}}}),
                    "ki::reference: compiler option 'maxthreads' must be an integer");
  CHECK_THROWS_WITH(ki::kernel_function(b, fill{}, {.options = {{"fast", 1}}}),
                    "ki::reference: unknown compiler option 'fast'");
  const auto k = ki::kernel_function(b, fill{}, {.options = {{"maxthreads", 100}}});
  CHECK(ki::max_work_group_size(k) == 100);
  // The advice: 256 work-items, fewer rounded up to whole sub-groups (32 on the cuda profile),
  // at most the kernel's limit.
  const auto plain = ki::kernel_function(b, fill{});
  CHECK(ki::launch_configuration(plain).workgroupsize == 256);
  CHECK(ki::launch_configuration(plain, 40).workgroupsize == 64);
  CHECK(ki::launch_configuration(k).workgroupsize == 100);
  auto a = ki::allocate<i64>(b, 4);
  CHECK_THROWS_WITH(k({.ndrange = 4, .options = {{"stream", 1}}}, a, i64{1}),
                    "ki::reference: unknown launch option 'stream'");
  const i64 maxy = ki::max_num_groups(b)[1];
  const i64 one = 1;
  CHECK_THROWS_WITH(ki::launch(k, {1, maxy + 1, 1}, {1, 1, 1}, std::tie(a, one)),
                    "ki::reference: launch: " + std::to_string(maxy + 1) +
                        " work-groups in dimension 1 exceed max_num_groups[1] = " + std::to_string(maxy));
}

}  // namespace
