/* Where a carton file's bytes come from, and the produce / verify
 * operations fs/content.c calls on first open (see carton.h).
 *
 *  - stored zip member: served as its range of the model's source;
 *    with a MANIFEST line, checked (sha256) before it is first served;
 *  - deflate / zstd member: decoded on open from its compressed range of
 *    the source (got for the decode, then released) into a buffer of
 *    exactly its declared size (formats/codecs/zip_decode.c stops at that
 *    size and checks the CRC), then checked. A decoded member must fit in memory: one larger
 *    than half the machine's RAM (at least 1 GiB) fails to open, rather
 *    than have the daemon killed;
 *  - a file on disk (unpacked folder, links_dir/<sha256>): mapped on open
 *    and unmapped when the cache lets go of it, so memory stays bounded;
 *  - a LINKS file with no local copy: fetched (carton_links.c);
 *  - nothing: the open fails with the reason (a MANIFEST line whose file is
 *    neither in the carton nor in LINKS, a dangling symlink, ...). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "carton.h"
#include "guard.h"
#include "xalloc.h"

static size_t slen(const char *s) { return s ? strlen(s) + 1 : 0; }

static const char *put(char **at, const char *s)
{
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1;
    memcpy(*at, s, n);
    const char *r = *at;
    *at += n;
    return r;
}

carton_src *carton_src_new(mfs_model *t, carton_kind kind, const char *label, const char *path,
                           const char *urls, const char *reason)
{
    size_t extra = slen(label) + slen(path) + slen(urls) + slen(reason);
    carton_src *s = mfs_xcalloc(1, sizeof *s + extra);
    char *at = (char *)(s + 1);
    s->kind = kind;
    s->label = put(&at, label);
    s->path = put(&at, path);
    s->urls = put(&at, urls);
    s->reason = put(&at, reason);
    return mfs_model_own(t, s);
}

carton_src *carton_src_alias(mfs_model *t, const carton_src *s, const char *label, const char *sha)
{
    carton_src *a = carton_src_new(t, s->kind, label, s->path, s->urls, s->reason);
    a->size = s->size;
    a->zip = s->zip;
    a->en = s->en;
    a->linked = s->linked;
    a->root = s->root;
    a->fetch = s->fetch;
    a->has_sha = sha != NULL;
    if (sha != NULL)
        snprintf(a->sha, sizeof a->sha, "%s", sha);
    return a;
}

bool carton_src_inplace(const carton_src *s)
{
    return s->kind == CARTON_ZIP && mfs_zip_inplace(s->en);
}

const char *carton_src_storage(const carton_src *s)
{
    switch (s->kind) {
    case CARTON_ZIP:  return mfs_zip_method_name(s->en->method);
    case CARTON_FILE: return s->linked ? "links_dir" : "file";
    case CARTON_LINK: return "link";
    case CARTON_FAIL: break;
    }
    return "missing";
}

/* ---- the operations ---------------------------------------------------- */

static void release_free(mfs_bytes *b)
{
    free((void *)(uintptr_t)b->data);
}

static uint64_t decode_cap(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t half = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 2 : 0;
    return half > (1ull << 30) ? half : (1ull << 30);
}

static int produce_zip(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const carton_src *s = ctx;
    uint8_t *buf;
    if (mfs_zip_decode_sha(s->zip, s->en, decode_cap(), job, &buf, NULL, e) != 0)
        return -1;
    out->data = buf;
    out->len = s->en->size;
    out->charge = s->en->size;
    out->release = release_free;
    return 0;
}

/* A decoded member with a MANIFEST line: its sha256 is made while it is
 * decoded (beside the CRC-32) and compared here, so there is no verify
 * operation to hash the buffer again. Nothing is served before this
 * returns 0. */
static int produce_zip_checked(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const carton_src *s = ctx;
    uint8_t *buf, dig[32];
    if (mfs_zip_decode_sha(s->zip, s->en, decode_cap(), job, &buf, dig, e) != 0)
        return -1;
    char got[MFS_SHA256_HEX];
    for (unsigned i = 0; i < 32; i++)
        snprintf(got + 2 * i, 3, "%02x", dig[i]);
    if (strcmp(got, s->sha) != 0) {
        free(buf);
        return mfs_fail(e, MFS_E_VERIFY, MFS_NO_OFFSET,
                        "sha256 %s of %s does not match MANIFEST (%s)", got, s->label, s->sha);
    }
    out->data = buf;
    out->len = s->en->size;
    out->charge = s->en->size;
    out->release = release_free;
    return 0;
}

static int produce_file(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const carton_src *s = ctx;
    (void)job;
    /* Below the held folder, no symlink followed (see carton_open_at). */
    int fd = s->root ? mfs_folder_open_at(s->root, s->path, false)
                     : open(s->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        bool swapped = errno == ELOOP || errno == ENOTDIR;
        return mfs_fail(e, swapped ? MFS_E_CHANGED : MFS_E_IO, MFS_NO_OFFSET, "cannot open %s: %s%s",
                        s->label, strerror(errno),
                        swapped ? " (a symlink or a file in the way: replaced since the mount?)" : "");
    }
    return mfs_map_fd(fd, s->label, s->size, out, e);
}

/* Checks what it serves itself (a kept copy is hashed, a download is
 * hashed as it arrives): no verify operation to hash it again. */
static int produce_link(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    return carton_link_produce(ctx, job, out, e);
}

static int verify_sha(void *ctx, const mfs_job *job, const uint8_t *data, uint64_t len, mfs_err *e)
{
    const carton_src *s = ctx;
    char got[MFS_SHA256_HEX];
    int r = mfs_sha256_hex_mapped(data, len, job, got);
    if (r == MFS_GUARD_FAULT)
        return mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET,
                        "%s changed (shrank) while its sha256 was checked", s->label);
    /* Otherwise -1: cancelled, or libcrypto had no memory for its state. */
    if (r != 0 && mfs_job_cancelled(job))
        return mfs_fail(e, MFS_E_CANCELLED, MFS_NO_OFFSET, "the sha256 check of %s was cancelled",
                        s->label);
    if (r != 0)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "the sha256 check of %s could not start "
                        "(out of memory)", s->label);
    if (strcmp(got, s->sha) == 0)
        return 0;
    return mfs_fail(e, MFS_E_VERIFY, MFS_NO_OFFSET, "sha256 %s of %s does not match MANIFEST (%s)",
                    got, s->label, s->sha);
}

/* The carton names a file it does not hold (or a symlink that leads
 * nowhere): the reason was found at mount. */
static int verify_fail(void *ctx, const mfs_job *job, const uint8_t *data, uint64_t len, mfs_err *e)
{
    const carton_src *s = ctx;
    (void)job;
    (void)data;
    (void)len;
    return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s", s->reason ? s->reason : "unavailable");
}

static const mfs_produce_ops ops_verify = { .verify = verify_sha };
static const mfs_produce_ops ops_zip = { .produce = produce_zip, .in_memory = true };
static const mfs_produce_ops ops_zip_verify = { .produce = produce_zip_checked, .in_memory = true };
static const mfs_produce_ops ops_file = { .produce = produce_file,
                                         .unchanged = mfs_map_unchanged };
static const mfs_produce_ops ops_file_verify = { .produce = produce_file, .verify = verify_sha,
                                                .unchanged = mfs_map_unchanged };
/* A links_dir copy is hashed as it is produced (carton_links.c), then
 * watched for edits like a file of a folder. */
static const mfs_produce_ops ops_link = { .produce = produce_link,
                                         .unchanged = mfs_map_unchanged };
static const mfs_produce_ops ops_fail = { .verify = verify_fail };

void carton_src_attach(mfs_model *t, uint32_t node, const carton_src *s)
{
    const mfs_produce_ops *ops = NULL;
    switch (s->kind) {
    case CARTON_ZIP:
        if (carton_src_inplace(s))
            ops = s->has_sha ? &ops_verify : NULL;
        else
            ops = s->has_sha ? &ops_zip_verify : &ops_zip;
        break;
    case CARTON_FILE:
        ops = s->has_sha ? &ops_file_verify : &ops_file;
        break;
    case CARTON_LINK:
        ops = &ops_link;
        break;
    case CARTON_FAIL:
        ops = &ops_fail;
        break;
    }
    if (ops != NULL)
        mfs_model_set_producer(t, node, ops, (void *)(uintptr_t)s);
}
