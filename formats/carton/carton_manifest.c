/* MANIFEST and LINKS.
 *
 * MANIFEST: one "PATH=SHA256" line per file (format.md: sorted, no spaces;
 * the path is what comes before the last '=', as Carton's own loader
 * splits it). A line that does not have that form, an unsafe path or a
 * second line for one path is ignored with a warning: the first line for a
 * path wins.
 *
 * LINKS: TOML, `version = 1` and `[urls]` mapping a sha256 to a list of
 * URLs. Entries of another shape are ignored with a warning. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carton.h"
#include "strbuf.h"
#include "xalloc.h"

/* What a MANIFEST line costs besides 4 copies of its text. */
#define LINE_COST 512u

static void lower(char *s)
{
    for (; *s; s++)
        if (*s >= 'A' && *s <= 'F')
            *s = (char)(*s - 'A' + 'a');
}

static int cmp_line(const void *a, const void *b)
{
    const carton_manifest_line *x = a, *y = b;
    int c = strcmp(x->path, y->path);
    /* `file` holds the line number while sorting: the first line wins. */
    return c ? c : (x->file < y->file ? -1 : x->file > y->file);
}

void carton_parse_manifest(carton_load *cl, const uint8_t *p, size_t len)
{
    const char *s = (const char *)p, *end = s + len;
    size_t lineno = 0, cap = 0;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *eol = nl ? nl : end;
        lineno++;
        size_t n = (size_t)(eol - s);
        /* A line becomes a table entry, a manifest key, maybe a file of
         * its own and a warning: MANIFEST may be a deflated bomb. */
        if (!carton_spend(cl, LINE_COST + 4 * (uint64_t)n, "MANIFEST"))
            break;
        const char *eq = NULL;
        for (const char *q = s; q < eol; q++)
            if (*q == '=')
                eq = q;
        if (n == 0) {
            /* blank line: nothing to check */
        } else if (eq == NULL || !mfs_is_sha256_hex(eq + 1, (size_t)(eol - eq - 1))) {
            char *q = carton_quote(s, n > 200 ? 200 : n);
            carton_warn(cl, "MANIFEST line %zu is not PATH=SHA256: %s", lineno, q);
            free(q);
        } else if (!mfs_path_ok(s, (size_t)(eq - s))) {
            char *q = carton_quote(s, (size_t)(eq - s));
            carton_warn(cl, "MANIFEST line %zu: unsafe path %s ignored", lineno, q);
            free(q);
        } else {
            if (cl->nmanifest == cap) {
                cap = cap ? cap * 2 : 64;
                cl->manifest = mfs_xreallocarray(cl->manifest, cap, sizeof *cl->manifest);
            }
            carton_manifest_line *l = &cl->manifest[cl->nmanifest++];
            l->path = mfs_xstrndup(s, (size_t)(eq - s));
            memcpy(l->sha, eq + 1, 64);
            l->sha[64] = '\0';
            lower(l->sha);
            l->file = lineno;
        }
        s = nl ? nl + 1 : end;
    }
    if (cl->nmanifest > 1)
        qsort(cl->manifest, cl->nmanifest, sizeof *cl->manifest, cmp_line);
    /* Drop later lines for a path already listed. */
    size_t kept = 0;
    for (size_t i = 0; i < cl->nmanifest; i++) {
        if (kept > 0 && strcmp(cl->manifest[kept - 1].path, cl->manifest[i].path) == 0) {
            carton_warn(cl, "MANIFEST line %zu lists %s again: the first line wins",
                        cl->manifest[i].file, cl->manifest[i].path);
            free(cl->manifest[i].path);
            continue;
        }
        cl->manifest[kept++] = cl->manifest[i];
    }
    cl->nmanifest = kept;
    for (size_t i = 0; i < kept; i++)
        cl->manifest[i].file = SIZE_MAX;
}

static int cmp_link(const void *a, const void *b)
{
    return strcmp(((const carton_link *)a)->sha, ((const carton_link *)b)->sha);
}

/* The URLs of one LINKS entry, newline-separated, in `sb`: 1 when they
 * cannot be one URL per line (ignored with a warning), -1 when there are
 * too many to show in user.modelfs.urls (refuses the carton). */
static int join_urls(carton_load *cl, const char *key, size_t klen, const mfs_val *list,
                     mfs_strbuf *sb)
{
    if (!mfs_is_sha256_hex(key, klen) || list->type != MFS_V_ARR || list->u.arr.n == 0)
        return 1;
    if (list->u.arr.n > CARTON_URLS_MAX_COUNT)
        return MFS_CORRUPT(cl->e, MFS_NO_OFFSET,
                           "LINKS: entry %.64s has %zu URLs, more than the %u a file may have: refused",
                           key, list->u.arr.n, CARTON_URLS_MAX_COUNT);
    for (size_t k = 0; k < list->u.arr.n; k++) {
        const mfs_val *u = list->u.arr.items[k];
        /* One URL per line in the xattr: no NUL or newline inside. */
        if (u->type != MFS_V_STR || u->u.s.len == 0 || memchr(u->u.s.p, '\n', u->u.s.len) ||
            memchr(u->u.s.p, '\0', u->u.s.len))
            return 1;
        if (k)
            mfs_sb_addc(sb, '\n');
        mfs_sb_add(sb, u->u.s.p, u->u.s.len);
        if (sb->len > CARTON_URLS_MAX_BYTES)
            return MFS_CORRUPT(cl->e, MFS_NO_OFFSET,
                               "LINKS: the URLs of entry %.64s take more than %u bytes, more than "
                               "user.modelfs.urls can show: refused", key, CARTON_URLS_MAX_BYTES);
    }
    return 0;
}

int carton_parse_links(carton_load *cl, const mfs_val *doc)
{
    const mfs_val *version = mfs_obj_get(doc, "version");
    if (version == NULL || version->type != MFS_V_INT || version->u.i != 1)
        carton_warn(cl, "LINKS: version is not 1; reading its urls anyway");
    const mfs_val *urls = mfs_obj_get(doc, "urls");
    if (urls == NULL || urls->type != MFS_V_OBJ) {
        carton_warn(cl, "LINKS has no [urls] table");
        return 0;
    }
    cl->links = mfs_xcalloc(urls->u.obj.n ? urls->u.obj.n : 1, sizeof *cl->links);
    for (size_t i = 0; i < urls->u.obj.n; i++) {
        const char *key = urls->u.obj.keys[i];
        size_t klen = urls->u.obj.klens[i];
        mfs_strbuf sb = { 0 };
        int r = join_urls(cl, key, klen, urls->u.obj.vals[i], &sb);
        if (r < 0) {
            mfs_sb_free(&sb);
            return -1;
        }
        if (r > 0) {
            char *q = carton_quote(key, klen > 80 ? 80 : klen);
            carton_warn(cl, "LINKS: entry %s is not a sha256 with a list of URLs: ignored", q);
            free(q);
            mfs_sb_free(&sb);
            continue;
        }
        carton_link *l = &cl->links[cl->nlinks++];
        memcpy(l->sha, key, 64);
        l->sha[64] = '\0';
        lower(l->sha);
        l->urls = mfs_sb_take(&sb, NULL);
    }
    if (cl->nlinks > 1)
        qsort(cl->links, cl->nlinks, sizeof *cl->links, cmp_link);
    /* The same sha256 twice (in two cases): the first one, in sorted order. */
    size_t kept = 0;
    for (size_t i = 0; i < cl->nlinks; i++) {
        if (kept > 0 && strcmp(cl->links[kept - 1].sha, cl->links[i].sha) == 0) {
            free(cl->links[i].urls);
            continue;
        }
        cl->links[kept++] = cl->links[i];
    }
    cl->nlinks = kept;
    return 0;
}

const char *carton_link_urls(const carton_load *cl, const char *sha)
{
    if (cl->nlinks == 0)
        return NULL;
    carton_link key;
    snprintf(key.sha, sizeof key.sha, "%s", sha);
    const carton_link *l = bsearch(&key, cl->links, cl->nlinks, sizeof *cl->links, cmp_link);
    return l ? l->urls : NULL;
}
