// The one diagnostics reporter of both CPU backends (ki/cpu/report.hpp).
#include <ki/cpu/report.hpp>

#include <algorithm>
#include <csignal>
#include <sstream>

namespace ki::detail::cpu {
using i64 = std::int64_t;

std::string ranges(const std::vector<i64>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ", ";
    s += std::to_string(ids[i]);
    if (j > i) s += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return s;
}

std::string reporter::group_head() const {
  return std::string(names_.prefix) + ": kernel '" + kernel_ + "': work-group " + to_string(group_);
}

kernel_error reporter::item_error(kernel_error::kind k, const item_state& it, sync_point at, const std::string& what,
                                  const source_location* site) const {
  std::ostringstream os;
  os << names_.prefix << ": kernel '" << kernel_ << "': work-item " << to_string(it.local_id) << " (linear "
     << it.local_linear << ") of work-group " << to_string(group_) << " " << what;
  std::string where;
  if (at.what != nullptr) {
    where = to_string(at.where);
    // A bad call is named "(at ...)" by `what`; other errors happened after this sync point.
    if (k != kernel_error::kind::invalid_collective) os << " (after " << at.what << " " << where << ")";
  }
  if (site != nullptr) where = to_string(*site);
  return kernel_error(k, group_, it.local_id, where, os.str());
}

kernel_error reporter::phase_error(kernel_error::kind k, const item_state& it, const source_location& phase,
                                   const std::string& what, const source_location* site) const {
  std::ostringstream os;
  os << names_.prefix << ": kernel '" << kernel_ << "': work-item " << to_string(it.local_id) << " (linear "
     << it.local_linear << ") of work-group " << to_string(group_) << " " << what << " (in the phase at "
     << to_string(phase) << ")";
  return kernel_error(k, group_, it.local_id, to_string(site != nullptr ? *site : phase), os.str());
}

kernel_error reporter::group_error(kernel_error::kind k, const item_state& first, sync_point at,
                                   const std::string& what) const {
  return kernel_error(k, group_, first.local_id, to_string(at.where), group_head() + ": " + what);
}

std::string reporter::fault_message(const fiber_core::fault& f, std::size_t stack_size) const {
  std::ostringstream os;
  if (f.stack_overflow)
    os << "overflowed its fiber stack (stack_size = " << stack_size << " bytes; raise " << names_.stack_setting << ")";
  else if (f.signal == SIGFPE && (f.code == FPE_INTDIV || f.code == FPE_INTOVF))
    os << "divided an integer by zero, or the most negative integer by -1 (SIGFPE: the division traps on this CPU; "
          "a GPU gives an unspecified value)";
  else if (f.signal == SIGFPE) os << "raised an arithmetic exception (SIGFPE, code " << f.code << ")";
  else if (f.signal == SIGILL)
    os << "executed an illegal instruction (SIGILL: a trap such as __builtin_trap(), or an instruction this CPU lacks)";
  else os << "made an invalid memory access at address " << f.address;
  return os.str();
}

reporter::stuck reporter::stuck_message(const std::vector<stuck_item>& items) const {
  struct waiting {
    source_location where;
    const char* what;
    std::vector<i64> items, sub_groups;
  };
  std::vector<waiting> at;
  std::vector<i64> exited;
  for (const stuck_item& it : items) {
    if (it.exited) {
      exited.push_back(it.local_linear);
      continue;
    }
    auto g = std::find_if(at.begin(), at.end(), [&](const waiting& w) {
      return same_point(w.where, it.at.where) && std::string_view(w.what) == it.at.what;
    });
    if (g == at.end()) g = at.insert(at.end(), waiting{it.at.where, it.at.what, {}, {}});
    g->items.push_back(it.local_linear);
    if (std::find(g->sub_groups.begin(), g->sub_groups.end(), it.sub_group) == g->sub_groups.end())
      g->sub_groups.push_back(it.sub_group);
  }
  std::ostringstream os;
  os << group_head() << " cannot finish: ";
  for (std::size_t i = 0; i < at.size(); ++i) {
    std::sort(at[i].items.begin(), at[i].items.end());
    os << (i ? "; " : "") << "items " << ranges(at[i].items) << " wait at " << at[i].what << " "
       << to_string(at[i].where);
    if (std::string_view(at[i].what) != barrier_what) {
      std::sort(at[i].sub_groups.begin(), at[i].sub_groups.end());
      os << " (sub-group" << (at[i].sub_groups.size() > 1 ? "s " : " ") << ranges(at[i].sub_groups) << ")";
    }
  }
  std::sort(exited.begin(), exited.end());
  if (!exited.empty()) os << "; items " << ranges(exited) << " exited";
  os << " (items are linear local ids, x fastest; every work-item of a work-group must reach the same barrier, "
        "and every work-item of a sub-group (or of a segment, with a width on a device with partitionable "
        "sub-groups) the same communication function)";
  if (at.empty())  // (not reached: a group whose items all exited has finished)
    return {kernel_error::kind::cannot_finish, items.empty() ? 0 : items.front().local_linear, "", os.str()};
  return {at.size() > 1 ? kernel_error::kind::barrier_mismatch : kernel_error::kind::cannot_finish,
          at.front().items.front(), to_string(at.front().where), os.str()};
}

item_failure reporter::local_memory_exceeded(const source_location& where, std::size_t bytes, std::size_t used,
                                             std::size_t limit, std::size_t dynamic, const char* call) {
  return {kernel_error::kind::resource,
          std::string(call) + " at " + to_string(where) + " needs " + std::to_string(bytes) +
              " bytes; the work-group already uses " + std::to_string(used) +
              (dynamic > 0 ? " (and the launch's dynamic_local_memory takes " + std::to_string(dynamic) + ")" : "") +
              " of max_local_memory = " + std::to_string(limit)};
}

}  // namespace ki::detail::cpu
