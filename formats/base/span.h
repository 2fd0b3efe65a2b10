/* Bounds-checked little-endian reads from untrusted bytes.
 * A span is a window on the mapped model file; `base` is the file offset of
 * its first byte so that errors can name absolute offsets. Every read checks
 * `off + n <= len` without overflow and never touches memory outside. */
#ifndef MFS_SPAN_H
#define MFS_SPAN_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef struct mfs_span {
    const uint8_t *p;
    uint64_t len;
    uint64_t base;
} mfs_span;

static inline bool mfs_span_has(mfs_span s, uint64_t off, uint64_t n)
{
    return off <= s.len && n <= s.len - off;
}

/* The sub-window [off, off+n); the caller has checked mfs_span_has. */
static inline mfs_span mfs_span_sub(mfs_span s, uint64_t off, uint64_t n)
{
    mfs_span r = { s.p + off, n, s.base + off };
    return r;
}

#define MFS_SPAN_READER(NAME, TYPE)                                           \
    static inline bool mfs_rd_##NAME(mfs_span s, uint64_t off, TYPE *out)      \
    {                                                                         \
        if (!mfs_span_has(s, off, sizeof(TYPE)))                              \
            return false;                                                     \
        uint8_t b[sizeof(TYPE)];                                              \
        memcpy(b, s.p + off, sizeof(TYPE));                                   \
        uint64_t v = 0;                                                       \
        for (unsigned i = sizeof(TYPE); i-- > 0;)                             \
            v = (v << 8) | b[i];                                              \
        *out = (TYPE)v;                                                       \
        return true;                                                          \
    }

MFS_SPAN_READER(u8, uint8_t)
MFS_SPAN_READER(u16, uint16_t)
MFS_SPAN_READER(u32, uint32_t)
MFS_SPAN_READER(u64, uint64_t)
MFS_SPAN_READER(i32, int32_t)
MFS_SPAN_READER(i64, int64_t)

#undef MFS_SPAN_READER

/* a + b, or false on overflow. */
static inline bool mfs_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

static inline bool mfs_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

#endif
