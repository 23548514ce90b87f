// Opens the part of a public header that includes private ones (ki/detail/private.hpp). Pairs
// with ki/detail/public_end.hpp; nests (the state is pushed and popped). No include guard.
#pragma push_macro("KI_DETAIL_PUBLIC")
#undef KI_DETAIL_PUBLIC
#define KI_DETAIL_PUBLIC 1
