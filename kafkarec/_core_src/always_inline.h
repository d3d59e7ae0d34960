/* The functions the decode loops must have inlined, however large gcc finds them.
 *
 * A Cython `cdef inline` function is only a hint, and gcc keeps large ones out of line: the
 * record scanner, the column writers, the varints, the Avro, Protobuf and internal-topic
 * readers' steps.  Raising gcc's size limit for inline functions for the whole module
 * (--param max-inline-insns-single) did inline them, but inlined cold code as well: a compile
 * of the core took ~95 CPU-s instead of ~78.  So a hot function says so itself: it is a
 * `cdef inline` whose return type is one of _always_inline.pxd's, which puts KR_ALWAYS_INLINE
 * on the function (for gcc and clang alike).  Cython writes the same type on its temporaries,
 * casts and vtable slots, where the attribute means nothing, so -Wattributes is off from here to
 * the end of the file (a call that cannot be inlined is still an error). */
#ifndef KAFKAREC_ALWAYS_INLINE_H
#define KAFKAREC_ALWAYS_INLINE_H

#if defined(__GNUC__)   /* clang too, whose -Wattributes covers its ignored attributes */
#pragma GCC diagnostic ignored "-Wattributes"
#define KR_ALWAYS_INLINE __attribute__((always_inline))
#else
#define KR_ALWAYS_INLINE
#endif

#endif
