#include "utf8.h"

size_t mfs_utf8_seq(const uint8_t *p, size_t n)
{
    if (n == 0)
        return 0;
    uint8_t c = p[0];
    if (c < 0x80)
        return 1;
    size_t len;
    uint32_t cp, min;
    if ((c & 0xe0) == 0xc0) { len = 2; cp = c & 0x1f; min = 0x80; }
    else if ((c & 0xf0) == 0xe0) { len = 3; cp = c & 0x0f; min = 0x800; }
    else if ((c & 0xf8) == 0xf0) { len = 4; cp = c & 0x07; min = 0x10000; }
    else return 0;
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

bool mfs_utf8_valid(const void *p, size_t n)
{
    const uint8_t *s = p;
    size_t i = 0;
    while (i < n) {
        size_t k = mfs_utf8_seq(s + i, n - i);
        if (k == 0)
            return false;
        i += k;
    }
    return true;
}
