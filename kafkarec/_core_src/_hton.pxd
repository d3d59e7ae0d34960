# Big- and little-endian field access; see _hton.h for why memcpy.
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t

cdef extern from "_hton.h" nogil:
    uint16_t kr_load_be16(const uint8_t *p) noexcept
    uint32_t kr_load_be32(const uint8_t *p) noexcept
    uint64_t kr_load_be64(const uint8_t *p) noexcept
    void kr_store_be16(uint8_t *p, uint16_t v) noexcept
    void kr_store_be32(uint8_t *p, uint32_t v) noexcept
    void kr_store_be64(uint8_t *p, uint64_t v) noexcept
    uint32_t kr_load_le32(const uint8_t *p) noexcept
    uint64_t kr_load_le64(const uint8_t *p) noexcept
    float kr_load_le_f32(const uint8_t *p) noexcept
    double kr_load_le_f64(const uint8_t *p) noexcept
