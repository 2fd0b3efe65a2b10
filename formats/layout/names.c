#include "names.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "strbuf.h"
#include "path.h"
#include "utf8.h"

#define LONG_KEEP 200

static uint64_t fnv1a64(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static int needs_escape(uint8_t c, size_t pos)
{
    return c == '/' || c == '%' || c < 0x20 || c == 0x7f || (pos == 0 && c == '.');
}

char *mfs_name_encode(const char *name, size_t len)
{
    const uint8_t *p = (const uint8_t *)name;
    mfs_strbuf sb = { 0 };
    if (len == 0) {
        mfs_sb_adds(&sb, "%empty");
        return mfs_sb_take(&sb, NULL);
    }
    size_t cut = 0;  /* encoded length at the last safe cut point <= LONG_KEEP */
    size_t i = 0;
    while (i < len) {
        /* A whole UTF-8 sequence is one unit, so a cut never splits it;
         * invalid bytes are single units. */
        size_t unit = p[i] >= 0x80 ? mfs_utf8_seq(p + i, len - i) : 1;
        /* A byte that is not part of valid UTF-8 is escaped too: file
         * names (and the paths in model.json) stay valid UTF-8 and still
         * decode back to the exact bytes. */
        bool invalid = unit == 0;
        if (invalid)
            unit = 1;
        if (invalid || (unit == 1 && needs_escape(p[i], i)))
            mfs_sb_addf(&sb, "%%%02X", p[i]);
        else
            mfs_sb_add(&sb, p + i, unit);
        i += unit;
        if (sb.len <= LONG_KEEP)
            cut = sb.len;
    }
    if (sb.len > MFS_NAME_MAX) {
        sb.len = cut;
        mfs_sb_addf(&sb, "%%~%016llx", (unsigned long long)fnv1a64(p, len));
    }
    return mfs_sb_take(&sb, NULL);
}

char *mfs_name_add_suffix(const char *fname, const char *suffix)
{
    size_t len = strlen(fname), slen = strlen(suffix);
    mfs_strbuf sb = { 0 };
    if (len + slen <= MFS_NAME_MAX) {
        mfs_sb_adds(&sb, fname);
        mfs_sb_adds(&sb, suffix);
        return mfs_sb_take(&sb, NULL);
    }
    /* The long-name rule again, on the file name (unique in its folder, so
     * its hash tells such names apart): cut at LONG_KEEP bytes, never inside
     * a %XX or a UTF-8 sequence. */
    size_t keep = len < LONG_KEEP ? len : LONG_KEEP;
    for (size_t back = 1; back <= 2 && back <= keep; back++)
        if (fname[keep - back] == '%') {
            keep -= back;
            break;
        }
    while (keep > 0 && ((unsigned char)fname[keep] & 0xc0) == 0x80)
        keep--;
    mfs_sb_add(&sb, fname, keep);
    mfs_sb_addf(&sb, "%%~%016llx", (unsigned long long)fnv1a64((const uint8_t *)fname, len));
    mfs_sb_adds(&sb, suffix);
    return mfs_sb_take(&sb, NULL);
}
