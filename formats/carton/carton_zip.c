/* What the Carton driver reads of a zip beyond formats/zip.h: a cheap walk
 * of the central directory for the probe (is there a carton.toml?), and
 * each entry's Unix mode (symlinks), which mfs_zip_entry does not carry.
 *
 * Layout (APPNOTE): end record 22 bytes + comment (u16 entries at +10, u32
 * directory size at +12 and offset at +16); ZIP64 locator (20 bytes) just
 * before it points (u64 at +8) at the ZIP64 end record (u64 entries at +32,
 * size at +40, offset at +48); a central directory entry is 46 bytes
 * (version made by at +4, name length at +28, extra length at +30, comment
 * length at +32, external attributes at +38) + name + extra + comment; a
 * local header is 30 bytes (name length at +26) + name + extra. */
#include <stdlib.h>
#include <string.h>

#include "carton.h"
#include "xalloc.h"

#define SIG_LOCAL   0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END     0x06054b50u
#define SIG_END64   0x06064b50u
#define SIG_LOC64   0x07064b50u

static const char toml_name[] = "carton.toml";
#define TOML_NAME_LEN (sizeof toml_name - 1)

typedef struct cd_range {
    uint64_t off, size;
} cd_range;

/* The central directory the last end record in the file's tail describes. */
static bool find_cd(mfs_span f, cd_range *cd)
{
    if (f.len < 22)
        return false;
    uint64_t last = f.len - 22, first = last > 0xFFFF ? last - 0xFFFF : 0;
    for (uint64_t p = last + 1; p-- > first;) {
        uint32_t sig, off32, size32;
        uint16_t count;
        if (!mfs_rd_u32(f, p, &sig) || sig != SIG_END)
            continue;
        if (!mfs_rd_u16(f, p + 10, &count) || !mfs_rd_u32(f, p + 12, &size32) ||
            !mfs_rd_u32(f, p + 16, &off32))
            return false;
        cd->off = off32;
        cd->size = size32;
        if (off32 == UINT32_MAX || size32 == UINT32_MAX || count == 0xFFFF) {
            uint32_t lsig, esig;
            uint64_t rec;
            if (p < 20 || !mfs_rd_u32(f, p - 20, &lsig) || lsig != SIG_LOC64 ||
                !mfs_rd_u64(f, p - 12, &rec) || !mfs_rd_u32(f, rec, &esig) || esig != SIG_END64 ||
                !mfs_rd_u64(f, rec + 40, &cd->size) || !mfs_rd_u64(f, rec + 48, &cd->off))
                return false;
        }
        return mfs_span_has(f, cd->off, cd->size);
    }
    return false;
}

/* One central directory record at `pos` (inside the directory): its total
 * length, name, and the fields we want. */
typedef struct cd_rec {
    uint64_t len;
    const char *name;
    uint16_t name_len;
    uint16_t made_by;
    uint32_t attrs;
} cd_rec;

static bool read_rec(mfs_span f, const cd_range *cd, uint64_t pos, cd_rec *r)
{
    uint32_t sig;
    uint16_t xlen, clen;
    uint64_t end = cd->off + cd->size;
    if (end - pos < 46 || !mfs_rd_u32(f, pos, &sig) || sig != SIG_CENTRAL ||
        !mfs_rd_u16(f, pos + 4, &r->made_by) || !mfs_rd_u16(f, pos + 28, &r->name_len) ||
        !mfs_rd_u16(f, pos + 30, &xlen) || !mfs_rd_u16(f, pos + 32, &clen) ||
        !mfs_rd_u32(f, pos + 38, &r->attrs))
        return false;
    r->len = 46 + (uint64_t)r->name_len + xlen + clen;
    if (r->len > end - pos)
        return false;
    r->name = (const char *)f.p + pos + 46;
    return true;
}

int carton_probe_zip(mfs_span f)
{
    cd_range cd;
    if (find_cd(f, &cd)) {
        cd_rec r;
        for (uint64_t pos = cd.off; read_rec(f, &cd, pos, &r); pos += r.len)
            if (r.name_len == TOML_NAME_LEN && memcmp(r.name, toml_name, TOML_NAME_LEN) == 0)
                return 120;  /* end record, directory signature, an 11-byte name */
    }
    /* No usable directory (truncated?): Carton's packer writes carton.toml
     * first, so a carton still starts with its local header. */
    uint32_t sig;
    uint16_t nlen;
    if (mfs_rd_u32(f, 0, &sig) && sig == SIG_LOCAL && mfs_rd_u16(f, 26, &nlen) &&
        nlen == TOML_NAME_LEN && mfs_span_has(f, 30, nlen) &&
        memcmp(f.p + 30, toml_name, TOML_NAME_LEN) == 0)
        return 100;
    return 0;
}

bool *carton_zip_symlinks(const mfs_zip *z)
{
    bool *out = mfs_xcalloc(z->count ? z->count : 1, sizeof *out);
    mfs_span f = z->file;
    cd_range cd;
    if (!find_cd(f, &cd))
        return out;
    cd_rec r;
    size_t i = 0;
    for (uint64_t pos = cd.off; i < z->count && read_rec(f, &cd, pos, &r); pos += r.len) {
        /* mfs_zip drops entries whose name holds a NUL; keep in step. */
        if (memchr(r.name, 0, r.name_len) != NULL)
            continue;
        if (r.name_len != strlen(z->entries[i].name) ||
            memcmp(r.name, z->entries[i].name, r.name_len) != 0) {
            memset(out, 0, z->count * sizeof *out);  /* out of step: trust none */
            return out;
        }
        /* Made by Unix (3) with S_IFLNK in the high half of the attributes. */
        out[i++] = (r.made_by >> 8) == 3 && ((r.attrs >> 16) & 0170000) == 0120000;
    }
    return out;
}
