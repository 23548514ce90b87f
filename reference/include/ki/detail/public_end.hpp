// Closes what ki/detail/public_begin.hpp opened. No include guard.
#pragma pop_macro("KI_DETAIL_PUBLIC")
