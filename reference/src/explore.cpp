// Schedule exploration: comparing the outputs of two runs, and the exploration's report.
#include <ki/reference/explore.hpp>

#include <algorithm>
#include <sstream>

namespace ki::reference {
namespace {
std::string quoted(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    if (c == '\n') r += "\\n";
    else r += c;
  }
  return r + "\"";
}
}  // namespace

namespace detail {

std::vector<difference> compare(const outputs& base, const outputs& run, std::uint64_t seed) {
  std::vector<difference> out;
  if (base.error != run.error) {
    difference d;
    d.seed = seed;
    d.error = run.error.empty() ? std::string() : run.error;
    out.push_back(std::move(d));
    if (!base.error.empty() || !run.error.empty()) return out;
  }
  for (const auto& b : base.buffers) {
    const auto r = std::find_if(run.buffers.begin(), run.buffers.end(),
                                [&](const outputs::buffer& x) { return x.name == b.name; });
    if (r == run.buffers.end()) continue;
    difference d;
    d.seed = seed;
    d.buffer = b.name;
    const std::size_t n = std::max(b.shown.size(), r->shown.size());
    for (std::size_t i = 0; i < n; ++i) {
      const bool in_b = i < b.shown.size(), in_r = i < r->shown.size();
      const bool same = in_b && in_r && b.element_size == r->element_size &&
                        std::equal(b.bytes.begin() + static_cast<std::ptrdiff_t>(i * b.element_size),
                                   b.bytes.begin() + static_cast<std::ptrdiff_t>((i + 1) * b.element_size),
                                   r->bytes.begin() + static_cast<std::ptrdiff_t>(i * r->element_size));
      if (same) continue;
      ++d.count;
      if (d.first.size() < 8)
        d.first.push_back({static_cast<std::int64_t>(i), in_b ? b.shown[i] : "(none)", in_r ? r->shown[i] : "(none)"});
    }
    if (d.count > 0) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace detail

std::string exploration::str() const {
  std::ostringstream os;
  if (differences.empty()) {
    os << "ki::reference::explore: " << runs << " executions, identical outputs\n";
    return os.str();
  }
  os << "ki::reference::explore: " << runs << " executions, " << differences.size()
     << " difference(s) from the baseline (seed 0, forward order):\n";
  for (const auto& d : differences) {
    const auto s = schedule::from_seed(d.seed);
    os << "  seed " << d.seed << " ("
       << (s.items == order::forward   ? "forward"
           : s.items == order::reverse ? "reverse"
                                       : "random")
       << " order): ";
    if (d.buffer.empty()) {
      os << (d.error.empty() ? "succeeds where the baseline failed" : "fails: " + d.error) << "\n";
    } else {
      os << "buffer '" << d.buffer << "' differs in " << d.count << " element(s); first:";
      for (const auto& e : d.first) os << " [" << e.index << "] " << e.baseline << " -> " << e.value << ";";
      os << "\n";
    }
    os << "    replay: KI_REFERENCE_SEED=" << d.seed << "\n";
  }
  return os.str();
}

std::string exploration::json() const {
  std::ostringstream os;
  os << "{\"runs\":" << runs << ",\"differences\":[";
  for (std::size_t i = 0; i < differences.size(); ++i) {
    const auto& d = differences[i];
    os << (i ? "," : "") << "{\"seed\":" << d.seed << ",\"buffer\":" << quoted(d.buffer) << ",\"count\":" << d.count
       << ",\"error\":" << quoted(d.error) << ",\"first\":[";
    for (std::size_t k = 0; k < d.first.size(); ++k)
      os << (k ? "," : "") << "{\"index\":" << d.first[k].index << ",\"baseline\":" << quoted(d.first[k].baseline)
         << ",\"value\":" << quoted(d.first[k].value) << "}";
    os << "]}";
  }
  os << "]}";
  return os.str();
}

}  // namespace ki::reference
