// Private: barrier() on CPU backends, with the inline switch of the barrier ring.
//
// A barrier normally calls the executor (cpu::executor::barrier). An executor that keeps a
// barrier ring (cpu::barrier_ring, ki/detail/cpu/executor.hpp: simd_cpu does) lets the steady state of a
// barrier happen right here, inlined into the kernel: a work-item that arrives at the round's
// barrier and is neither its first nor its last arrival saves its context in its own record,
// makes its successor in the ring current and resumes it, all in a dozen instructions.
//
// The switch saves only the stack pointer, the resume address and rbp: its asm tells the
// compiler that every other register (general, vector, x87/MMX, flags) is clobbered, so the
// compiler keeps whatever the kernel needs after the barrier on the work-item's own stack, and
// only that (typically a loop counter or two). It writes nothing on the stack, so it cannot
// overflow it, and `current` names the work-item whose stack is in use at every instruction
// that may fault. Whoever resumes a context (this switch, or the fiber core's out-of-line one)
// loads rbp and rsp and jumps to its pc (reference/cpu/src/fiber.cpp).
//
// Only on x86-64 ELF with GCC or Clang, and not in sanitizer builds (AddressSanitizer and
// ThreadSanitizer must see every switch); elsewhere barrier() always calls the executor, and
// the executor does not keep a ring where its library was built without the inline switch.
#pragma once
#include <ki/detail/private.hpp>
#include <ki/detail/cpu/executor.hpp>
#include <ki/macros.hpp>
#include <ki/source_location.hpp>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KI_DETAIL_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KI_DETAIL_SANITIZED 1
#endif
#endif
#if defined(__x86_64__) && defined(__ELF__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(KI_DETAIL_SANITIZED) && !defined(KI_FIBER_BOOST_SWITCH)
#define KI_CPU_INLINE_BARRIER 1
#else
#define KI_CPU_INLINE_BARRIER 0
#endif

namespace ki::detail::cpu {

#if KI_CPU_INLINE_BARRIER
#if defined(__AVX512F__)
#define KI_DETAIL_AVX512_CLOBBERS                                                                               \
  , "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", \
      "xmm28", "xmm29", "xmm30", "xmm31", "k1", "k2", "k3", "k4", "k5", "k6", "k7"
#else
#define KI_DETAIL_AVX512_CLOBBERS
#endif

// With -fcf-protection, every target of an indirect jump starts with endbr64 (a no-op on CPUs
// without indirect-branch tracking).
#if defined(__CET__)
#define KI_DETAIL_ENDBR "\n\tendbr64"
#else
#define KI_DETAIL_ENDBR
#endif

/// Saves the running context in *save (sp, the address after the jump, rbp) and resumes the
/// context (sp, pc, bp). Returns when somebody resumes *save.
KI_ALWAYS_INLINE void switch_inline(fiber_context* save, void* sp, void* pc, void* bp) {
  asm volatile(
      "movq %%rsp, (%%rdi)\n\t"
      "leaq 1f(%%rip), %%rax\n\t"
      "movq %%rax, 8(%%rdi)\n\t"
      "movq %%rbp, 16(%%rdi)\n\t"
      "movq %%rcx, %%rbp\n\t"
      "movq %%rsi, %%rsp\n\t"
      "jmpq *%%rdx\n"
      "1:" KI_DETAIL_ENDBR
      : "+D"(save), "+S"(sp), "+d"(pc), "+c"(bp)
      :
      : "rax", "rbx", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "memory", "cc", "xmm0", "xmm1", "xmm2",
        "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
        "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)", "st(6)", "st(7)", "mm0", "mm1", "mm2", "mm3", "mm4", "mm5",
        "mm6", "mm7" KI_DETAIL_AVX512_CLOBBERS);
}
#undef KI_DETAIL_AVX512_CLOBBERS
#undef KI_DETAIL_ENDBR
#endif

/// ki::barrier() on a CPU backend.
KI_ALWAYS_INLINE void barrier(const source_location& where) {
#if KI_CPU_INLINE_BARRIER
  // (A site is set only while a work-item of the ring's group runs: `current` is not null.)
  barrier_ring* const r = current_ring;
  if (same_site(where, r->site)) [[likely]] {
    item_state* const me = current;
    char* t = reinterpret_cast<char*>(me) + r->stride;
    if (t == r->end) t = r->begin;
    if (t != reinterpret_cast<const char*>(r->first)) [[likely]] {
      auto* const next = reinterpret_cast<item_state*>(t);
      fiber_context* const to = ring_context_of(next);
      const fiber_context c = *to;
      to->sp = nullptr;  // running: its slot is empty
      current = next;
      switch_inline(ring_context_of(me), c.sp, c.pc, c.bp);
      return;
    }
  }
#endif
  exec("barrier", where).barrier(where);  // (the location by value: in registers)
}

}  // namespace ki::detail::cpu
