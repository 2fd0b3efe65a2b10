/* Carton v1 (docs/specification/format.md of VivekPanyam/carton; Carton's
 * reader is source/carton/src/format/v1/): a zip, or an unpacked folder,
 * holding carton.toml, MANIFEST, model/, and optionally tensor_data/,
 * misc/ and LINKS.
 *
 * The tree:
 *   files/PATH      every file of the carton with its folders: zip members
 *                   (stored ones in place, zero copy; deflate and zstd ones
 *                   decoded on first open), files of an unpacked folder
 *                   (mapped on open), and MANIFEST lines whose file is not
 *                   in the archive (LINKS files, or missing ones that fail
 *                   on open). Each file MANIFEST lists is checked (sha256)
 *                   before it is first served; a mismatch is EIO.
 *                   xattrs: user.modelfs.sha256 (MANIFEST's),
 *                   user.modelfs.urls (LINKS', one per line) and
 *                   user.modelfs.size_unknown (carton_links.c).
 *   tensors/...     tensor_data/index.toml (carton_tensors.c).
 *   model.json      metadata: carton_toml (the parsed carton.toml, every
 *                   field as written), manifest_sha256 (the model hash),
 *                   has_manifest, has_tensor_data, has_links, manifest,
 *                   links, linked_only_files, missing_files,
 *                   unlisted_files, warnings; top-level `files` lists every
 *                   file under files/ (size, storage, offset, sha256, ...).
 *
 * Hostile archives: a member whose name has a ".." or "." component, is
 * absolute, has a backslash, an empty component or a component longer
 * than 255 bytes (or a NUL: the zip layer drops those) is never exposed;
 * it is skipped with a warning (metadata.warnings, and stderr at mount).
 * When several members have one name, the first in the central directory
 * is used and the others are skipped with a warning; a member that
 * collides with a folder (a file "a" and a file "a/b") likewise loses to
 * what came first. A declared size that no data of its method could
 * decode to refuses the carton; a member that decodes to more or less
 * than declared fails on open (EIO). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "carton.h"
#include "log.h"
#include "path.h"
#include "strbuf.h"
#include "xalloc.h"
#include "format.h"
#include "zip_source.h"
#include "toml_parse.h"

typedef unsigned long long ull;

/* The most any byte of deflate (258 bytes per 2-bit match) or zstd (an
 * RLE block of 128 KiB in 4 bytes) data can decode to. */
#define DEFLATE_RATIO 1032u
#define ZSTD_RATIO 32768u
#define SYMLINK_HOPS 16
#define WARNINGS_LOGGED 20

/* ---- collecting the members of a zip ----------------------------------- */

static void collect_zip(carton_load *cl, const mfs_zip *z)
{
    if (z->skipped)
        carton_warn(cl, "%zu members with a NUL in their name: skipped", z->skipped);
    for (size_t i = 0; i < z->count; i++) {
        const mfs_zip_entry *en = &z->entries[i];
        size_t n = strlen(en->name);
        if (en->is_dir && n > 1 && mfs_path_ok(en->name, n - 1)) {
            /* A folder entry: its folder appears even when empty. */
            char *d = mfs_xstrndup(en->name, n - 1);
            if (mfs_model_mkdirs(cl->m, cl->files_dir, d) == MFS_NONE) {
                char *q = carton_quote(en->name, n);
                carton_warn(cl, "folder member %s: a file is in the way: skipped", q);
                free(q);
            }
            free(d);
            continue;
        }
        if (en->unsafe) {
            char *q = carton_quote(en->name, n > 200 ? 200 : n);
            carton_warn(cl, "member %s (local header at byte %llu): unsafe name: skipped", q,
                        (ull)en->header_offset);
            free(q);
            continue;
        }
        carton_add_file(cl, en->name, en, true)->symlink = mfs_zip_is_symlink(en);
    }
}

/* A declared size that its data cannot decode to: refused (a stored
 * member holds exactly its size; deflate and zstd have a largest ratio). */
static int check_size(carton_load *cl, const mfs_zip_entry *en)
{
    uint64_t most = CARTON_MEMBER_MAX;
    if (en->method == MFS_ZIP_STORED && !en->encrypted)
        most = en->comp_size;
    else if (en->method == MFS_ZIP_DEFLATE && en->comp_size < CARTON_MEMBER_MAX / DEFLATE_RATIO)
        most = en->comp_size * DEFLATE_RATIO + 1024;
    else if (en->method == MFS_ZIP_ZSTD && en->comp_size < CARTON_MEMBER_MAX / ZSTD_RATIO)
        most = en->comp_size * ZSTD_RATIO + 1024;
    if (en->size <= most && (en->method != MFS_ZIP_STORED || en->encrypted || en->size == most))
        return 0;
    size_t n = strlen(en->name);
    char *q = carton_quote(en->name, n > 200 ? 200 : n);
    int r = en->method == MFS_ZIP_STORED
                ? MFS_CORRUPT(cl->e, en->header_offset, "stored member %s declares %llu bytes but holds %llu",
                              q, (ull)en->size, (ull)en->comp_size)
                : MFS_CORRUPT(cl->e, en->header_offset,
                              "member %s declares %llu bytes, more than its %llu bytes of %s data can hold",
                              q, (ull)en->size, (ull)en->comp_size, mfs_zip_method_name(en->method));
    free(q);
    return r;
}

/* ---- files by path ------------------------------------------------------ */

static carton_load *sort_cl;  /* qsort has no context argument in C11 */

static int cmp_files(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = strcmp(sort_cl->files[x].path, sort_cl->files[y].path);
    return c ? c : (x < y ? -1 : x > y);
}

/* Sorts the kept files by path; later files with a taken path are dropped. */
static void index_files(carton_load *cl)
{
    free(cl->sorted);
    cl->sorted = mfs_xcalloc(cl->nfiles ? cl->nfiles : 1, sizeof *cl->sorted);
    size_t n = 0;
    for (size_t i = 0; i < cl->nfiles; i++)
        if (!cl->files[i].dropped)
            cl->sorted[n++] = i;
    sort_cl = cl;
    if (n > 1)
        qsort(cl->sorted, n, sizeof *cl->sorted, cmp_files);
    sort_cl = NULL;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        carton_file *f = &cl->files[cl->sorted[i]];
        if (kept > 0 && strcmp(cl->files[cl->sorted[kept - 1]].path, f->path) == 0) {
            char *q = carton_quote(f->path, strlen(f->path));
            carton_warn(cl, "member %s appears again (local header at byte %llu): the first one is used",
                        q, f->en ? (ull)f->en->header_offset : 0ull);
            free(q);
            f->dropped = true;
            continue;
        }
        cl->sorted[kept++] = cl->sorted[i];
    }
    cl->nsorted = kept;
}

static void make_sources(carton_load *cl)
{
    mfs_model *t = cl->m;
    for (size_t i = 0; i < cl->nfiles; i++) {
        carton_file *f = &cl->files[i];
        if (f->dropped || !f->in_archive)
            continue;
        if (f->en != NULL) {
            f->src = carton_src_new(t, CARTON_ZIP, f->path, NULL, NULL, NULL);
            f->src->zip = cl->zip;
            f->src->en = f->en;
            f->src->size = f->en->size;
        } else {
            f->src = carton_src_new(t, CARTON_FILE, f->path, f->disk, NULL, NULL);
            f->src->size = f->size;
            f->src->root = cl->root;
        }
    }
}

/* ---- MANIFEST and LINKS ---------------------------------------------------- */

/* Where a member's bytes are, for messages; 0 for a file of a folder. */
static uint64_t at_of(const carton_file *f)
{
    return f->en ? f->en->header_offset : 0;
}

/* CARTON_BUDGET_MIN plus so much per byte of the carton (the zip, or the
 * files of a folder as they are on disk). */
static void budget_init(carton_load *cl)
{
    uint64_t size = cl->m->file_size;
    if (cl->zip == NULL) {
        size = 0;
        for (size_t i = 0; i < cl->nfiles; i++)
            if (cl->files[i].in_archive && size < CARTON_BUDGET_MAX)
                size += cl->files[i].size;
    }
    uint64_t extra = CARTON_BUDGET_MAX - CARTON_BUDGET_MIN;
    if (size < extra / CARTON_BUDGET_PER_BYTE)
        extra = size * CARTON_BUDGET_PER_BYTE;
    cl->budget_total = CARTON_BUDGET_MIN + extra;
    cl->budget.left = cl->budget_total;
}

/* -1 (and the error) once something ran over the budget. */
static int over_budget(carton_load *cl)
{
    if (!cl->budget.exceeded)
        return 0;
    carton_file *f = cl->over ? carton_find(cl, cl->over) : NULL;
    return MFS_CORRUPT(cl->e, f ? at_of(f) : 0,
                       "%s: reading it at mount needs more than the %llu MiB of memory a carton "
                       "of this size may use (%llu MiB, and %u bytes per byte of the carton): refused",
                       cl->over ? cl->over : "the carton", (ull)(cl->budget_total >> 20),
                       (ull)(CARTON_BUDGET_MIN >> 20), CARTON_BUDGET_PER_BYTE);
}

/* MANIFEST has a line per file: its cap grows with the carton's files, and
 * one that cannot be read refuses the carton (a MANIFEST skipped with a
 * warning would turn every check off). */
static int read_manifest(carton_load *cl)
{
    carton_file *f = carton_find(cl, "MANIFEST");
    if (f == NULL)
        return 0;
    uint64_t cap = CARTON_READ_MAX;
    size_t nfiles = 0;
    for (size_t i = 0; i < cl->nfiles; i++) {
        if (cl->files[i].in_archive && !cl->files[i].dropped) {
            cap += strlen(cl->files[i].path) + CARTON_MANIFEST_LINE;
            nfiles++;
        }
    }
    if (f->src != NULL && f->src->size > cap)
        return MFS_CORRUPT(cl->e, at_of(f),
                           "MANIFEST is %llu bytes, more than the %llu that lines for the carton's "
                           "%zu files can take: refused, since none of them could be checked",
                           (ull)f->src->size, (ull)cap, nfiles);
    carton_bytes b;
    mfs_err re = { 0 };
    if (carton_read(cl, f, cap, &b, &re) != 0)
        return MFS_CORRUPT(cl->e, at_of(f), "%.399s: refused, since nothing could be checked", re.msg);
    cl->has_manifest = true;
    mfs_sha256_hex(b.p, b.len, cl->model_hash);
    carton_parse_manifest(cl, b.p, b.len);
    carton_bytes_free(&b);
    return 0;
}

/* The parsed LINKS in *out (NULL when there is none or it is unreadable:
 * a warning); -1 when an entry refuses the carton. */
static int read_links(carton_load *cl, mfs_val **out)
{
    *out = NULL;
    carton_file *f = carton_find(cl, "LINKS");
    if (f == NULL)
        return 0;
    cl->has_links = true;
    carton_bytes b;
    char msg[200];
    mfs_err re = { 0 };
    if (carton_read(cl, f, CARTON_READ_MAX, &b, &re) != 0) {
        carton_warn(cl, "%.399s: no links", re.msg);
        return 0;
    }
    int line = 0, col = 0;
    mfs_val *doc = mfs_toml_parse_budget((const char *)b.p, b.len, &cl->budget, &line, &col, msg,
                                         sizeof msg);
    carton_bytes_free(&b);
    if (doc == NULL) {
        carton_spend(cl, 0, f->path);  /* names LINKS when the budget stopped it */
        carton_warn(cl, "LINKS: line %d, column %d: %s: no links", line, col, msg);
        return 0;
    }
    *out = doc;
    return carton_parse_links(cl, doc);
}

/* A MANIFEST line whose file is not in the archive: a LINKS file (kept in
 * links_dir, or to fetch) or a missing one. */
static void manifest_only(carton_load *cl, carton_file *f, const char *sha)
{
    mfs_model *t = cl->m;
    f->urls = carton_link_urls(cl, sha);
    if (f->urls == NULL) {
        f->src = carton_src_new(t, CARTON_FAIL, f->path, NULL, NULL,
                                "listed in MANIFEST, but neither in the carton nor in LINKS");
        return;
    }
    if (cl->links_dir != NULL) {
        struct stat st;
        /* Opened later under the held links_dir (carton_open_at). */
        if (fstatat(cl->links_root->fd, sha, &st, 0) == 0 && S_ISREG(st.st_mode)) {
            f->src = carton_src_new(t, CARTON_FILE, f->path, sha, NULL, NULL);
            f->src->size = (uint64_t)st.st_size;
            f->src->linked = true;
            f->src->root = cl->links_root;
            return;
        }
        carton_fetch_init();
    }
    f->src = carton_src_new(t, CARTON_LINK, f->path, cl->links_dir, f->urls, NULL);
    f->src->root = cl->links_root;
    f->src->fetch = cl->fetch;
}

static void apply_manifest(carton_load *cl)
{
    size_t before = cl->nfiles;
    for (size_t i = 0; i < cl->nmanifest; i++) {
        carton_manifest_line *l = &cl->manifest[i];
        carton_file *f = carton_find(cl, l->path);
        if (f == NULL)
            f = carton_add_file(cl, l->path, NULL, false);
        l->file = (size_t)(f - cl->files);
    }
    if (cl->nfiles != before)
        index_files(cl);
    for (size_t i = 0; i < cl->nmanifest; i++) {
        carton_manifest_line *l = &cl->manifest[i];
        carton_file *f = &cl->files[l->file];
        f->sha = l->sha;
        if (!f->in_archive)
            manifest_only(cl, f, l->sha);
        if (f->src != NULL) {
            f->src->has_sha = true;
            memcpy(f->src->sha, l->sha, MFS_SHA256_HEX);
        }
    }
}

/* ---- symlink members ------------------------------------------------------ */

/* dirname(from) joined with `target` and normalised, or NULL when it
 * leaves the carton or is not a path we serve. */
static char *resolve(const char *from, const uint8_t *target, size_t tlen)
{
    /* A NUL or backslash anywhere, even in a component ".." takes back. */
    if (tlen == 0 || target[0] == '/' || memchr(target, 0, tlen) || memchr(target, '\\', tlen))
        return NULL;
    mfs_strbuf sb = { 0 };
    const char *slash = strrchr(from, '/');
    if (slash != NULL)
        mfs_sb_add(&sb, from, (size_t)(slash - from));
    for (size_t i = 0; i < tlen;) {
        size_t j = i;
        while (j < tlen && target[j] != '/')
            j++;
        size_t n = j - i;
        const char *c = (const char *)target + i;
        if (n == 2 && c[0] == '.' && c[1] == '.') {
            char *last = sb.len ? memrchr(sb.buf, '/', sb.len) : NULL;
            if (sb.len == 0) {
                mfs_sb_free(&sb);
                return NULL;  /* above the carton's root */
            }
            sb.len = last ? (size_t)(last - sb.buf) : 0;
            sb.buf[sb.len] = '\0';
        } else if (n > 0 && !(n == 1 && c[0] == '.')) {
            if (sb.len)
                mfs_sb_addc(&sb, '/');
            mfs_sb_add(&sb, c, n);
        }
        i = j + 1;
    }
    if (!mfs_path_ok(sb.buf, sb.len)) {
        mfs_sb_free(&sb);
        return NULL;
    }
    return mfs_sb_take(&sb, NULL);
}

/* The file a symlink member leads to, following links up to SYMLINK_HOPS
 * deep, or NULL with the reason. */
static carton_file *follow(carton_load *cl, carton_file *f, const carton_src *const *raw,
                           mfs_err *e)
{
    carton_file *cur = f;
    for (int hop = 0; hop < SYMLINK_HOPS; hop++) {
        carton_bytes b;
        mfs_err re = { 0 };
        carton_file tmp = *cur;
        tmp.src = (carton_src *)(uintptr_t)raw[cur - cl->files];  /* its own bytes: the target */
        if (carton_read(cl, &tmp, CARTON_LINK_TEXT_MAX, &b, &re) != 0) {
            mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "a symlink whose target cannot be read: %.399s",
                     re.msg);
            return NULL;
        }
        char *to = resolve(cur->path, b.p, b.len);
        char *q = carton_quote((const char *)b.p, b.len > 200 ? 200 : b.len);
        carton_bytes_free(&b);
        carton_file *next = to ? carton_find(cl, to) : NULL;
        free(to);
        if (next == NULL || next->src == NULL) {
            mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "a symlink to %s, which is not a file of the carton", q);
            free(q);
            return NULL;
        }
        free(q);
        if (!next->symlink)
            return next;
        cur = next;
    }
    mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "a symlink chain longer than %d links", SYMLINK_HOPS);
    return NULL;
}

/* A symlink member serves its target's bytes (Carton's MANIFEST lists the
 * target's sha256 for it), checked against its own MANIFEST line. */
static void resolve_symlinks(carton_load *cl)
{
    const carton_src **raw = mfs_xcalloc(cl->nfiles ? cl->nfiles : 1, sizeof *raw);
    for (size_t i = 0; i < cl->nfiles; i++)
        raw[i] = cl->files[i].src;
    for (size_t i = 0; i < cl->nfiles; i++) {
        carton_file *f = &cl->files[i];
        if (!f->symlink || f->dropped || f->src == NULL)
            continue;
        mfs_err reason = { 0 };
        carton_file *to = follow(cl, f, raw, &reason);
        if (to == NULL) {
            carton_src *s = carton_src_new(cl->m, CARTON_FAIL, f->path, NULL, NULL, reason.msg);
            s->has_sha = f->src->has_sha;
            memcpy(s->sha, f->src->sha, MFS_SHA256_HEX);
            f->src = s;
        } else {
            f->src = carton_src_alias(cl->m, raw[to - cl->files], f->path, f->sha);
            f->target = to->path;
        }
    }
    free(raw);
}

/* ---- files/ ------------------------------------------------------------ */

static void place(carton_load *cl, carton_file *f)
{
    mfs_model *t = cl->m;
    const char *slash = strrchr(f->path, '/');
    uint32_t dir = cl->files_dir;
    if (slash != NULL) {
        char *d = mfs_xstrndup(f->path, (size_t)(slash - f->path));
        dir = mfs_model_mkdirs(t, cl->files_dir, d);
        free(d);
    }
    const carton_src *s = f->src;
    const char *name = slash ? slash + 1 : f->path;
    uint32_t node = dir == MFS_NONE ? MFS_NONE
                    : carton_src_inplace(s) ? mfs_model_add_stored(t, dir, name, s->en->data_offset,
                                                                   s->size)
                    : mfs_model_add(t, dir, name, MFS_NODE_FILE, NULL, s->size);
    if (node == MFS_NONE) {
        char *q = carton_quote(f->path, strlen(f->path));
        carton_warn(cl, "%s: a file or folder of that name is in the way: skipped", q);
        free(q);
        return;
    }
    f->node = node;
    carton_src_attach(t, node, s);
    if (f->sha)
        mfs_model_add_xattr(t, node, "user.modelfs.sha256", f->sha, 64);
    if (!f->in_archive && f->urls)
        mfs_model_add_xattr(t, node, "user.modelfs.urls", f->urls, strlen(f->urls));
    if (s->kind == CARTON_LINK) {
        mfs_model_add_xattr(t, node, "user.modelfs.size_unknown", "1", 1);
        mfs_model_set_size_unknown(t, node);
    }
}

static mfs_val *file_entry(const carton_file *f)
{
    const carton_src *s = f->src;
    mfs_val *e = mfs_obj();
    mfs_obj_set(e, "name", mfs_str(f->path));
    mfs_obj_set(e, "size", mfs_int((int64_t)s->size));
    mfs_obj_set(e, "storage", mfs_str(carton_src_storage(s)));
    if (f->en != NULL) {
        mfs_obj_set(e, "offset", mfs_int((int64_t)f->en->data_offset));
        mfs_obj_set(e, "compressed_size", mfs_int((int64_t)f->en->comp_size));
    }
    mfs_obj_set(e, "sha256", f->sha ? mfs_str(f->sha) : mfs_null());
    if (!f->in_archive && f->urls != NULL) {
        mfs_val *u = mfs_arr();
        for (const char *p = f->urls; p != NULL;) {
            const char *nl = strchr(p, '\n');
            mfs_arr_push(u, nl ? mfs_strn(p, (size_t)(nl - p)) : mfs_str(p));
            p = nl ? nl + 1 : NULL;
        }
        mfs_obj_set(e, "urls", u);
    }
    if (f->symlink)
        mfs_obj_set(e, "symlink_to", f->target ? mfs_str(f->target) : mfs_null());
    return e;
}

/* ---- the document ------------------------------------------------------ */

static void add_metadata(carton_load *cl, mfs_val *toml, mfs_val *links)
{
    mfs_val *md = cl->m->metadata, *manifest = mfs_obj(), *linked = mfs_arr(), *missing = mfs_arr();
    mfs_val *unlisted = mfs_arr(), *files = mfs_arr();
    bool tensor_data = false;
    for (size_t i = 0; i < cl->nmanifest; i++)
        mfs_obj_set(manifest, cl->manifest[i].path, mfs_str(cl->manifest[i].sha));
    for (size_t i = 0; i < cl->nfiles; i++) {
        const carton_file *f = &cl->files[i];
        if (f->dropped || f->node == MFS_NONE)
            continue;
        tensor_data = tensor_data || strncmp(f->path, "tensor_data/", 12) == 0;
        if (!f->in_archive)
            mfs_arr_push(f->urls ? linked : missing, mfs_str(f->path));
        else if (f->sha == NULL && strcmp(f->path, "MANIFEST") != 0 && strcmp(f->path, "LINKS") != 0)
            mfs_arr_push(unlisted, mfs_str(f->path));
        mfs_arr_push(files, file_entry(f));
    }
    mfs_obj_set(md, "carton_toml", toml);
    mfs_obj_set(md, "manifest_sha256", cl->has_manifest ? mfs_str(cl->model_hash) : mfs_null());
    mfs_obj_set(md, "has_manifest", mfs_bool(cl->has_manifest));
    mfs_obj_set(md, "has_tensor_data", mfs_bool(tensor_data));
    mfs_obj_set(md, "has_links", mfs_bool(cl->has_links));
    mfs_obj_set(md, "manifest", manifest);
    mfs_obj_set(md, "links", links ? links : mfs_null());
    mfs_obj_set(md, "linked_only_files", linked);
    mfs_obj_set(md, "missing_files", missing);
    mfs_obj_set(md, "unlisted_files", unlisted);
    mfs_obj_set(md, "warnings", mfs_val_clone(cl->warnings));
    mfs_obj_set(cl->m->extra, "files", files);
}

static int64_t spec_version(carton_load *cl, const mfs_val *toml)
{
    const mfs_val *v = mfs_obj_get(toml, "spec_version");
    if (v != NULL && v->type == MFS_V_INT) {
        if (v->u.i != 1)
            carton_warn(cl, "carton.toml: spec_version %lld (this reader knows 1)", (long long)v->u.i);
        return v->u.i;
    }
    carton_warn(cl, "carton.toml: no integer spec_version");
    return 0;
}

static void log_warnings(const carton_load *cl)
{
    size_t n = cl->warnings->u.arr.n;
    for (size_t i = 0; i < n && i < WARNINGS_LOGGED; i++)
        mfs_warn("%s: warning: %s", cl->m->file_name, cl->warnings->u.arr.items[i]->u.s.p);
    if (n > WARNINGS_LOGGED)
        mfs_warn("%s: %zu more warnings in model.json (metadata.warnings)", cl->m->file_name,
                 n - WARNINGS_LOGGED);
}

static int read_carton_toml(carton_load *cl, mfs_val **out)
{
    carton_file *f = carton_find(cl, "carton.toml");
    if (f == NULL || f->src == NULL || !f->in_archive)
        return mfs_fail(cl->e, MFS_E_UNKNOWN, MFS_NO_OFFSET, "not a carton: no carton.toml");
    uint64_t at = f->en ? f->en->data_offset : 0;
    carton_bytes b;
    char msg[200];
    mfs_err re = { 0 };
    if (carton_read(cl, f, CARTON_READ_MAX, &b, &re) != 0)
        return MFS_CORRUPT(cl->e, at, "%.399s", re.msg);
    int line = 0, col = 0;
    *out = mfs_toml_parse_budget((const char *)b.p, b.len, &cl->budget, &line, &col, msg, sizeof msg);
    carton_bytes_free(&b);
    if (*out == NULL && cl->budget.exceeded) {
        carton_spend(cl, 0, f->path);
        return over_budget(cl);
    }
    if (*out == NULL)
        return MFS_CORRUPT(cl->e, at, "carton.toml: line %d, column %d: %s", line, col, msg);
    return 0;
}

int carton_build(carton_load *cl)
{
    budget_init(cl);
    index_files(cl);
    for (size_t i = 0; i < cl->nfiles; i++)
        if (!cl->files[i].dropped && cl->files[i].en && check_size(cl, cl->files[i].en) != 0)
            return -1;
    make_sources(cl);
    mfs_val *toml = NULL;
    if (read_carton_toml(cl, &toml) != 0)
        return -1;
    mfs_model_set_format(cl->m, "carton", spec_version(cl, toml));
    mfs_val *links = NULL;
    if (read_manifest(cl) != 0 || read_links(cl, &links) != 0 || over_budget(cl) != 0) {
        mfs_val_free(toml);
        mfs_val_free(links);
        return -1;
    }
    apply_manifest(cl);
    resolve_symlinks(cl);
    for (size_t i = 0; i < cl->nfiles; i++)
        if (!cl->files[i].dropped && cl->files[i].src != NULL)
            place(cl, &cl->files[i]);
    carton_load_tensors(cl);
    if (over_budget(cl) != 0) {
        mfs_val_free(toml);
        mfs_val_free(links);
        return -1;
    }
    add_metadata(cl, toml, links);
    log_warnings(cl);
    return 0;
}

/* ---- the driver ------------------------------------------------------------ */

static void load_init(carton_load *cl, mfs_model *m, mfs_err *e)
{
    memset(cl, 0, sizeof *cl);
    cl->m = m;
    cl->e = e;
    cl->warnings = mfs_arr();
    cl->files_dir = mfs_model_mkdirs(m, MFS_ROOT, "files");
    carton_fetch_cfg *fc = mfs_model_own(m, mfs_xcalloc(1, sizeof *fc));
    carton_fetch_cfg_set(fc, m->opts);
    cl->fetch = fc;
    if (m->opts->links_dir != NULL) {
        char *real = realpath(m->opts->links_dir, NULL);
        struct stat st;
        mfs_err ignored = { 0 };  /* the warning below says enough */
        if (real != NULL && stat(real, &st) == 0 && S_ISDIR(st.st_mode) &&
            (cl->links_root = mfs_model_open_user_folder(m, real, &ignored)) != NULL)
            cl->links_dir = mfs_model_own(m, mfs_xstrdup(real));
        else
            carton_warn(cl, "links_dir %s is not a folder: not used", m->opts->links_dir);
        free(real);
    }
}

static void load_free(carton_load *cl)
{
    for (size_t i = 0; i < cl->nfiles; i++) {
        free(cl->files[i].path);
        free(cl->files[i].disk);
    }
    for (size_t i = 0; i < cl->nmanifest; i++)
        free(cl->manifest[i].path);
    for (size_t i = 0; i < cl->nlinks; i++)
        free(cl->links[i].urls);
    free(cl->files);
    free(cl->sorted);
    free(cl->manifest);
    free(cl->links);
    mfs_val_free(cl->warnings);
}

#define SIG_LOCAL 0x04034b50u

/* A central directory holding carton.toml, or else (a truncated carton:
 * load then says what is wrong) a first local header of that name, since
 * Carton's packer writes it first. A local header is 30 bytes (name length
 * at +26) + name + extra. Reads the tail and the directory, then the
 * head's 41 bytes. */
static int probe(mfs_src *src)
{
    static const char name[] = "carton.toml";
    const size_t len = sizeof name - 1;
    mfs_span f;
    if (mfs_src_get_head(src, 30 + len, &f, NULL) != 0)
        return 0;
    uint32_t sig = 0;
    uint16_t nlen;
    int bid = 0;
    if (mfs_rd_u32(f, 0, &sig) && sig == SIG_LOCAL && mfs_rd_u16(f, 26, &nlen) && nlen == len &&
        mfs_span_has(f, 30, nlen) && memcmp(f.p + 30, name, len) == 0)
        bid = 100;
    mfs_src_release(src, f);
    /* The end records only for a zip (it starts with a local header, or
     * is an empty zip's end record): any other file is not read at its
     * tail, a round trip fewer for a remote one. */
    if (sig != SIG_LOCAL && sig != 0x06054b50u)
        return bid;
    mfs_zip_reader rd = mfs_zip_reader_of(src);
    if (mfs_zip_has_name(&rd, name, len))
        return 120;  /* end record, directory signature, an 11-byte name */
    return bid;
}

/* Reads the end records and the central directory, then every member's
 * local header (model.json gives each file's offset): small ranges, no
 * member's data. */
static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    mfs_zip *z = mfs_xcalloc(1, sizeof *z);
    mfs_zip_reader rd = mfs_zip_reader_of(src);
    if (mfs_zip_open(z, &rd, e) != 0) {
        free(z);
        return -1;
    }
    /* The directory must live as long as the tree (decoding on open reads
     * it): the tree frees its three blocks, which is all mfs_zip_close
     * would free. */
    mfs_model_own(m, z);
    mfs_model_own(m, z->entries);
    mfs_model_own(m, z->names);
    if (mfs_zip_locate_all(z, e) != 0)
        return -1;
    carton_load cl;
    load_init(&cl, m, e);
    cl.zip = z;
    collect_zip(&cl, z);
    int r = carton_build(&cl);
    load_free(&cl);
    return r;
}

static int probe_dir(const char *path)
{
    return carton_dir_probe(path);
}

static int load_dir(mfs_model *m, const char *path, mfs_err *e)
{
    char *real = realpath(path, NULL);
    if (real == NULL)
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot resolve the folder's path");
    /* Held for the life of the mount: every file is opened below it. */
    const mfs_folder *root = mfs_model_open_folder(m, real, e);
    free(real);
    if (root == NULL)
        return -1;
    carton_load cl;
    load_init(&cl, m, e);
    cl.root = root;
    carton_dir_collect(&cl);
    int r = carton_build(&cl);
    load_free(&cl);
    return r;
}

const mfs_format mfs_format_carton = {
    .name = "carton",
    .probe = probe,
    .load = load,
    .probe_dir = probe_dir,
    .load_dir = load_dir,
};
