/* The functions the decode loops must have inlined, however large gcc finds them.
 *
 * A Cython `cdef inline` function is only a hint, and gcc keeps large ones out of line: the
 * record scanner, the column writers, the Avro, Protobuf and internal-topic readers' steps.
 * Raising gcc's inlining limits for the whole module did inline them, but inlined cold code
 * as well and made each compile of the core about a third dearer (62 -> 95 CPU-s).  So a hot
 * function says so itself: its return type is one of _always_inline.pxd's, which puts
 * KR_ALWAYS_INLINE on the function.  Cython writes the same type on its temporaries and
 * casts, where the attribute means nothing; that warning is off from here on. */
#ifndef KAFKAREC_ALWAYS_INLINE_H
#define KAFKAREC_ALWAYS_INLINE_H

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic ignored "-Wattributes"
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wignored-attributes"
#endif
#define KR_ALWAYS_INLINE __attribute__((always_inline))
#else
#define KR_ALWAYS_INLINE
#endif

#endif
