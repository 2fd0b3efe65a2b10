#include "inflate_prefix.h"

#include <limits.h>

#include <zlib.h>

int mfs_inflate_prefix(const uint8_t *src, uint64_t src_len, uint64_t at, uint8_t *dst, size_t want,
                       size_t *got, mfs_err *e)
{
    z_stream zs = { 0 };
    *got = 0;
    if (want > UINT_MAX)
        return mfs_fail(e, MFS_E_INTERNAL, MFS_NO_OFFSET, "inflate prefix of %zu bytes", want);
    int zr = inflateInit2(&zs, -15);
    if (zr != Z_OK)
        return mfs_fail(e, zr == Z_MEM_ERROR ? MFS_E_NOMEM : MFS_E_INTERNAL, MFS_NO_OFFSET,
                        "zlib cannot start a raw inflate");
    zs.next_out = dst;
    zs.avail_out = (uInt)want;
    uint64_t left = src_len;
    int rc = 0;
    while (zs.avail_out > 0) {
        if (zs.avail_in == 0 && left > 0) {
            uInt n = left > UINT_MAX ? UINT_MAX : (uInt)left;
            zs.next_in = (Bytef *)(uintptr_t)(src + (src_len - left));  /* zlib does not write it */
            zs.avail_in = n;
            left -= n;
        }
        int r = inflate(&zs, Z_NO_FLUSH);
        if (r == Z_STREAM_END)
            break;
        if (r == Z_OK)
            continue;
        if (r == Z_BUF_ERROR && zs.avail_in == 0 && left == 0) {
            mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET,
                     "deflate data at byte %llu ends before its stream does",
                     (unsigned long long)at);
            rc = MFS_INFLATE_SHORT;
        } else
            rc = mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "deflate data at byte %llu is invalid: %s",
                          (unsigned long long)at, zs.msg != NULL ? zs.msg : zError(r));
        break;
    }
    *got = want - zs.avail_out;
    inflateEnd(&zs);
    return rc;
}
