// Private to the offload backends: every CUDA/HIP runtime error becomes an exception naming
// the call and the error. Include through <ki/cuda.hpp> or <ki/hip.hpp>, which define
// KI_OFFLOAD_API (the API prefix) and KI_OFFLOAD_NAMESPACE (ki::cuda or ki::hip) first.
#pragma once
#if !defined(KI_OFFLOAD_API) || !defined(KI_OFFLOAD_NAMESPACE)
#error "ki/offload/*.hpp are private: include <ki/cuda.hpp> or <ki/hip.hpp>"
#endif
#include <stdexcept>
#include <string>
#include <utility>

#include <ki/errors.hpp>

namespace ki::KI_OFFLOAD_NAMESPACE {

/// A failed runtime call: what() is "ki::<backend>: <call> failed: <error name> (<description>)".
/// A ki::device_error, as the CPU backends' ki::kernel_error: the portable catch.
class error : public ki::device_error {
 public:
  error(const std::string& what, std::string call, int code)
      : ki::device_error(what), call_(std::move(call)), code_(code) {}
  /// The runtime call that failed (e.g. "cudaMalloc") and its error code.
  const std::string& call() const noexcept { return call_; }
  int code() const noexcept { return code_; }

 private:
  std::string call_;
  int code_;
};

namespace detail {
inline void check(api::error_t e, const char* call) {
  if (e != KI_OFFLOAD_API(Success)) {
    (void)KI_OFFLOAD_API(GetLastError)();  // clear a non-sticky error so that the backend stays usable
    throw error(std::string("ki::") + api::name + ": " + call + " failed: " + KI_OFFLOAD_API(GetErrorName)(e) + " (" +
                    KI_OFFLOAD_API(GetErrorString)(e) + ")",
                call, static_cast<int>(e));
  }
}
}  // namespace detail

}  // namespace ki::KI_OFFLOAD_NAMESPACE

#define KI_OFFLOAD_STR2(x) #x
#define KI_OFFLOAD_STR(x) KI_OFFLOAD_STR2(x)
/// KI_OFFLOAD_CHECK(Malloc, &p, n): calls cudaMalloc / hipMalloc, throws naming it on failure.
#define KI_OFFLOAD_CHECK(fn, ...) \
  ::ki::KI_OFFLOAD_NAMESPACE::detail::check(KI_OFFLOAD_API(fn)(__VA_ARGS__), KI_OFFLOAD_STR(KI_OFFLOAD_API(fn)))
