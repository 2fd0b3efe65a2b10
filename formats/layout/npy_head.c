#include "npy_head.h"

#include <stdbool.h>
#include <string.h>

#include "strbuf.h"

char *mfs_npy_head_make(const char *descr, bool fortran, const uint64_t *dims, size_t ndim,
                        size_t *len)
{
    /* Written in place after room for the prefix (no printf, no second
     * buffer: a million tensors make a million headers). */
    enum { PRE_MAX = 12 };
    mfs_strbuf h = { 0 };
    /* Room for the whole header at once (most are 128 bytes). */
    mfs_sb_reserve(&h, 160 + 24 * ndim);
    mfs_sb_add(&h, "\x93NUMPY\0\0\0\0\0\0", PRE_MAX);
    mfs_sb_adds(&h, "{'descr': ");
    mfs_sb_adds(&h, descr);
    mfs_sb_adds(&h, fortran ? ", 'fortran_order': True, 'shape': ("
                            : ", 'fortran_order': False, 'shape': (");
    for (size_t i = 0; i < ndim; i++) {
        if (i)
            mfs_sb_add(&h, ", ", 2);
        mfs_sb_addu(&h, (unsigned long long)dims[i]);
    }
    mfs_sb_adds(&h, ndim == 1 ? ",), }" : "), }");
    size_t dlen = h.len - PRE_MAX;
    bool ascii = true;
    for (const char *c = descr; *c && ascii; c++)
        ascii = (unsigned char)*c < 0x80;
    /* 2.0 and 3.0 have a 32-bit length. */
    size_t pre = ascii ? 10 : 12, total = pre + dlen + 1;
    if ((total + 63) / 64 * 64 - pre > 65535) {
        pre = 12;
        total = pre + dlen + 1;
    }
    total = (total + 63) / 64 * 64;
    size_t hlen = total - pre;
    /* The dict moves up to its place after the prefix. */
    memmove(h.buf + pre, h.buf + PRE_MAX, dlen);
    h.len = pre + dlen;
    h.buf[6] = !ascii ? 3 : pre == 10 ? 1 : 2;
    h.buf[7] = 0;
    for (size_t i = 0; i < pre - 8; i++)
        h.buf[8 + i] = (char)((hlen >> (8 * i)) & 0xff);
    while (h.len < total - 1)
        mfs_sb_addc(&h, ' ');
    mfs_sb_addc(&h, '\n');
    return mfs_sb_take(&h, len);
}
