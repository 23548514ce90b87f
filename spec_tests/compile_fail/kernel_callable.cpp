// Compiled by the compile/kernel_callable_* tests (spec_tests/CMakeLists.txt): kernel_function
// and the KA kernel convert the kernel callable with ki::argconvert, and its device form must be
// trivially copyable. Case 0 (a functor that converts, a lambda that captures an array with
// KI_LAMBDA_CAPTURE) compiles; each other case must fail with the message that names the fix.
#include <cstdint>
#include <functional>
#include <type_traits>
#include <vector>

#include <ki/ka.hpp>
#include <ki/ki.hpp>
#include <ki/reference.hpp>

using B = ki::reference::backend;

struct device_form {
  ki::span<int> a;
  KI_DEVICE void operator()() const { a[0] = 1; }
};
/// Owns an array and converts through its argconvert (ADL).
struct owns_array {
  ki::array<int, B> a;
};
inline device_form argconvert(const B& b, owns_array& f) { return {ki::argconvert(b, f.a)}; }

/// Owns an array and has no argconvert: its device form would be itself.
struct holds_array {
  ki::array<int, B> a;
  KI_DEVICE void operator()() const {}
};

/// Converts, but to a device form that is not trivially copyable.
struct converts_badly {
  int n;
};
struct bad_device_form {
  std::vector<int> v;
  void operator()() const {}
};
inline bad_device_form argconvert(const B&, const converts_badly& c) { return {std::vector<int>(c.n)}; }

/// Declares launch hints, and converts to a device form that lacks them.
struct hinted_host {
  static constexpr ki::launch_hints hints{.maxthreads = 64};
  ki::array<int, B> a;
};
inline device_form argconvert(const B& b, hinted_host& f) { return {ki::argconvert(b, f.a)}; }

/// A KA kernel that owns an array and has no argconvert.
struct ka_holds_array {
  ki::array<int, B> a;
  template <class G>
  KI_DEVICE void operator()(G&) const {}
};

void f(const B& b) {
  auto a = ki::allocate<int>(b, 4);
#if KI_CASE_0
  auto k = ki::kernel_function(b, owns_array{ki::allocate<int>(b, 4)});
  auto l = ki::kernel_function(
      b, KI_LAMBDA_CAPTURE(a)() { a[0] = 1; });
  owns_array mine{ki::allocate<int>(b, 4)};
  auto r = ki::kernel_function(b, std::ref(mine));
  // The longest capture list, 16 names (arrays and numbers mixed).
  auto a2 = ki::allocate<int>(b, 4);
  const int n3 = 3, n4 = 4, n5 = 5, n6 = 6, n7 = 7, n8 = 8, n9 = 9, n10 = 10, n11 = 11, n12 = 12, n13 = 13, n14 = 14,
            n15 = 15, n16 = 16;
  auto m = ki::kernel_function(
      b, KI_LAMBDA_CAPTURE(a, a2, n3, n4, n5, n6, n7, n8, n9, n10, n11, n12, n13, n14, n15, n16)() {
        a[0] = a2[0] + n3 + n4 + n5 + n6 + n7 + n8 + n9 + n10 + n11 + n12 + n13 + n14 + n15 + n16;
      });
  static_assert(std::is_trivially_copyable_v<decltype(m.f)>);
  (void)k, (void)l, (void)r, (void)m;
#elif KI_CASE_array_member
  auto k = ki::kernel_function(b, holds_array{ki::allocate<int>(b, 4)});
#elif KI_CASE_device_form
  auto k = ki::kernel_function(b, converts_badly{3});
#elif KI_CASE_ka_array_member
  ki::ka::kernel k(b, ka_holds_array{ki::allocate<int>(b, 4)}, 4);
#elif KI_CASE_lvalue
  owns_array mine{ki::allocate<int>(b, 4)};
  auto k = ki::kernel_function(b, mine);
#elif KI_CASE_hints
  auto k = ki::kernel_function(b, hinted_host{ki::allocate<int>(b, 4)});
#endif
}
