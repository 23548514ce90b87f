// Schedule exploration and checked-access settings from the environment.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <ki/reference/backend.hpp>
#include <ki/reference/schedule.hpp>

namespace ki::reference {

schedule schedule::from_environment() {
  static const schedule s = [] {
    schedule r;
    if (const char* v = std::getenv("KI_REFERENCE_SEED"); v != nullptr && *v != '\0') {
      char* end = nullptr;
      const unsigned long long x = std::strtoull(v, &end, 10);
      if (end == v || *end != '\0')
        std::fprintf(stderr, "ki::reference: ignoring KI_REFERENCE_SEED=%s (expected a non-negative integer)\n", v);
      else r = from_seed(x);
    }
    if (const char* v = std::getenv("KI_REFERENCE_SCHEDULE"); v != nullptr && *v != '\0') {
      const std::string o = v;
      if (o == "forward") r.items = order::forward;
      else if (o == "reverse") r.items = order::reverse;
      else if (o == "random") r.items = order::random;
      else
        std::fprintf(stderr, "ki::reference: ignoring KI_REFERENCE_SCHEDULE=%s (expected forward, reverse or random)\n",
                     v);
    }
    if (const char* v = std::getenv("KI_REFERENCE_INTERLEAVE"); v != nullptr && *v != '\0') {
      const std::string o = v;
      if (o == "atomics") r.interleave_atomics = true;
      else if (o == "none") r.interleave_atomics = false;
      else std::fprintf(stderr, "ki::reference: ignoring KI_REFERENCE_INTERLEAVE=%s (expected atomics or none)\n", v);
    }
    return r;
  }();
  return s;
}

same_value_writes backend::same_value_writes_from_environment() {
  static const ki::reference::same_value_writes p = [] {
    const char* v = std::getenv("KI_REFERENCE_SAME_VALUE_WRITES");
    if (v == nullptr || *v == '\0') return ki::reference::same_value_writes::race;
    const std::string s = v;
    if (s == "race") return ki::reference::same_value_writes::race;
    if (s == "allowed") return ki::reference::same_value_writes::allowed;
    std::fprintf(stderr, "ki::reference: ignoring KI_REFERENCE_SAME_VALUE_WRITES=%s (expected race or allowed)\n", v);
    return ki::reference::same_value_writes::race;
  }();
  return p;
}

memory_model backend::memory_model_from_environment() {
  static const ki::reference::memory_model m = [] {
    const char* v = std::getenv("KI_REFERENCE_MEMORY");
    if (v == nullptr || *v == '\0') return memory_model::sequential;
    const std::string s = v;
    if (s == "sequential") return memory_model::sequential;
    if (s == "weak") return memory_model::weak;
    std::fprintf(stderr, "ki::reference: ignoring KI_REFERENCE_MEMORY=%s (expected sequential or weak)\n", v);
    return memory_model::sequential;
  }();
  return m;
}

local_memory_start backend::local_memory_from_environment() {
  static const ki::reference::local_memory_start m = [] {
    const char* v = std::getenv("KI_REFERENCE_LOCAL_MEMORY");
    if (v == nullptr || *v == '\0') return local_memory_start::poison;
    const std::string s = v;
    if (s == "poison") return local_memory_start::poison;
    if (s == "leftovers") return local_memory_start::leftovers;
    std::fprintf(stderr, "ki::reference: ignoring KI_REFERENCE_LOCAL_MEMORY=%s (expected poison or leftovers)\n", v);
    return local_memory_start::poison;
  }();
  return m;
}

}  // namespace ki::reference
