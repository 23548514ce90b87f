// The sub-group operations of both CPU backends: argument checks, agreement of the
// participants, and execution, each driven by the operation's row (ki/detail/cpu/sub_group_ops.hpp).
#include <ki/cpu/sub_group.hpp>

#include <cstring>
#include <sstream>
#include <string>

#include <ki/cpu/support.hpp>
#include <ki/detail/type_name.hpp>

namespace ki::detail::cpu {
using i64 = std::int64_t;

std::string arg_text(const collective& c) {
  return c.arg_huge ? std::to_string(static_cast<std::uint64_t>(c.arg)) : std::to_string(c.arg);
}

std::string check_arguments(const collective& c, i64 w) {
  const op_row& r = op(c.kind);
  const i64 width = c.width;
  if (c.width_given && (c.width_huge || width <= 0 || width > w || (width & (width - 1)) != 0)) {
    const std::string shown = c.width_huge ? std::to_string(static_cast<std::uint64_t>(width)) : std::to_string(width);
    return std::string(r.name) + ": width = " + shown + " must be a power of two between 1 and the sub-group width " +
           std::to_string(w);
  }
  const i64 seg = segment_width(c, w);
  if (r.arg == arg_role::offset && !c.arg_huge && c.arg < 0)
    return std::string(r.name) + ": offset = " + arg_text(c) + " must be at least 0";
  if (r.arg == arg_role::mask && (c.arg_huge || c.arg < 0 || c.arg >= seg))
    return std::string(r.name) + ": mask = " + arg_text(c) + " must be between 0 and " + std::to_string(seg - 1) +
           (c.width > 0 ? " (width - 1)" : " (the sub-group width - 1)");
  return "";
}

namespace {

/// How a participant differs from the first one, in the order the messages report it: call
/// site (function and source location), width, offset or mask, value type, operator, init.
enum class call_difference : std::uint8_t { none, site, width, arg, type, op, op_state, init };

call_difference first_difference(const collective& c, const collective& first) {
  if (c.kind != first.kind || !same_point(c.where, first.where)) return call_difference::site;
  if (c.width != first.width) return call_difference::width;
  if (checks_arg(c.kind) && (c.arg != first.arg || c.arg_huge != first.arg_huge)) return call_difference::arg;
  if (c.size != first.size || (c.type_name != first.type_name && std::strcmp(c.type_name, first.type_name) != 0))
    return call_difference::type;
  if (c.combine != first.combine) return call_difference::op;
  if (c.same_op != nullptr && !c.same_op(c.op, first.op)) return call_difference::op_state;
  if (c.init != nullptr && !c.same_init(c.init, first.init)) return call_difference::init;
  return call_difference::none;
}

/// "file:line" (no column: the lanes of one call share it).
std::string line_of(const collective& c) {
  const char* f = std::strrchr(c.where.file, '/');
  return std::string(f ? f + 1 : c.where.file) + ":" + std::to_string(c.where.line);
}

}  // namespace

std::string check_agreement(const scope& s, i64* differing) {
  // Every call of every sub-group function comes here: text is built only on a mismatch.
  const collective* first = nullptr;
  i64 first_lane = 0;
  for (i64 i = 0; i < s.lanes; ++i) {
    const collective* c = s.at[i];
    if (c == nullptr) continue;
    if (first == nullptr) {
      first = c, first_lane = s.begin + i;
      continue;
    }
    const call_difference d = first_difference(*c, *first);
    if (d == call_difference::none) continue;
    const i64 lane = s.begin + i;
    *differing = lane;
    auto lanes = [&](const std::string& what, const std::string& a, const std::string& b) {
      std::ostringstream os;
      os << what << ": lane " << first_lane << " " << a << ", lane " << lane << " " << b;
      return os.str();
    };
    const char* name = collective_name(c->kind);
    if (d == call_difference::site)
      return lanes("the work-items execute different communication functions together",
                   "is at " + std::string(collective_name(first->kind)) + " " + line_of(*first),
                   "at " + std::string(name) + " " + line_of(*c));
    const std::string at = std::string(name) + " at " + line_of(*c);
    switch (d) {
      case call_difference::width:
        return lanes(at + ": width differs", "passes " + std::to_string(first->width),
                     "passes " + std::to_string(c->width));
      case call_difference::arg:
        return lanes(at + (op(c->kind).arg == arg_role::mask ? ": mask differs" : ": offset differs"),
                     "passes " + arg_text(*first), "passes " + arg_text(*c));
      case call_difference::type:
        return lanes(at + ": value types differ", std::string("passes ") + first->type_name,
                     std::string("passes ") + c->type_name);
      case call_difference::op:
        return lanes(at + ": operator differs", "passes " + readable_type_name(first->op_name),
                     "passes " + readable_type_name(c->op_name));
      case call_difference::op_state:
        return lanes(at + ": operator differs (the same type, another state)",
                     "passes one " + readable_type_name(first->op_name), "another");
      case call_difference::init:
        return lanes(at + ": init differs (it must be the same for the work-items of a segment)", "passes one value",
                     "another");
      case call_difference::none:
      case call_difference::site: break;
    }
  }
  return "";
}

std::int64_t perform(const scope& s, unspecified_fill fill, fast_fold fast) {
  const collective& c0 = *s.at[0];  // (lane begin: every scope's first lane has a work-item)
  const op_row& row = op(c0.kind);
  const i64 W = s.sub_group_width, n = s.sub_group_size;
  switch (row.shape) {
    case op_shape::sync: return 0;
    case op_shape::vote:
    case op_shape::fold: {
      // One pass per segment (the participants agree on the width): its work-items are lanes
      // [seg, end).
      const i64 w = segment_width(c0, W);
      for (i64 seg = s.begin; seg < s.begin + s.lanes && seg < n; seg += w) {
        const i64 end = seg + w < n ? seg + w : n;
        collective* const* at = s.at + (seg - s.begin);
        if (row.shape == op_shape::fold && fast != nullptr) fast(at, end - seg, row.fold);
        else row.segment(at, end - seg);
      }
      return 0;
    }
    case op_shape::read: break;
  }
  // Each participant reads one lane.
  i64 unspecified = 0;
  for (i64 i = 0; i < s.lanes; ++i) {
    collective* c = s.at[i];
    if (c == nullptr) continue;
    const i64 lane = s.begin + i, w = segment_width(*c, W), seg = lane / w * w;
    const i64 src = row.source(*c, lane, seg, w, W);
    if (src == own_value) {
      std::memcpy(c->result, c->value, c->size);
    } else if (src >= 0 && src < n && src >= s.begin && src < s.begin + s.lanes && s.at[src - s.begin] != nullptr) {
      std::memcpy(c->result, s.at[src - s.begin]->value, c->size);
    } else {
      fill.fill(fill.ctx, c->result, c->size);
      ++unspecified;
    }
  }
  return unspecified;
}

}  // namespace ki::detail::cpu
