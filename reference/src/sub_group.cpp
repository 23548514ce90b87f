// The sub-group communication functions of the oracle, on byte values, in lane order.
//
// Spec, translated to 0-based lanes (kernelinterface-api.txt, shfl ... sub_group_exclusive_scan):
//   shfl(v, lane)            lane `lane` of the sub-group; none there: unspecified
//   shfl(v, lane, w)         lane `lane mod w` of the caller's segment
//   shfl_down(v, d[, w])     lane + d; past the sub-group width (or outside the segment): the
//                            caller's own value; within it but without a work-item: unspecified
//   shfl_up(v, d[, w])       lane - d; before lane 0 (or the segment): the caller's own value
//   shfl_xor(v, m[, w])      position (lane in segment) xor m, m in [0, w)
//   any/all/ballot           over the work-items of the segment; ballot bit i = i-th lane of it
//   reduce/scan/excl. scan   left folds in lane order over the segment's work-items
#include <ki/cpu/support.hpp>
#include "sub_group.hpp"

#include <cstring>
#include <sstream>
#include <string>

#include "poison.hpp"

namespace ki::reference::detail {
using ki::detail::cpu::collective;
using ki::detail::cpu::collective_kind;
using i64 = std::int64_t;

const char* name_of(collective_kind k) { return ki::detail::cpu::collective_name(k); }

namespace {

using ki::detail::cpu::arg_text;
using ki::detail::cpu::call_difference;
using ki::detail::cpu::first_difference;

}  // namespace

void poison_source::fill(void* p, std::size_t bytes) {
  if (seed == 0) return poison_fill(p, bytes);
  auto* b = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; ++i) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull) ^ seed;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    b[i] = static_cast<unsigned char>((z ^ (z >> 27)) >> 24);
  }
}


std::string check_agreement(const scope& s) {
  // Hot path: every call of every sub-group function comes here; build text only on mismatch.
  const collective* first = nullptr;
  i64 first_lane = 0;
  for (i64 i = 0; i < s.lanes; ++i) {
    const collective* c = s.at[static_cast<std::size_t>(i)];
    if (c == nullptr) continue;
    if (first == nullptr) {
      first = c, first_lane = s.begin + i;
      continue;
    }
    const call_difference d = first_difference(*c, *first);
    if (d == call_difference::none) continue;

    const i64 lane = s.begin + i;
    auto where = [](const collective* x) {
      const char* f = std::strrchr(x->where.file, '/');
      return std::string(f ? f + 1 : x->where.file) + ":" + std::to_string(x->where.line);
    };
    auto lanes = [&](const std::string& what, const std::string& a, const std::string& b) {
      std::ostringstream os;
      os << what << ": lane " << first_lane << " " << a << ", lane " << lane << " " << b;
      return os.str();
    };
    if (d == call_difference::site)
      return lanes("the work-items execute different communication functions together",
                   "is at " + std::string(name_of(first->kind)) + " " + where(first),
                   "at " + std::string(name_of(c->kind)) + " " + where(c));
    const std::string at = std::string(name_of(c->kind)) + " at " + where(c);
    if (d == call_difference::width)
      return lanes(at + ": width differs", "passes " + std::to_string(first->width), "passes " + std::to_string(c->width));
    if (d == call_difference::arg)
      return lanes(at + (c->kind == collective_kind::shfl_xor ? ": mask differs" : ": offset differs"),
                   "passes " + arg_text(*first), "passes " + arg_text(*c));
    if (d == call_difference::type)
      return lanes(at + ": value types differ", std::string("passes ") + first->type_name, std::string("passes ") + c->type_name);
    if (d == call_difference::op) return lanes(at + ": operator differs", "", "");
    return lanes(at + ": init differs (it must be the same for the work-items of a segment)", "", "");
  }
  return "";
}

namespace {

/// Votes and folds: one pass per segment, in lane order, results written to every lane of it.
void perform_per_segment(const scope& s) {
  const i64 n = s.sub_group_size;
  const collective& c0 = *s.at.front();  // all participants agree on kind, width and op
  const i64 w = segment_width(c0, s.sub_group_width);
  const std::size_t sz = c0.size;
  std::vector<unsigned char> acc(sz), tmp(sz);
  auto at = [&](i64 lane) { return s.at[static_cast<std::size_t>(lane - s.begin)]; };
  for (i64 seg = s.begin; seg < s.begin + s.lanes && seg < n; seg += w) {
    const i64 end = seg + w < n ? seg + w : n;  // the segment's work-items: lanes [seg, end)
    switch (c0.kind) {
      case collective_kind::any:
      case collective_kind::all: {
        const bool all = c0.kind == collective_kind::all;
        bool r = all;
        for (i64 l = seg; l < end; ++l) r = all ? (r && *static_cast<const bool*>(at(l)->value)) : (r || *static_cast<const bool*>(at(l)->value));
        for (i64 l = seg; l < end; ++l) *static_cast<bool*>(at(l)->result) = r;
        break;
      }
      case collective_kind::ballot: {
        std::uint64_t m = 0;
        for (i64 l = seg; l < end; ++l)
          if (*static_cast<const bool*>(at(l)->value)) m |= std::uint64_t{1} << (l - seg);
        for (i64 l = seg; l < end; ++l) *static_cast<std::uint64_t*>(at(l)->result) = m;
        break;
      }
      case collective_kind::reduce: {  // op(...op(v_seg, v_seg+1)..., v_end-1)
        std::memcpy(acc.data(), at(seg)->value, sz);
        for (i64 l = seg + 1; l < end; ++l) {
          at(seg)->combine(at(seg)->op, acc.data(), at(l)->value, tmp.data());
          acc.swap(tmp);
        }
        for (i64 l = seg; l < end; ++l) std::memcpy(at(l)->result, acc.data(), sz);
        break;
      }
      case collective_kind::scan: {  // lane l: op(...(v_seg, ...), v_l)
        std::memcpy(acc.data(), at(seg)->value, sz);
        std::memcpy(at(seg)->result, acc.data(), sz);
        for (i64 l = seg + 1; l < end; ++l) {
          at(seg)->combine(at(seg)->op, acc.data(), at(l)->value, tmp.data());
          acc.swap(tmp);
          std::memcpy(at(l)->result, acc.data(), sz);
        }
        break;
      }
      case collective_kind::exclusive_scan: {  // lane seg: init; lane l: op(init, v_seg ... v_l-1)
        std::memcpy(acc.data(), at(seg)->init, sz);
        for (i64 l = seg; l < end; ++l) {
          std::memcpy(at(l)->result, acc.data(), sz);
          if (l + 1 < end) {
            at(seg)->combine(at(seg)->op, acc.data(), at(l)->value, tmp.data());
            acc.swap(tmp);
          }
        }
        break;
      }
      default:
        break;
    }
  }
}

}  // namespace

std::int64_t perform(const scope& s, poison_source& poison) {
  const collective_kind kind = s.at.front()->kind;
  if (kind == collective_kind::sub_group_barrier) return 0;
  if (kind != collective_kind::shfl && kind != collective_kind::shfl_down && kind != collective_kind::shfl_up &&
      kind != collective_kind::shfl_xor) {
    perform_per_segment(s);
    return 0;
  }
  // Shuffles: each participant reads one lane.
  const i64 W = s.sub_group_width, n = s.sub_group_size;
  i64 unspecified = 0;
  auto rec = [&](i64 lane) -> const collective* {
    return (lane >= s.begin && lane < s.begin + s.lanes) ? s.at[static_cast<std::size_t>(lane - s.begin)] : nullptr;
  };
  for (i64 i = 0; i < s.lanes; ++i) {
    collective* c = s.at[static_cast<std::size_t>(i)];
    if (c == nullptr) continue;
    const i64 lane = s.begin + i, w = segment_width(*c, W), seg = lane / w * w;
    const std::size_t sz = c->size;
    auto read = [&](i64 src) {
      if (src >= 0 && src < n && rec(src) != nullptr) {
        std::memcpy(c->result, rec(src)->value, sz);
      } else {
        poison.fill(c->result, sz);
        ++unspecified;
      }
    };
    switch (c->kind) {
      case collective_kind::shfl:
        if (c->width > 0) read(seg + (c->arg & (w - 1)));  // lane mod width, also for negative lanes
        else if (c->arg_huge || c->arg < 0 || c->arg >= W) read(-1);  // no such lane: unspecified
        else read(c->arg);
        break;
      case collective_kind::shfl_down:
        if (c->arg_huge || c->arg >= seg + w - lane) std::memcpy(c->result, c->value, sz);  // outside: own value
        else read(lane + c->arg);
        break;
      case collective_kind::shfl_up:
        if (c->arg_huge || c->arg > lane - seg) std::memcpy(c->result, c->value, sz);
        else read(lane - c->arg);
        break;
      case collective_kind::shfl_xor:
        read(seg + ((lane - seg) ^ c->arg));
        break;
      default:
        break;
    }
  }
  return unspecified;
}

}  // namespace ki::reference::detail
