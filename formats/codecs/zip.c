/* The zip directory: end record (and its ZIP64 twin), central directory,
 * local headers, each read as a range of its own. Layout facts (APPNOTE): local header 30 bytes + name +
 * extra; central directory entry 46 bytes + name + extra + comment; end
 * record 22 bytes + comment; ZIP64 locator 20 bytes just before the end
 * record; ZIP64 end record 56 bytes; ZIP64 extra field id 0x0001.
 *
 * libzip is not used here: its public API does not expose a member's local
 * header offset, which zero-copy serving needs, and its zip_t is not safe
 * for concurrent reads. The unit test uses it as an independent reader. */
#include "zip_read.h"

#include <stdlib.h>
#include <string.h>

#include "path.h"
#include "xalloc.h"

#define SIG_LOCAL   0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END     0x06054b50u
#define SIG_END64   0x06064b50u
#define SIG_LOC64   0x07064b50u

enum { LOCAL_LEN = 30, CENTRAL_LEN = 46, END_LEN = 22, END64_LEN = 56, LOC64_LEN = 20 };

typedef unsigned long long ull;   /* for printf */

/* Where the central directory is, as the end records describe it
 * (absolute offsets). */
typedef struct cdir {
    uint64_t offset, size;
    uint64_t count;         /* entries the end record announces */
    bool zip64;
    uint64_t end_rec;       /* the record the directory must end before */
} cdir;

static uint64_t at(mfs_span f, uint64_t pos) { return f.base + pos; }

/* [off, off + len) through the reader, checked against the archive. */
static int get(const mfs_zip_reader *rd, uint64_t off, uint64_t len, mfs_span *out, mfs_err *e)
{
    if (off > rd->size || len > rd->size - off)
        return MFS_CORRUPT(e, off, "%llu bytes at byte %llu pass the end of the file (%llu bytes)",
                           (ull)len, (ull)off, (ull)rd->size);
    if (len == 0) {  /* nothing to ask for (nor to release) */
        *out = (mfs_span){ NULL, 0, off };
        return 0;
    }
    return rd->get(rd->ctx, off, len, out, e);
}

static void put(const mfs_zip_reader *rd, mfs_span got)
{
    if (got.len > 0 && rd->release != NULL)
        rd->release(rd->ctx, got);
}

/* The end record in `f`, the archive's last bytes: the last signature
 * whose comment ends exactly at the end of the file, else the last one
 * whose comment at least fits (trailing bytes after the archive). It lies
 * within 22 + 65535 bytes of the end. *pos is relative to f. */
static int find_end(mfs_span f, uint64_t *pos, mfs_err *e)
{
    if (f.len < END_LEN)
        return MFS_CORRUPT(e, f.base, "too short for a zip archive (%llu bytes)", (ull)f.len);
    uint64_t last = f.len - END_LEN;
    uint64_t first = last > 0xFFFF ? last - 0xFFFF : 0;
    bool fits = false;
    uint64_t fit = 0;
    for (uint64_t p = last + 1; p-- > first;) {
        /* Jump to the next 'P' back: the scan of a 64 KiB tail without a
         * record (any file a probe tries) is then memrchr's, not a
         * bounds-checked read per byte. */
        const uint8_t *hit = memrchr(f.p + first, 'P', (size_t)(p - first + 1));
        if (hit == NULL)
            break;
        p = (uint64_t)(hit - f.p);
        uint32_t sig;
        uint16_t clen;
        if (!mfs_rd_u32(f, p, &sig) || sig != SIG_END || !mfs_rd_u16(f, p + 20, &clen))
            continue;
        if (clen == f.len - p - END_LEN) {
            *pos = p;
            return 0;
        }
        if (!fits && clen < f.len - p - END_LEN) {
            fits = true;
            fit = p;
        }
    }
    if (!fits)
        return MFS_CORRUPT(e, at(f, first), "no zip end of central directory record in the last %llu bytes",
                           (ull)(f.len - first));
    *pos = fit;
    return 0;
}

/* The ZIP64 end record located by the locator at `lp` (relative to the
 * tail t); read from t when it is there, else as a range of its own. */
static int read_end64(const mfs_zip_reader *rd, mfs_span t, uint64_t lp, cdir *cd, mfs_err *e)
{
    uint32_t ldisk = 0, ndisks = 0, sig = 0, disk = 0, cd_disk = 0;
    uint64_t r = 0, rsize = 0, on_disk = 0, total = 0, size = 0, off = 0;
    (void)(mfs_rd_u32(t, lp + 4, &ldisk) && mfs_rd_u64(t, lp + 8, &r) &&
           mfs_rd_u32(t, lp + 16, &ndisks));  /* the caller checked the 20 bytes */
    uint64_t alp = at(t, lp);
    if (ldisk != 0 || ndisks > 1)
        return MFS_CORRUPT(e, alp, "multi-disk zip (ZIP64 locator: disk %u of %u) is not supported",
                           ldisk, ndisks);
    if (r > alp || alp - r < END64_LEN)
        return MFS_CORRUPT(e, alp, "ZIP64 end record offset %llu is not before its locator",
                           (ull)r);
    mfs_span rec;
    bool own = r < t.base;
    if (own) {
        if (get(rd, r, END64_LEN, &rec, e) != 0)
            return -1;
    } else {
        rec = mfs_span_sub(t, r - t.base, END64_LEN);  /* r + 56 <= alp: inside t */
    }
    (void)(mfs_rd_u32(rec, 0, &sig) && mfs_rd_u64(rec, 4, &rsize) && mfs_rd_u32(rec, 16, &disk) &&
           mfs_rd_u32(rec, 20, &cd_disk) && mfs_rd_u64(rec, 24, &on_disk) &&
           mfs_rd_u64(rec, 32, &total) && mfs_rd_u64(rec, 40, &size) &&
           mfs_rd_u64(rec, 48, &off));  /* the 56 bytes are there */
    if (own)
        put(rd, rec);
    if (sig != SIG_END64)
        return MFS_CORRUPT(e, r, "no ZIP64 end of central directory record (signature 0x%08x)",
                           sig);
    /* rsize counts the bytes after its own field: 44 fixed + extensible data. */
    if (rsize < END64_LEN - 12 || rsize > alp - r - 12)
        return MFS_CORRUPT(e, r, "ZIP64 end record size %llu is invalid", (ull)rsize);
    if (disk != 0 || cd_disk != 0 || on_disk != total)
        return MFS_CORRUPT(e, r, "multi-disk zip (ZIP64 end record) is not supported");
    cd->offset = off;
    cd->size = size;
    cd->count = total;
    cd->zip64 = true;
    cd->end_rec = r;
    return 0;
}

/* The end record at `p` in the tail t (and its ZIP64 twin). */
static int parse_end(const mfs_zip_reader *rd, mfs_span t, uint64_t p, cdir *cd, mfs_err *e)
{
    uint16_t disk = 0, cd_disk = 0, on_disk = 0, total = 0;
    uint32_t size = 0, off = 0, lsig = 0;
    (void)(mfs_rd_u16(t, p + 4, &disk) && mfs_rd_u16(t, p + 6, &cd_disk) &&
           mfs_rd_u16(t, p + 8, &on_disk) && mfs_rd_u16(t, p + 10, &total) &&
           mfs_rd_u32(t, p + 12, &size) && mfs_rd_u32(t, p + 16, &off));  /* found in t */
    /* A ZIP64 locator right before the end record makes the ZIP64 record
     * authoritative (the classic fields then hold 0xFFFF.. placeholders).
     * The tail always holds the 20 bytes before the record, or starts the
     * file. */
    if (p >= LOC64_LEN && mfs_rd_u32(t, p - LOC64_LEN, &lsig) && lsig == SIG_LOC64) {
        if (read_end64(rd, t, p - LOC64_LEN, cd, e) != 0)
            return -1;
    } else {
        if (disk != 0 || cd_disk != 0 || on_disk != total)
            return MFS_CORRUPT(e, at(t, p), "multi-disk zip (disk %u, directory on disk %u) is not supported",
                               disk, cd_disk);
        cd->offset = off;
        cd->size = size;
        cd->count = total;
        cd->zip64 = false;
        cd->end_rec = at(t, p);
    }
    if (cd->offset > cd->end_rec || cd->size > cd->end_rec - cd->offset)
        return MFS_CORRUPT(e, cd->end_rec,
                           "central directory (%llu bytes at byte %llu) runs past its end record",
                           (ull)cd->size, (ull)cd->offset);
    return 0;
}

/* The end records, from the archive's tail. Most archives have no
 * comment: their end record is the last 22 bytes, so those (and the
 * ZIP64 locator's 20 before them) are asked for first, and the whole
 * window a comment allows only when the record is not there. */
static int read_end(const mfs_zip_reader *rd, cdir *cd, mfs_err *e)
{
    uint64_t want = END_LEN + LOC64_LEN;
    mfs_span t;
    if (get(rd, rd->size - (want < rd->size ? want : rd->size), want < rd->size ? want : rd->size,
            &t, e) != 0)
        return -1;
    uint64_t p = 0;
    uint32_t sig = 0;
    uint16_t clen = 1;
    /* The scan of find_end would stop at this very record first. */
    if (t.len >= END_LEN && mfs_rd_u32(t, t.len - END_LEN, &sig) && sig == SIG_END &&
        mfs_rd_u16(t, t.len - END_LEN + 20, &clen) && clen == 0) {
        p = t.len - END_LEN;
    } else {
        put(rd, t);
        want = END_LEN + 0xFFFF + LOC64_LEN;
        if (get(rd, rd->size - (want < rd->size ? want : rd->size),
                want < rd->size ? want : rd->size, &t, e) != 0)
            return -1;
        if (find_end(t, &p, e) != 0) {
            put(rd, t);
            return -1;
        }
    }
    int r = parse_end(rd, t, p, cd, e);
    put(rd, t);
    return r;
}

/* The central directory entry at `pos` of the directory f: checks its
 * signature and that it fits before `end`; *rec = its whole length. */
static int central_entry(mfs_span f, uint64_t pos, uint64_t end, uint64_t *rec, mfs_err *e)
{
    uint32_t sig = 0;
    uint16_t nlen = 0, xlen = 0, clen = 0;
    if (end - pos < CENTRAL_LEN)
        return MFS_CORRUPT(e, at(f, pos), "truncated central directory entry (%llu bytes left)",
                           (ull)(end - pos));
    (void)(mfs_rd_u32(f, pos, &sig) && mfs_rd_u16(f, pos + 28, &nlen) &&
           mfs_rd_u16(f, pos + 30, &xlen) && mfs_rd_u16(f, pos + 32, &clen));  /* end <= len */
    if (sig != SIG_CENTRAL)
        return MFS_CORRUPT(e, at(f, pos), "bad central directory entry signature 0x%08x", sig);
    *rec = (uint64_t)CENTRAL_LEN + nlen + xlen + clen;
    if (*rec > end - pos)
        return MFS_CORRUPT(e, at(f, pos), "central directory entry (%llu bytes) runs past the directory's end",
                           (ull)*rec);
    return 0;
}

/* First pass over the directory f (all of it): every entry well formed,
 * their number agrees with the end record, and how much room the kept
 * names need. */
static int scan_dir(mfs_span f, const cdir *cd, bool keep_nul, size_t *kept, uint64_t *name_bytes,
                    mfs_err *e)
{
    uint64_t pos = 0, end = f.len, records = 0, rec;
    *kept = 0;
    *name_bytes = 0;
    while (pos < end) {
        if (central_entry(f, pos, end, &rec, e) != 0)
            return -1;
        uint16_t nlen = 0;
        (void)mfs_rd_u16(f, pos + 28, &nlen);
        if (keep_nul || memchr(f.p + pos + CENTRAL_LEN, 0, nlen) == NULL) {
            (*kept)++;
            *name_bytes += (uint64_t)nlen + 1;
        }
        records++;
        pos += rec;
    }
    /* Some writers store the count modulo 65536 when they skip ZIP64. */
    if (records != cd->count && (cd->zip64 || (records & 0xFFFF) != cd->count))
        return MFS_CORRUPT(e, cd->end_rec,
                           "end record announces %llu entries, the central directory holds %llu",
                           (ull)cd->count, (ull)records);
    return 0;
}

/* Replaces the 0xFFFF.. placeholders of an entry by the values of its ZIP64
 * extra field (id 1), which holds, in this order, only the saturated ones. */
static int apply_zip64(mfs_span f, uint64_t pos, uint64_t xpos, uint16_t xlen, bool need_size,
                       bool need_csize, bool need_lho, uint64_t *size, uint64_t *csize,
                       uint64_t *lho, mfs_err *e)
{
    uint64_t x = 0;
    while (xlen - x >= 4) {
        uint16_t id = 0, dlen = 0;
        (void)(mfs_rd_u16(f, xpos + x, &id) && mfs_rd_u16(f, xpos + x + 2, &dlen));
        if (dlen > xlen - x - 4)
            break;  /* a malformed tail (padding): nothing more to find */
        if (id == 0x0001) {
            uint64_t q = xpos + x + 4, qend = q + dlen;
            uint64_t *dst[3] = { need_size ? size : NULL, need_csize ? csize : NULL,
                                 need_lho ? lho : NULL };
            for (int i = 0; i < 3; i++) {
                if (dst[i] == NULL)
                    continue;
                if (qend - q < 8)
                    return MFS_CORRUPT(e, at(f, xpos + x), "ZIP64 extra field too short (%u bytes)", dlen);
                (void)mfs_rd_u64(f, q, dst[i]);
                q += 8;
            }
            return 0;
        }
        x += 4 + (uint64_t)dlen;
    }
    return MFS_CORRUPT(e, at(f, pos), "central directory entry has 0xFFFFFFFF sizes or offset "
                       "but no ZIP64 extra field");
}

/* A member's name for a message: at most 80 bytes, control characters,
 * quotes and backslashes as '?' (names are untrusted). */
static void printable(const char *name, char out[81])
{
    size_t i = 0;
    for (; name[i] != '\0' && i < 80; i++) {
        unsigned char c = (unsigned char)name[i];
        out[i] = c < 0x20 || c == 0x7f || c == '"' || c == '\\' ? '?' : (char)c;
    }
    out[i] = '\0';
}

static int overlap(mfs_err *e, const mfs_zip_entry *a, uint64_t a_end, const mfs_zip_entry *b)
{
    char an[81], bn[81];
    printable(a->name, an);
    printable(b->name, bn);
    return MFS_CORRUPT(e, b->header_offset, "members \"%s\" (bytes %llu to %llu) and \"%s\" "
                       "(from byte %llu) overlap: refused (a zip bomb shares one stream "
                       "between many members)", an, (ull)a->header_offset, (ull)a_end, bn,
                       (ull)b->header_offset);
}

/* Follows en's local header (one range of 30 bytes) to the member's data
 * and checks that header and data lie before the central directory and,
 * when `limit` is asked for, before the next member. */
static int local_data(const mfs_zip *z, const mfs_zip_entry *en, bool limit, uint64_t *data,
                      mfs_err *e)
{
    uint64_t lho = en->header_offset, cdo = z->cd_offset, csize = en->comp_size;
    mfs_span h;
    if (get(&z->rd, lho, LOCAL_LEN, &h, e) != 0)  /* lho + 30 <= cdo: checked at open */
        return -1;
    uint32_t sig = 0;
    uint16_t nlen = 0, xlen = 0;
    (void)(mfs_rd_u32(h, 0, &sig) && mfs_rd_u16(h, 26, &nlen) && mfs_rd_u16(h, 28, &xlen));
    put(&z->rd, h);
    if (sig != SIG_LOCAL)
        return MFS_CORRUPT(e, lho, "bad local header signature 0x%08x", sig);
    uint64_t d = lho + LOCAL_LEN + nlen + xlen;
    if (d > cdo)
        return MFS_CORRUPT(e, lho, "local header name and extra field (%u + %u bytes) run "
                           "past the central directory at byte %llu", nlen, xlen, (ull)cdo);
    if (csize > cdo - d)
        return MFS_CORRUPT(e, d, "member data (%llu bytes) runs past the central directory "
                           "at byte %llu", (ull)csize, (ull)cdo);
    if (limit && en->next != SIZE_MAX && d + csize > en->limit)
        return overlap(e, en, d + csize, &z->entries[en->next]);
    *data = d;
    return 0;
}

static mfs_zip_method method_of(uint16_t m)
{
    switch (m) {
    case 0:  return MFS_ZIP_STORED;
    case 8:  return MFS_ZIP_DEFLATE;
    case 93: return MFS_ZIP_ZSTD;
    default: return MFS_ZIP_OTHER;
    }
}

/* Second pass over the directory f that scan_dir accepted: fills the
 * entries (no local header is read here). */
static int fill_entries(mfs_zip *z, mfs_span f, bool keep_nul, mfs_err *e)
{
    uint64_t pos = 0, end = f.len, rec;
    char *names = z->names;
    while (pos < end) {
        /* Cannot fail (scan_dir passed), but checked so that rec is never
         * used unset, whatever the compiler can prove. */
        if (central_entry(f, pos, end, &rec, e) != 0)
            return -1;
        uint16_t made_by = 0, flags = 0, method = 0, nlen = 0, xlen = 0;
        uint32_t crc = 0, csize32 = 0, size32 = 0, lho32 = 0, attr = 0;
        (void)(mfs_rd_u16(f, pos + 4, &made_by) && mfs_rd_u16(f, pos + 8, &flags) &&
               mfs_rd_u16(f, pos + 10, &method) && mfs_rd_u32(f, pos + 38, &attr) &&
               mfs_rd_u32(f, pos + 16, &crc) && mfs_rd_u32(f, pos + 20, &csize32) &&
               mfs_rd_u32(f, pos + 24, &size32) && mfs_rd_u16(f, pos + 28, &nlen) &&
               mfs_rd_u16(f, pos + 30, &xlen) && mfs_rd_u32(f, pos + 42, &lho32));
        const char *name = (const char *)f.p + pos + CENTRAL_LEN;
        const char *nul = memchr(name, 0, nlen);
        if (nul != NULL && !keep_nul) {
            z->skipped++;
            pos += rec;
            continue;
        }
        uint64_t size = size32, csize = csize32, lho = lho32;
        if (size32 == UINT32_MAX || csize32 == UINT32_MAX || lho32 == UINT32_MAX) {
            if (apply_zip64(f, pos, pos + CENTRAL_LEN + nlen, xlen, size32 == UINT32_MAX,
                            csize32 == UINT32_MAX, lho32 == UINT32_MAX, &size, &csize, &lho, e) != 0)
                return -1;
        }
        /* The local header (30 bytes at least) must lie in the members'
         * area; what follows it is checked when it is read. */
        if (lho > z->cd_offset || z->cd_offset - lho < LOCAL_LEN)
            return MFS_CORRUPT(e, at(f, pos), "local header offset %llu is outside the members' area "
                               "(before byte %llu)", (ull)lho, (ull)z->cd_offset);
        mfs_zip_entry *en = &z->entries[z->count];
        /* A kept name with a NUL is cut there, as Python's zipfile reads it. */
        en->nul_cut = nul != NULL;
        if (nul != NULL)
            nlen = (uint16_t)(nul - name);
        memcpy(names, name, nlen);
        names[nlen] = '\0';
        en->name = names;
        names += nlen + 1;
        en->is_dir = nlen > 0 && name[nlen - 1] == '/';
        en->unsafe = en->is_dir || en->nul_cut || !mfs_path_ok(name, nlen);
        en->encrypted = (flags & 1) != 0;
        en->raw_method = method;
        en->method = method_of(method);
        en->comp_size = csize;
        en->size = size;
        en->header_offset = lho;
        en->crc32 = crc;
        en->made_by = made_by;
        en->external_attr = attr;
        z->count++;
        pos += rec;
    }
    return 0;
}

static int cmp_start(const void *a, const void *b)
{
    const mfs_zip_entry *x = *(const mfs_zip_entry *const *)a, *y = *(const mfs_zip_entry *const *)b;
    if (x->header_offset != y->header_offset)
        return x->header_offset < y->header_offset ? -1 : 1;
    return x < y ? -1 : x > y;  /* directory order: the same message every time */
}

/* The entries by local header offset (directory order among equals). */
static const mfs_zip_entry **by_start(const mfs_zip *z)
{
    const mfs_zip_entry **by = mfs_xreallocarray(NULL, z->count ? z->count : 1, sizeof *by);
    for (size_t i = 0; i < z->count; i++)
        by[i] = &z->entries[i];
    if (z->count > 1)
        qsort(by, z->count, sizeof *by, cmp_start);
    return by;
}

/* Each member's limit: where the next one (by start) begins. */
static void set_limits(mfs_zip *z)
{
    const mfs_zip_entry **by = by_start(z);
    for (size_t i = 0; i < z->count; i++) {
        mfs_zip_entry *en = &z->entries[by[i] - z->entries];
        en->limit = i + 1 < z->count ? by[i + 1]->header_offset : z->cd_offset;
        en->next = i + 1 < z->count ? (size_t)(by[i + 1] - z->entries) : SIZE_MAX;
    }
    free(by);
}

/* Members may not share bytes: a small archive whose many entries point at
 * one compressed stream (a zip bomb) would otherwise multiply decode work
 * per byte of input. Each member's range is its local header through the
 * end of its compressed data; sorted by start, each must end before the
 * next begins. (For every entry located.) */
static int check_overlaps(const mfs_zip *z, mfs_err *e)
{
    if (z->count < 2)
        return 0;
    const mfs_zip_entry **by = by_start(z);
    int r = 0;
    for (size_t i = 1; i < z->count; i++) {
        const mfs_zip_entry *a = by[i - 1], *b = by[i];
        uint64_t a_end = a->data_offset + a->comp_size;  /* inside the file: local_data checked */
        if (b->header_offset < a_end) {
            r = overlap(e, a, a_end, b);
            break;
        }
    }
    free(by);
    return r;
}

static int span_get(void *ctx, uint64_t off, uint64_t len, mfs_span *out, mfs_err *e)
{
    const mfs_span *f = ctx;
    if (off < f->base || !mfs_span_has(*f, off - f->base, len))
        return mfs_fail(e, MFS_E_IO, (int64_t)off, "bytes %llu to %llu are not in memory", (ull)off,
                        (ull)(off + len));
    *out = mfs_span_sub(*f, off - f->base, len);
    return 0;
}

void mfs_zip_reader_span(mfs_zip_reader *rd, const mfs_span *file)
{
    *rd = (mfs_zip_reader){ (void *)(uintptr_t)file, file->base + file->len, span_get, NULL };
}

static int open_zip(mfs_zip *z, const mfs_zip_reader *rd, bool keep_nul, mfs_err *e)
{
    memset(z, 0, sizeof *z);
    z->rd = *rd;
    cdir cd = { 0 };
    size_t kept;
    uint64_t name_bytes;
    mfs_span dir;
    if (read_end(rd, &cd, e) != 0 || get(rd, cd.offset, cd.size, &dir, e) != 0)
        return -1;
    z->cd_offset = cd.offset;
    if (scan_dir(dir, &cd, keep_nul, &kept, &name_bytes, e) != 0) {
        put(rd, dir);
        memset(z, 0, sizeof *z);
        return -1;
    }
    /* Both are bounded by the directory's size, hence by the file's. The
     * names are copied: the directory is let go of below. */
    z->entries = mfs_xcalloc(kept ? kept : 1, sizeof *z->entries);
    z->names = mfs_xmalloc(name_bytes ? (size_t)name_bytes : 1);
    int r = fill_entries(z, dir, keep_nul, e);
    put(rd, dir);
    if (r != 0) {
        mfs_zip_close(z);
        return -1;
    }
    set_limits(z);
    return 0;
}

int mfs_zip_open(mfs_zip *z, const mfs_zip_reader *rd, mfs_err *e)
{
    return open_zip(z, rd, false, e);
}

int mfs_zip_open_keep_nul(mfs_zip *z, const mfs_zip_reader *rd, mfs_err *e)
{
    return open_zip(z, rd, true, e);
}

void mfs_zip_close(mfs_zip *z)
{
    free(z->entries);
    free(z->names);
    memset(z, 0, sizeof *z);
}

int mfs_zip_locate(const mfs_zip *z, mfs_zip_entry *en, mfs_err *e)
{
    if (en->located)
        return 0;
    if (local_data(z, en, true, &en->data_offset, e) != 0)
        return -1;
    en->located = true;
    return 0;
}

int mfs_zip_locate_all(mfs_zip *z, mfs_err *e)
{
    /* Overlaps are looked for once all are located, the first by start
     * reported, whichever member was read first. */
    for (size_t i = 0; i < z->count; i++) {
        mfs_zip_entry *en = &z->entries[i];
        if (!en->located && local_data(z, en, false, &en->data_offset, e) != 0)
            return -1;
        en->located = true;
    }
    return check_overlaps(z, e);
}

int mfs_zip_data_offset(const mfs_zip *z, const mfs_zip_entry *en, uint64_t *data, mfs_err *e)
{
    if (en->located) {
        *data = en->data_offset;
        return 0;
    }
    return local_data(z, en, true, data, e);
}

bool mfs_zip_has_name(const mfs_zip_reader *rd, const char *name, size_t len)
{
    mfs_err e = { 0 };  /* a probe has nothing to report */
    cdir cd = { 0 };
    mfs_span f;
    if (read_end(rd, &cd, &e) != 0 || get(rd, cd.offset, cd.size, &f, &e) != 0)
        return false;
    uint64_t pos = 0, end = f.len, rec;
    bool found = false;
    while (!found && pos < end && central_entry(f, pos, end, &rec, &e) == 0) {
        uint16_t nlen = 0;
        (void)mfs_rd_u16(f, pos + 28, &nlen);  /* central_entry checked the 46 bytes */
        found = nlen == len && memcmp(f.p + pos + CENTRAL_LEN, name, len) == 0;
        pos += rec;
    }
    put(rd, f);
    return found;
}

const char *mfs_zip_method_name(mfs_zip_method m)
{
    switch (m) {
    case MFS_ZIP_STORED:  return "stored";
    case MFS_ZIP_DEFLATE: return "deflate";
    case MFS_ZIP_ZSTD:    return "zstd";
    case MFS_ZIP_OTHER:   break;
    }
    return "other";
}
