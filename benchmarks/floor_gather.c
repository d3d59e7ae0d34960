/* A physical floor for to_arrow, outside kafkarec: moving every record's key
 * and value into Arrow-shaped columns (key/value bytes, int32 offsets, int64
 * offset and timestamp) when where they are is already known.  `locate` finds
 * the spans (untimed, no validation: benchmark input only); `gather` is what
 * bench_decode.py times.  Output buffers are allocated once by the caller,
 * as a memory pool would hand them out.  Built by bench_decode.py with
 * `cc -O3 -shared -fPIC`. */
#include <stdint.h>
#include <string.h>

static int64_t read_varlong(const uint8_t **pp) {
    const uint8_t *p = *pp;
    uint64_t v = 0;
    int shift = 0;
    while (*p & 0x80) {
        v |= (uint64_t)(*p & 0x7F) << shift;
        shift += 7;
        p++;
    }
    v |= (uint64_t)*p << shift;
    *pp = p + 1;
    return (int64_t)((v >> 1) ^ -(v & 1));
}

/* Spans of the records of uncompressed v2 batches; returns the record count. */
int64_t locate(const uint8_t *buf, int64_t size, int64_t max_records,
               int64_t *key_at, int32_t *key_len, int64_t *value_at, int32_t *value_len) {
    int64_t pos = 0, n = 0;
    while (pos + 61 <= size) {
        uint32_t length = __builtin_bswap32(*(const uint32_t *)(buf + pos + 8));
        int32_t count = (int32_t)__builtin_bswap32(*(const uint32_t *)(buf + pos + 57));
        const uint8_t *p = buf + pos + 61;
        for (int32_t i = 0; i < count && n < max_records; i++) {
            int64_t record_size = read_varlong(&p);
            const uint8_t *body = p;
            p++;                    /* attributes */
            read_varlong(&p);       /* timestamp delta */
            read_varlong(&p);       /* offset delta */
            int64_t k = read_varlong(&p);
            key_at[n] = p - buf;
            key_len[n] = (int32_t)k;
            if (k > 0) p += k;
            int64_t v = read_varlong(&p);
            value_at[n] = p - buf;
            value_len[n] = (int32_t)v;
            n++;
            p = body + record_size;
        }
        pos += 12 + (int64_t)length;
    }
    return n;
}

void gather(const uint8_t *buf, int64_t n, const int64_t *key_at, const int32_t *key_len,
            const int64_t *value_at, const int32_t *value_len, uint8_t *key_data,
            uint8_t *value_data, int32_t *key_offsets, int32_t *value_offsets,
            int64_t *offsets, int64_t *timestamps) {
    int32_t k = 0, v = 0;
    for (int64_t i = 0; i < n; i++) {
        if (key_len[i] > 0) {
            memcpy(key_data + k, buf + key_at[i], (size_t)key_len[i]);
            k += key_len[i];
        }
        if (value_len[i] > 0) {
            memcpy(value_data + v, buf + value_at[i], (size_t)value_len[i]);
            v += value_len[i];
        }
        key_offsets[i + 1] = k;
        value_offsets[i + 1] = v;
        offsets[i] = i;
        timestamps[i] = i;
    }
}
