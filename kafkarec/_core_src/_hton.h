/* Big-endian (Kafka) and little-endian (LZ4 frames, Avro and Protobuf numbers) loads and
 * stores for unaligned data.  memcpy keeps unaligned access defined behaviour; compilers turn
 * memcpy + bswap into a single load (movbe or mov + bswap), and memcpy alone into a mov. */
#ifndef KAFKAREC_HTON_H
#define KAFKAREC_HTON_H
#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define KR_BE16(x) (x)
#define KR_BE32(x) (x)
#define KR_BE64(x) (x)
#define KR_LE32(x) __builtin_bswap32(x)
#define KR_LE64(x) __builtin_bswap64(x)
#else
#define KR_BE16(x) __builtin_bswap16(x)
#define KR_BE32(x) __builtin_bswap32(x)
#define KR_BE64(x) __builtin_bswap64(x)
#define KR_LE32(x) (x)
#define KR_LE64(x) (x)
#endif

static inline uint16_t kr_load_be16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return KR_BE16(v); }
static inline uint32_t kr_load_be32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return KR_BE32(v); }
static inline uint64_t kr_load_be64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return KR_BE64(v); }
static inline void kr_store_be16(uint8_t *p, uint16_t v) { v = KR_BE16(v); memcpy(p, &v, 2); }
static inline void kr_store_be32(uint8_t *p, uint32_t v) { v = KR_BE32(v); memcpy(p, &v, 4); }
static inline void kr_store_be64(uint8_t *p, uint64_t v) { v = KR_BE64(v); memcpy(p, &v, 8); }
static inline uint32_t kr_load_le32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return KR_LE32(v); }
static inline uint64_t kr_load_le64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return KR_LE64(v); }
/* IEEE 754 float and double as Avro and Protobuf write them: the bits of a little-endian integer */
static inline float kr_load_le_f32(const uint8_t *p) { uint32_t v = kr_load_le32(p); float f; memcpy(&f, &v, 4); return f; }
static inline double kr_load_le_f64(const uint8_t *p) { uint64_t v = kr_load_le64(p); double d; memcpy(&d, &v, 8); return d; }
#endif
