// The page of ki::reference::trace (ki/reference/trace.hpp): drawing what trace.cpp recorded.
//
// Drawing is two passes: the events of a group are laid out in steps (see trace.hpp), then drawn
// as SVG; the HTML page holds a section per launch and the SVG of each traced group. Everything
// on the page is escaped; nothing on it depends on addresses or clocks, so that the same program
// draws the same page (the pictures of docs/model.md are checked for staleness that way).
#include "trace_data.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string_view>
#include <utility>

namespace ki::reference::detail::tracing {
namespace {

std::string line_of(const std::string& l) {
  const auto a = l.rfind(':');
  return a == std::string::npos ? "" : l.substr(a + 1);
}

std::string esc(std::string_view s) {
  std::string r;
  r.reserve(s.size());
  for (const char c : s) switch (c) {
      case '&': r += "&amp;"; break;
      case '<': r += "&lt;"; break;
      case '>': r += "&gt;"; break;
      case '"': r += "&quot;"; break;
      default: r += c;
    }
  return r;
}
std::string xyz_str(const xyz<i64>& v) {
  return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}
std::string num(double v) {  // short, locale-free coordinates
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  std::string s = b;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s;
}

/// Sub-group colours (distinguishable, and readable under black text).
constexpr const char* palette[] = {"#8fb8de", "#f5b971", "#a5d6a7", "#ef9a9a", "#ce93d8", "#fff59d",
                                   "#80cbc4", "#bcaaa4", "#f48fb1", "#b0bec5", "#c5e1a5", "#ffcc80"};
constexpr std::size_t palette_size = sizeof palette / sizeof palette[0];
const char* colour(i64 sg) { return sg < 0 ? "#e0e0e0" : palette[static_cast<std::size_t>(sg) % palette_size]; }
constexpr const char* fail_colour = "#c00000";

// --- layout: the events in steps, then marks to draw ---

struct mark_run {
  i64 item, col;
  bool ka;
  i64 accesses = 0;  // element accesses in this run (the first few are drawn)
};
constexpr i64 drawn_accesses = 4;  // per run
struct mark_arrive {
  i64 item, col;
  std::string what, where;
  i64 width;
};
struct mark_wait {
  i64 item, from, to;
  std::string what, where;
  bool unresolved;
};
struct mark_release {
  i64 col, round;
  std::string what, where;
  i64 width;
  std::vector<i64> items;
};
struct mark_exit {
  i64 item, col;
};
struct mark_access {
  i64 item, col, index, k;
  std::string where;
};
struct mark_race {
  i64 a_item, a_col, b_item, b_col;
  std::string a_where, b_where, what, message;
};
struct mark_sync {
  i64 col;
  std::string what, where;
};
struct mark_phase_head {
  i64 from, to;
  std::string where;
};

struct laid_out {
  i64 cols = 0;
  std::vector<mark_run> runs;
  std::vector<mark_arrive> arrives;
  std::vector<mark_wait> waits;
  std::vector<mark_release> releases;
  std::vector<mark_exit> exits;
  std::vector<mark_access> accesses;
  std::vector<mark_race> races;
  std::vector<mark_sync> syncs;
  std::vector<mark_phase_head> phases;
  bool failed = false;
  std::string fail_kind, fail_message, fail_where;
  i64 fail_item = -1;
  std::vector<i64> unstarted;
};

laid_out lay_out(const launch_rec& L, const group_rec& G, bool with_accesses) {
  laid_out o;
  const i64 n = L.items();
  struct state {
    i64 last_col = 0, arrived = -1;
    std::string what, where;
    bool started = false;
    std::vector<const ev*> pending;  // accesses and races, drawn in the item's next run
  };
  std::vector<state> st(static_cast<std::size_t>(n));
  auto valid = [&](i64 i) { return i >= 0 && i < n; };
  i64 col = 0;
  const ev* prev = nullptr;
  mark_release* open_release = nullptr;
  auto flush = [&](i64 item, i64 c) {
    auto& s = st[static_cast<std::size_t>(item)];
    i64 k = 0;
    for (const ev* p : s.pending) {
      if (p->kind == trace_kind::access) {
        if (with_accesses && k < drawn_accesses) o.accesses.push_back({item, c, p->index, k, p->where});
        ++k;
      } else {
        const i64 a = p->other_item;
        const i64 a_col =
            valid(a) && st[static_cast<std::size_t>(a)].last_col > 0 ? st[static_cast<std::size_t>(a)].last_col : c;
        o.races.push_back({a, a_col, item, c, p->other_where, p->where, p->what, p->message});
      }
    }
    s.pending.clear();
    s.last_col = c;
    if (!o.runs.empty() && o.runs.back().item == item && o.runs.back().col == c) o.runs.back().accesses = k;
  };
  for (const ev& e : G.events) {
    const bool item_ok = valid(e.item);
    if (e.kind != trace_kind::leave) open_release = nullptr;
    switch (e.kind) {
      case trace_kind::start:
        if (item_ok) st[static_cast<std::size_t>(e.item)].started = true;
        break;
      case trace_kind::arrive:
        if (!item_ok) break;
        ++col;
        o.runs.push_back({e.item, col, false});
        o.arrives.push_back({e.item, col, e.what, e.where, e.width});
        st[static_cast<std::size_t>(e.item)].arrived = col;
        st[static_cast<std::size_t>(e.item)].what = e.what;
        st[static_cast<std::size_t>(e.item)].where = e.where;
        flush(e.item, col);
        break;
      case trace_kind::leave: {
        if (!item_ok) break;
        if (open_release == nullptr || prev == nullptr || prev->kind != trace_kind::leave || prev->round != e.round) {
          ++col;
          o.releases.push_back({col, e.round, e.what, e.where, e.width, {}});
          open_release = &o.releases.back();
        }
        open_release->items.push_back(e.item);
        auto& s = st[static_cast<std::size_t>(e.item)];
        if (s.arrived > 0) o.waits.push_back({e.item, s.arrived, col, s.what, s.where, false});
        s.arrived = -1;
        s.last_col = col;
        break;
      }
      case trace_kind::exit:
        if (!item_ok) break;
        ++col;
        o.runs.push_back({e.item, col, false});
        o.exits.push_back({e.item, col});
        flush(e.item, col);
        break;
      case trace_kind::access:
      case trace_kind::race:
        if (item_ok) st[static_cast<std::size_t>(e.item)].pending.push_back(&e);
        break;
      case trace_kind::phase:
        if (!item_ok) break;
        ++col;
        st[static_cast<std::size_t>(e.item)].started = true;
        o.runs.push_back({e.item, col, true});
        if (o.phases.empty() || prev == nullptr || prev->kind != trace_kind::phase || prev->where != e.where)
          o.phases.push_back({col, col, e.where});
        o.phases.back().to = col;
        flush(e.item, col);
        break;
      case trace_kind::synchronize:
        ++col;
        o.syncs.push_back({col, e.what, e.where});
        break;
      case trace_kind::failure:
        o.failed = true;
        o.fail_kind = e.what;
        o.fail_message = e.message;
        o.fail_where = e.where;
        o.fail_item = e.item;
        break;
      case trace_kind::group_start:
      case trace_kind::group_end: break;
    }
    prev = &e;
  }
  const i64 end = col + 1;
  for (i64 i = 0; i < n; ++i) {
    auto& s = st[static_cast<std::size_t>(i)];
    if (s.arrived > 0) o.waits.push_back({i, s.arrived, end, s.what, s.where, true});
    if (!s.pending.empty()) flush(i, std::max<i64>(s.last_col, 1));
    if (!s.started && !L.ka) o.unstarted.push_back(i);
  }
  o.cols = end;
  return o;
}

/// The order of the rows: by sub-group, then lane (KI); by local linear id (KA).
std::vector<i64> row_order(const launch_rec& L) {
  std::vector<i64> items(static_cast<std::size_t>(L.items()));
  for (std::size_t i = 0; i < items.size(); ++i) items[i] = static_cast<i64>(i);
  if (!L.sub_group.empty())
    std::stable_sort(items.begin(), items.end(), [&](i64 a, i64 b) {
      return std::pair{L.sg_of(a), L.lane_of(a)} < std::pair{L.sg_of(b), L.lane_of(b)};
    });
  return items;
}

std::string join(const std::vector<i64>& v) {
  std::string s;
  for (const i64 x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

std::string launch_caption(const launch_rec& L) {
  std::string s = "kernel '" + L.kernel + "' · " + std::to_string(L.numgroups.x) + "×" + std::to_string(L.numgroups.y) +
                  "×" + std::to_string(L.numgroups.z) + " groups of " + std::to_string(L.groupsize.x) + "×" +
                  std::to_string(L.groupsize.y) + "×" + std::to_string(L.groupsize.z) + " · profile '" + L.profile +
                  "'";
  if (!L.ka) s += ", sub-groups of " + std::to_string(L.width) + (L.linear ? "" : " (not a linear layout)");
  else s += " · KA kernel (phases, no fibers)";
  s += " · schedule seed " + std::to_string(L.seed) + " (" + L.order + " order)";
  return s;
}

/// The sub-group layout of one work-group: a grid per z slice (x across, y down), each cell a
/// work-item coloured by its sub-group and labelled with its lane; a legend below.
void layout_svg(std::ostream& os, const launch_rec& L, double x0, double y0, double& height, double& width) {
  const auto s = L.groupsize;
  const i64 n = L.items();
  const double c = n > 1024 ? 8 : n > 256 ? 14 : 22;
  const bool text = c >= 14;
  os << "<g class=\"layout\" data-sub-groups=\"" << L.num_sub_groups << "\" data-linear=\"" << (L.linear ? 1 : 0)
     << "\">\n";
  os << "<text x=\"" << num(x0) << "\" y=\"" << num(y0 + 12) << "\" class=\"h\">Sub-group layout: " << L.num_sub_groups
     << " sub-group" << (L.num_sub_groups == 1 ? "" : "s") << " of width " << L.width << " · cell = work-item (x across"
     << (s.y > 1 ? ", y down" : "") << "), number = its lane" << (L.linear ? "" : " · this layout is not linear")
     << "</text>\n";
  const double top = y0 + 20;
  double xz = x0;
  for (i64 z = 0; z < s.z; ++z) {
    if (s.z > 1)
      os << "<text x=\"" << num(xz) << "\" y=\"" << num(top + 10) << "\" class=\"small\">z = " << z << "</text>\n";
    const double ty = top + (s.z > 1 ? 14 : 0);
    for (i64 y = 0; y < s.y; ++y)
      for (i64 x = 0; x < s.x; ++x) {
        const i64 l = x + s.x * (y + s.y * z);
        const i64 sg = L.sg_of(l), lane = L.lane_of(l);
        const double cx = xz + static_cast<double>(x) * c, cy = ty + static_cast<double>(y) * c;
        os << "<g class=\"cell\" data-item=\"" << l << "\" data-sub-group=\"" << sg << "\" data-lane=\"" << lane
           << "\"><title>work-item " << xyz_str(L.local_of(l)) << " (local " << l << "): sub-group " << sg << ", lane "
           << lane << "</title><rect x=\"" << num(cx) << "\" y=\"" << num(cy) << "\" width=\"" << num(c - 1)
           << "\" height=\"" << num(c - 1) << "\" fill=\"" << colour(sg) << "\"/>";
        if (text)
          os << "<text x=\"" << num(cx + (c - 1) / 2) << "\" y=\"" << num(cy + c / 2 + 3) << "\" class=\"lane\">"
             << lane << "</text>";
        os << "</g>\n";
      }
    xz += static_cast<double>(s.x) * c + 16;
  }
  double ly = top + (s.z > 1 ? 14 : 0) + static_cast<double>(s.y) * c + 10;
  std::vector<i64> size(static_cast<std::size_t>(std::max<i64>(L.num_sub_groups, 0)), 0);
  for (i64 l = 0; l < n; ++l)
    if (const i64 sg = L.sg_of(l); sg >= 0 && sg < L.num_sub_groups) ++size[static_cast<std::size_t>(sg)];
  const i64 shown = std::min<i64>(L.num_sub_groups, 32);
  for (i64 sg = 0; sg < shown; ++sg) {
    const double lx = x0 + static_cast<double>(sg % 4) * 190, yy = ly + static_cast<double>(sg / 4) * 16;
    const bool partial = size[static_cast<std::size_t>(sg)] < L.width;
    os << "<g class=\"legend\" data-sub-group=\"" << sg << "\" data-size=\"" << size[static_cast<std::size_t>(sg)]
       << "\"" << (partial ? " data-partial=\"1\"" : "") << "><rect x=\"" << num(lx) << "\" y=\"" << num(yy)
       << "\" width=\"12\" height=\"12\" fill=\"" << colour(sg) << "\"/><text x=\"" << num(lx + 16) << "\" y=\""
       << num(yy + 10) << "\" class=\"small\">sub-group " << sg << ": " << size[static_cast<std::size_t>(sg)] << " of "
       << L.width << " lanes" << (partial ? " (partial)" : "") << "</text></g>\n";
  }
  if (L.num_sub_groups > shown)
    os << "<text x=\"" << num(x0) << "\" y=\"" << num(ly + static_cast<double>((shown + 3) / 4) * 16 + 10)
       << "\" class=\"small\">… and " << (L.num_sub_groups - shown) << " more sub-groups</text>\n";
  os << "</g>\n";
  const double legend_h = static_cast<double>((shown + 3) / 4) * 16 + (L.num_sub_groups > shown ? 16 : 0);
  height = ly + legend_h + 8 - y0;
  width = std::max(xz - x0, 4 * 190.0);
}

/// The timeline of one group (see trace.hpp): rows of work-items, columns of steps.
void timeline_svg(std::ostream& os, const launch_rec& L, const group_rec& G, const laid_out& o, double x0, double y0,
                  double& height, double& width) {
  const std::vector<i64> rows = row_order(L);
  std::vector<i64> row_of(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) row_of[static_cast<std::size_t>(rows[r])] = static_cast<i64>(r);
  const double cw = o.cols > 600 ? 4 : o.cols > 150 ? 8 : 16, rh = rows.size() > 256 ? 8 : 16;
  const bool rotated = !o.releases.empty() || !o.syncs.empty();  // (their labels stand above the rows)
  const double label_w = L.ka ? 150 : 170, head = rotated ? 150 : o.phases.empty() ? 26 : 40;
  const double left = x0 + label_w, top = y0 + head;
  auto X = [&](i64 col) { return left + static_cast<double>(col - 1) * cw; };  // the column's left edge
  auto Y = [&](i64 item) { return top + static_cast<double>(row_of[static_cast<std::size_t>(item)]) * rh; };
  const double plot_w = static_cast<double>(o.cols) * cw, plot_h = static_cast<double>(rows.size()) * rh;
  const bool labels = rh >= 12;

  os << "<g class=\"timeline\" data-group=\"" << G.id.x << "," << G.id.y << "," << G.id.z << "\" data-rows=\""
     << rows.size() << "\" data-steps=\"" << o.cols << "\">\n";
  os << "<text x=\"" << num(x0) << "\" y=\"" << num(y0 + 12) << "\" class=\"h\">Timeline of work-group "
     << xyz_str(G.id) << ": one row per work-item" << (L.ka ? "" : " (by sub-group, then lane)")
     << ", one column per step, left to right in execution order</text>\n";
  // Rows: a band in the sub-group's colour, the label.
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const i64 it = rows[r];
    const double y = top + static_cast<double>(r) * rh;
    const i64 sg = L.sg_of(it), lane = L.lane_of(it);
    const bool failing = o.failed && it == o.fail_item;
    const auto lid = L.local_of(it);
    const bool padding =
        L.ka && (G.id.x * L.groupsize.x + lid.x >= L.extents.x || G.id.y * L.groupsize.y + lid.y >= L.extents.y ||
                 G.id.z * L.groupsize.z + lid.z >= L.extents.z);
    os << "<g class=\"row\" data-item=\"" << it << "\" data-sub-group=\"" << sg << "\" data-lane=\"" << lane << "\""
       << (failing ? " data-failing=\"1\"" : "") << (padding ? " data-padding=\"1\"" : "") << "><rect x=\"" << num(x0)
       << "\" y=\"" << num(y) << "\" width=\"" << num(label_w + plot_w) << "\" height=\"" << num(rh) << "\" fill=\""
       << colour(sg) << "\" opacity=\"" << (r % 2 == 0 ? "0.35" : "0.5") << "\"/>";
    if (labels) {
      const auto l = L.local_of(it);
      std::string label = "item " + std::to_string(it) + " " + xyz_str(l);
      if (!L.ka) label += " · sg " + std::to_string(sg) + " lane " + std::to_string(lane);
      if (padding) label += " · padding";
      os << "<text x=\"" << num(x0 + 4) << "\" y=\"" << num(y + rh - 4) << "\" class=\"label"
         << (failing ? " fail" : "") << "\">" << esc(label) << "</text>";
    }
    os << "</g>\n";
  }
  // KA phase headers.
  for (const auto& p : o.phases)
    os << "<g class=\"phase\" data-line=\"" << line_of(p.where) << "\"><rect x=\"" << num(X(p.from)) << "\" y=\""
       << num(top - 14) << "\" width=\"" << num(static_cast<double>(p.to - p.from + 1) * cw) << "\" height=\"12\" "
       << "fill=\"#dcedc8\" stroke=\"#558b2f\"/><text x=\"" << num(X(p.from) + 2) << "\" y=\"" << num(top - 4)
       << "\" class=\"small\">items() line " << line_of(p.where) << "</text></g>\n";
  // Releases: a barrier's round across every row; a sub-group function's participants joined.
  for (const auto& r : o.releases) {
    const double x = X(r.col) + cw / 2;
    const bool barrier = r.what == "barrier";
    std::string label = r.what + (r.width > 0 ? " w=" + std::to_string(r.width) : "");
    os << "<g class=\"release\" data-kind=\"" << esc(r.what) << "\" data-round=\"" << r.round << "\" data-line=\""
       << line_of(r.where) << "\" data-width=\"" << r.width << "\" data-items=\"" << r.items.size() << "\"><title>"
       << esc(label) << " at " << esc(r.where) << ": releases " << r.items.size() << " work-item"
       << (r.items.size() == 1 ? "" : "s") << "</title>";
    if (barrier) {
      os << "<rect x=\"" << num(X(r.col)) << "\" y=\"" << num(top) << "\" width=\"" << num(cw) << "\" height=\""
         << num(plot_h) << "\" fill=\"#1f4e79\" opacity=\"0.25\"/>";
    } else {
      i64 lo = static_cast<i64>(rows.size()), hi = -1;
      for (const i64 it : r.items)
        lo = std::min(lo, row_of[static_cast<std::size_t>(it)]),
        hi = std::max(hi, row_of[static_cast<std::size_t>(it)]);
      const i64 sg = r.items.empty() ? -1 : L.sg_of(r.items.front());
      os << "<rect x=\"" << num(X(r.col) + 1) << "\" y=\"" << num(top + static_cast<double>(lo) * rh + 1)
         << "\" width=\"" << num(std::max(cw - 2, 2.0)) << "\" height=\""
         << num(static_cast<double>(hi - lo + 1) * rh - 2) << "\" fill=\"" << colour(sg)
         << "\" stroke=\"#333\" stroke-width=\"1\"/>";
    }
    os << "<text transform=\"translate(" << num(x + 3) << "," << num(top - 18) << ") rotate(-60)\" class=\"small\">"
       << esc(label + " line " + line_of(r.where)) << "</text></g>\n";
  }
  for (const auto& s : o.syncs)
    os << "<g class=\"release\" data-kind=\"" << esc(s.what) << "\" data-line=\"" << line_of(s.where) << "\"><title>"
       << esc(s.what) << " at " << esc(s.where) << "</title><rect x=\"" << num(X(s.col)) << "\" y=\"" << num(top)
       << "\" width=\"" << num(cw) << "\" height=\"" << num(plot_h)
       << "\" fill=\"#1f4e79\" opacity=\"0.3\"/><text transform=\"translate(" << num(X(s.col) + cw / 2 + 3) << ","
       << num(top - 18) << ") rotate(-60)\" class=\"small\">" << esc(s.what + " line " + line_of(s.where))
       << "</text></g>\n";
  // Waits (arrival to release); unresolved ones, at the end of a failed group, in red with where.
  for (const auto& w : o.waits) {
    const double y = Y(w.item);
    os << "<g class=\"" << (w.unresolved ? "waiting" : "wait") << "\" data-item=\"" << w.item << "\" data-line=\""
       << line_of(w.where) << "\"><title>work-item " << w.item << " waits at " << esc(w.what) << " " << esc(w.where)
       << "</title><rect x=\"" << num(X(w.from) + cw) << "\" y=\"" << num(y + rh * 0.35) << "\" width=\""
       << num(std::max(static_cast<double>(w.to - w.from - 1) * cw, 1.0)) << "\" height=\"" << num(rh * 0.3)
       << "\" fill=\"" << (w.unresolved ? fail_colour : "#e0a800") << "\"/>";
    if (w.unresolved && labels)
      os << "<text x=\"" << num(X(w.to) + cw + 4) << "\" y=\"" << num(y + rh - 4) << "\" class=\"label fail\">waits at "
         << esc(w.what) << " " << esc(w.where) << "</text>";
    os << "</g>\n";
  }
  for (const auto& r : o.runs) {
    os << "<rect class=\"run\" data-item=\"" << r.item << "\" data-step=\"" << r.col << "\" x=\"" << num(X(r.col) + 1)
       << "\" y=\"" << num(Y(r.item) + 2) << "\" width=\"" << num(std::max(cw - 2, 1.0)) << "\" height=\""
       << num(rh - 4) << "\" fill=\"#2e7d32\"";
    if (r.accesses > 0)
      os << " data-accesses=\"" << r.accesses << "\"><title>work-item " << r.item << ": " << r.accesses
         << " element access" << (r.accesses == 1 ? "" : "es") << " in this run"
         << (r.accesses > drawn_accesses ? " (the first " + std::to_string(drawn_accesses) + " drawn)" : "")
         << "</title></rect>\n";
    else os << "/>\n";
  }
  for (const auto& a : o.arrives) {
    const double x = X(a.col) + cw - 1, y = Y(a.item);
    os << "<g class=\"arrive\" data-item=\"" << a.item << "\" data-kind=\"" << esc(a.what) << "\" data-line=\""
       << line_of(a.where) << "\"><title>work-item " << a.item << " arrives at " << esc(a.what)
       << (a.width > 0 ? " (width " + std::to_string(a.width) + ")" : "") << " " << esc(a.where) << "</title>";
    if (a.what == "barrier")
      os << "<polygon points=\"" << num(x - 4) << "," << num(y + 2) << " " << num(x + 1) << "," << num(y + rh / 2)
         << " " << num(x - 4) << "," << num(y + rh - 2) << "\" fill=\"#1f4e79\"/>";
    else
      os << "<circle cx=\"" << num(x - 2) << "\" cy=\"" << num(y + rh / 2) << "\" r=\"" << num(std::min(rh / 4, 3.0))
         << "\" fill=\"#1f4e79\"/>";
    os << "</g>\n";
  }
  for (const auto& e : o.exits)
    os << "<g class=\"exit\" data-item=\"" << e.item << "\"><title>work-item " << e.item
       << " returns from the kernel</title><rect x=\"" << num(X(e.col) + cw) << "\" y=\"" << num(Y(e.item) + 2)
       << "\" width=\"3\" height=\"" << num(rh - 4) << "\" fill=\"#212121\"/></g>\n";
  for (const auto& a : o.accesses)
    os << "<g class=\"access\" data-item=\"" << a.item << "\" data-index=\"" << a.index << "\" data-line=\""
       << line_of(a.where) << "\"><title>work-item " << a.item << " accesses element " << a.index << " at "
       << esc(a.where) << "</title><circle cx=\"" << num(X(a.col) + 3 + static_cast<double>(a.k % 4) * 3) << "\" cy=\""
       << num(Y(a.item) + rh / 2) << "\" r=\"1.5\" fill=\"#ffffff\"/></g>\n";
  for (const auto& r : o.races) {
    const bool a_ok = r.a_item >= 0 && r.a_item < L.items();
    const double bx = X(r.b_col) + cw / 2, by = Y(r.b_item) + rh / 2;
    const double ax = a_ok ? X(r.a_col) + cw / 2 : bx, ay = a_ok ? Y(r.a_item) + rh / 2 : by;
    os << "<g class=\"race\" data-kind=\"" << esc(r.what) << "\" data-items=\"" << r.a_item << "," << r.b_item
       << "\" data-lines=\"" << line_of(r.a_where) << "," << line_of(r.b_where) << "\"><title>" << esc(r.message)
       << "</title><line x1=\"" << num(ax) << "\" y1=\"" << num(ay) << "\" x2=\"" << num(bx) << "\" y2=\"" << num(by)
       << "\" stroke=\"" << fail_colour << "\" stroke-width=\"2\" stroke-dasharray=\"4 2\"/>";
    const bool first = &r == &o.races.front();  // (only the first race's lines are written out)
    for (const auto& [x, y, w] : {std::tuple{ax, ay, r.a_where}, std::tuple{bx, by, r.b_where}}) {
      os << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"6\" fill=\"none\" stroke=\"" << fail_colour
         << "\" stroke-width=\"2\"/>";
      if (first)
        os << "<text x=\"" << num(x + 9) << "\" y=\"" << num(y + 4) << "\" class=\"label fail\">" << esc(w)
           << "</text>";
    }
    os << "</g>\n";
  }
  os << "</g>\n";
  height = head + plot_h + 8;
  width = std::max(label_w + plot_w + 260, 720.0);
}

void caption_svg(std::ostream& os, const std::string& text, double x, double y) {
  os << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" class=\"cap\">" << esc(text) << "</text>\n";
}

constexpr const char* svg_style =
    "<style>text{font-family:DejaVu Sans,Arial,sans-serif;fill:#212121}.h{font-size:13px;font-weight:bold}"
    ".cap{font-size:12px}.small{font-size:10px}.label{font-size:10px}.lane{font-size:9px;text-anchor:middle}"
    ".fail{fill:#c00000;font-weight:bold}</style>\n";

}  // namespace

/// One group: caption, diagnostic, layout (KI), timeline; as an <svg> element.
std::string group_svg(const launch_rec& L, const group_rec& G, bool with_accesses, bool standalone) {
  const laid_out o = lay_out(L, G, with_accesses);
  std::ostringstream body;
  double y = 4, w = 600;
  if (standalone) {  // (on the page, the section's heading says it)
    caption_svg(body, launch_caption(L), 8, y + 12);
    w = std::max(w, 16 + 6.6 * static_cast<double>(launch_caption(L).size()));  // (about 6.6 px a character)
    y += 22;
  }
  if (o.failed && standalone) {
    body << "<g class=\"diagnostic-mark\" data-kind=\"" << esc(o.fail_kind) << "\"><text x=\"8\" y=\"" << num(y + 12)
         << "\" class=\"cap fail\">" << esc(o.fail_kind) << ": " << esc(o.fail_message.substr(0, 150))
         << (o.fail_message.size() > 150 ? "…" : "") << "</text></g>\n";
    w = std::max(
        w, 16 + 6.6 * static_cast<double>(o.fail_kind.size() + std::min<std::size_t>(o.fail_message.size(), 151)));
    y += 22;
  }
  if (!L.ka && !L.sub_group.empty()) {
    double h = 0, lw = 0;
    layout_svg(body, L, 8, y, h, lw);
    y += h + 10;
    w = std::max(w, lw + 16);
  }
  double h = 0, tw = 0;
  timeline_svg(body, L, G, o, 8, y, h, tw);
  y += h;
  w = std::max(w, tw + 16);
  if (G.cut) {
    caption_svg(body, "(cut: this group had more events than trace_options::max_events)", 8, y + 12);
    y += 18;
  }
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"trace\" width=\"" << num(w) << "\" height=\"" << num(y + 8)
     << "\" viewBox=\"0 0 " << num(w) << " " << num(y + 8) << "\">\n"
     << svg_style << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
     << body.str() << "</svg>\n";
  return os.str();
}

std::string page_html(const trace_options& opt, const std::vector<launch_rec>& launches, std::size_t skipped) {
  std::ostringstream os;
  std::size_t groups = 0;
  for (const auto& l : launches) groups += l.groups.size();
  os << "<!DOCTYPE html>\n<!-- ki-trace launches=" << launches.size() << " groups=" << groups << " -->\n"
     << "<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << esc(opt.title) << "</title>\n<style>"
     << "body{font-family:DejaVu Sans,Arial,sans-serif;margin:16px;color:#212121}h1{font-size:20px}"
     << "h2{font-size:16px;margin-top:28px}h3{font-size:14px}.note{color:#555;font-size:13px}"
     << ".diagnostic{border:2px solid #c00000;background:#fff0f0;padding:8px;margin:8px 0;white-space:pre-wrap;"
     << "font-size:13px}.legend-box{font-size:12px;border:1px solid #ccc;padding:6px;display:inline-block}"
     << "svg.trace{display:block;margin:8px 0}</style></head>\n<body>\n<h1>" << esc(opt.title) << "</h1>\n"
     << "<p class=\"legend-box\">Green: a work-item runs (up to its next sync point or its exit) · blue triangle: "
     << "arrives at a barrier · blue dot: arrives at a sub-group function · yellow: waits · blue band: a barrier "
     << "releases the group · coloured bar: a sub-group function releases its participants (in their sub-group's "
     << "colour) · black bar: returns from the kernel · red: the diagnostic (items that never leave, a race's two "
     << "accesses)</p>\n";
  if (launches.empty()) os << "<p class=\"note\" id=\"empty\">No launch on the reference backend was traced.</p>\n";
  for (const auto& L : launches) {
    os << "<section class=\"launch\" data-launch=\"" << (&L - launches.data()) << "\" data-kernel=\"" << esc(L.kernel)
       << "\" data-ka=\"" << (L.ka ? 1 : 0) << "\">\n<h2>Launch of '" << esc(L.kernel) << "'</h2>\n<p class=\"note\">"
       << esc(launch_caption(L)) << ". Replay this schedule: KI_REFERENCE_SEED=" << L.seed << ".</p>\n";
    const i64 total = L.numgroups.x * L.numgroups.y * L.numgroups.z;
    std::string chosen;
    for (const auto& g : opt.groups) chosen += (chosen.empty() ? "" : ", ") + xyz_str(g);
    os << "<p class=\"note\">Traced: group" << (opt.groups.size() == 1 ? " " : "s ") << esc(chosen) << " of " << total
       << " (choose others with ki-trace --group X,Y,Z or trace_options::groups)";
    if (L.groups.empty()) os << "; none of them is in this launch";
    os << ".</p>\n";
    for (const auto& G : L.groups) {
      const laid_out o = lay_out(L, G, opt.accesses);
      os << "<section class=\"group\" data-group=\"" << G.id.x << "," << G.id.y << "," << G.id.z
         << "\">\n<h3>Work-group " << xyz_str(G.id) << "</h3>\n";
      if (o.failed) {
        std::vector<i64> waiting;
        for (const auto& w : o.waits)
          if (w.unresolved) waiting.push_back(w.item);
        std::vector<i64> race_items;
        std::string race_lines;
        for (const auto& r : o.races) {
          race_items.push_back(r.a_item), race_items.push_back(r.b_item);
          race_lines += (race_lines.empty() ? "" : ",") + line_of(r.a_where) + "," + line_of(r.b_where);
        }
        os << "<div class=\"diagnostic\" data-kind=\"" << esc(o.fail_kind) << "\" data-item=\"" << o.fail_item
           << "\" data-where=\"" << esc(o.fail_where) << "\" data-waiting=\"" << join(waiting) << "\" data-unstarted=\""
           << join(o.unstarted) << "\" data-race-items=\"" << join(race_items) << "\" data-race-lines=\"" << race_lines
           << "\" data-races=\"" << G.races << "\"><b>" << esc(o.fail_kind) << "</b> at " << esc(o.fail_where) << "\n"
           << esc(o.fail_message);
        if (G.races > max_races)
          os << "\n(" << G.races << " races found in this group; the first " << max_races << " are drawn)";
        os << "</div>\n";
      }
      os << group_svg(L, G, opt.accesses, false) << "</section>\n";
    }
    os << "</section>\n";
  }
  if (skipped != 0)
    os << "<p class=\"note\" id=\"skipped\">" << skipped << " later launch" << (skipped == 1 ? " was" : "es were")
       << " not drawn (trace_options::max_launches = " << opt.max_launches << ").</p>\n";
  os << "</body></html>\n";
  return os.str();
}

}  // namespace ki::reference::detail::tracing
