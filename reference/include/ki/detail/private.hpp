// Included first by every private header of ki (ki/detail/...): refuses to compile where a
// private header is included directly from outside ki. Public headers include private ones
// between ki/detail/public_begin.hpp and ki/detail/public_end.hpp; ki's own sources (backends,
// the CPU runtime, tools/bench) are compiled with KI_BUILDING_KI. (No include guard: it is a
// check, repeated by each private header's first inclusion.)
#if !defined(KI_DETAIL_PUBLIC) && !defined(KI_BUILDING_KI)
#error "ki/detail/*.hpp are private: include <ki/ki.hpp> (or the public header of the concept, e.g. <ki/sub_group.hpp>)"
#endif
