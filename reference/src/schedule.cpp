// Schedule exploration and checked-access settings from the environment.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <ki/cpu/support.hpp>
#include <ki/reference/backend.hpp>
#include <ki/reference/schedule.hpp>

namespace ki::reference {

schedule schedule::from_environment() {
  static const schedule s = [] {
    schedule r;
    if (const char* v = std::getenv("KI_REFERENCE_SEED"); v != nullptr && *v != '\0') {
      unsigned long long x = 0;
      if (!ki::detail::cpu::parse_unsigned(v, x))
        ki::detail::cpu::bad_environment("ki::reference", "KI_REFERENCE_SEED", v, "a non-negative integer below 2^64");
      else r = from_seed(x);
    }
    if (const char* v = std::getenv("KI_REFERENCE_SCHEDULE"); v != nullptr && *v != '\0') {
      const std::string o = v;
      if (o == "forward") r.items = order::forward;
      else if (o == "reverse") r.items = order::reverse;
      else if (o == "random") r.items = order::random;
      else ki::detail::cpu::bad_environment("ki::reference", "KI_REFERENCE_SCHEDULE", v, "forward, reverse or random");
    }
    if (const char* v = std::getenv("KI_REFERENCE_INTERLEAVE"); v != nullptr && *v != '\0') {
      const std::string o = v;
      if (o == "atomics") r.interleave_atomics = true;
      else if (o == "none") r.interleave_atomics = false;
      else ki::detail::cpu::bad_environment("ki::reference", "KI_REFERENCE_INTERLEAVE", v, "atomics or none");
    }
    return r;
  }();
  return s;
}

race_reports backend::race_reports_from_environment() {
  static const ki::reference::race_reports p = [] {
    const char* v = std::getenv("KI_REFERENCE_RACES");
    if (v == nullptr || *v == '\0') return ki::reference::race_reports::first_group;
    const std::string s = v;
    if (s == "first") return ki::reference::race_reports::first_group;
    if (s == "all") return ki::reference::race_reports::all;
    ki::detail::cpu::bad_environment("ki::reference", "KI_REFERENCE_RACES", v, "first or all");
    return ki::reference::race_reports::first_group;
  }();
  return p;
}

same_value_writes backend::same_value_writes_from_environment() {
  static const ki::reference::same_value_writes p = [] {
    const char* v = std::getenv("KI_REFERENCE_SAME_VALUE_WRITES");
    if (v == nullptr || *v == '\0') return ki::reference::same_value_writes::race;
    const std::string s = v;
    if (s == "race") return ki::reference::same_value_writes::race;
    if (s == "allowed") return ki::reference::same_value_writes::allowed;
    ki::detail::cpu::bad_environment("ki::reference", "KI_REFERENCE_SAME_VALUE_WRITES", v, "race or allowed");
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
    ki::detail::cpu::bad_environment("ki::reference", "KI_REFERENCE_MEMORY", v, "sequential or weak");
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
    ki::detail::cpu::bad_environment("ki::reference", "KI_REFERENCE_LOCAL_MEMORY", v, "poison or leftovers");
    return local_memory_start::poison;
  }();
  return m;
}

}  // namespace ki::reference
