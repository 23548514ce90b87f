// Private: parsing of the compiler options that several backends share. Portable, header-only
// (also compiled as host code by nvcc and hipcc).
#pragma once
#include <ki/detail/private.hpp>
#include <any>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <ki/backend.hpp>

namespace ki::detail {

/// The "maxthreads" compiler option (an integer >= 1), 0 when not given; the last one given
/// wins. A value that is not an integer, or not positive, throws std::invalid_argument naming
/// the backend ("ki::<backend>: compiler option ...").
inline std::int64_t maxthreads_of(const kwargs& o, const char* backend) {
  std::int64_t r = 0;
  for (const auto& kw : o) {
    if (kw.name != "maxthreads") continue;
    std::int64_t v = 0;
    if (const auto* i = std::any_cast<int>(&kw.value)) v = *i;
    else if (const auto* l = std::any_cast<long>(&kw.value)) v = *l;
    else if (const auto* ll = std::any_cast<long long>(&kw.value)) v = *ll;
    else
      throw std::invalid_argument(std::string("ki::") + backend + ": compiler option 'maxthreads' must be an integer");
    if (v < 1)
      throw std::invalid_argument(std::string("ki::") + backend +
                                  ": compiler option maxthreads = " + std::to_string(v) + " must be positive");
    r = v;
  }
  return r;
}

}  // namespace ki::detail
