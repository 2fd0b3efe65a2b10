#include "hub_parse.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_parse.h"
#include "hub_url.h"
#include "json_parse.h"
#include "path.h"
#include "xalloc.h"

#define JSON_DEPTH 16

mfs_hub_hkind mfs_hub_parse_header(const char *line, size_t len, const char **value,
                                   size_t *vlen, uint64_t *number)
{
    static const struct { const char *name; mfs_hub_hkind kind; } known[] = {
        { "Location", MFS_HUB_H_LOCATION },       { "X-Repo-Commit", MFS_HUB_H_COMMIT },
        { "X-Linked-Size", MFS_HUB_H_LINKED_SIZE }, { "X-Linked-Etag", MFS_HUB_H_LINKED_ETAG },
        { "ETag", MFS_HUB_H_ETAG },               { "X-Error-Code", MFS_HUB_H_ERROR_CODE },
        { "Link", MFS_HUB_H_LINK },
    };
    *value = NULL;
    *vlen = 0;
    *number = 0;
    if (len >= 5 && memcmp(line, "HTTP/", 5) == 0)
        return MFS_HUB_H_STATUS;
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        if (!mfs_http_header_is(line, len, known[i].name, value, vlen))
            continue;
        if (*vlen > MFS_HUB_HVAL_MAX)
            return MFS_HUB_H_OTHER;
        if (known[i].kind == MFS_HUB_H_LINKED_SIZE) {
            uint64_t v = 0;
            if (*vlen == 0 || *vlen > 19)
                return MFS_HUB_H_OTHER;
            for (size_t k = 0; k < *vlen; k++) {
                char c = (*value)[k];
                if (c < '0' || c > '9')
                    return MFS_HUB_H_OTHER;
                v = v * 10 + (uint64_t)(c - '0');   /* 19 digits: no overflow */
            }
            *number = v;
        }
        return known[i].kind;
    }
    return MFS_HUB_H_OTHER;
}

/* Link: <URL>; rel="next", <URL2>; rel="prev" (RFC 8288): each link is a
 * <...> target and ';'-separated parameters up to the next ','. */
bool mfs_hub_link_next(const char *v, size_t len, char *out, size_t size)
{
    const char *p = v, *end = v + len;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
            p++;
        if (p >= end || *p != '<')
            return false;
        const char *t = ++p;
        while (p < end && *p != '>')
            p++;
        if (p >= end)
            return false;
        size_t tlen = (size_t)(p - t);
        p++;
        /* The parameters of this link, up to a ',' outside quotes. */
        bool next = false;
        while (p < end && *p != ',') {
            while (p < end && (*p == ' ' || *p == '\t' || *p == ';'))
                p++;
            const char *pn = p;
            while (p < end && *p != '=' && *p != ';' && *p != ',')
                p++;
            size_t pnlen = (size_t)(p - pn);
            while (pnlen > 0 && (pn[pnlen - 1] == ' ' || pn[pnlen - 1] == '\t'))
                pnlen--;
            const char *pv = p;
            size_t pvlen = 0;
            if (p < end && *p == '=') {
                p++;
                while (p < end && (*p == ' ' || *p == '\t'))
                    p++;
                if (p < end && *p == '"') {
                    pv = ++p;
                    while (p < end && *p != '"')
                        p++;
                    if (p >= end)
                        return false;
                    pvlen = (size_t)(p - pv);
                    p++;
                } else {
                    pv = p;
                    while (p < end && *p != ';' && *p != ',' && *p != ' ')
                        p++;
                    pvlen = (size_t)(p - pv);
                }
            }
            if (pnlen == 3 && strncasecmp(pn, "rel", 3) == 0) {
                /* rel may hold several space-separated types. */
                for (size_t i = 0; i + 4 <= pvlen; i++)
                    if (strncasecmp(pv + i, "next", 4) == 0 && (i == 0 || pv[i - 1] == ' ') &&
                        (i + 4 == pvlen || pv[i + 4] == ' '))
                        next = true;
            }
            while (p < end && *p != ';' && *p != ',')
                p++;
        }
        if (next) {
            if (tlen == 0 || tlen >= size)
                return false;
            memcpy(out, t, tlen);
            out[tlen] = '\0';
            return true;
        }
    }
    return false;
}

static mfs_val *parse_json(const char *text, size_t len, const char *what, mfs_err *e)
{
    mfs_budget budget = { 64 * (uint64_t)len + 4096, false };
    mfs_json_err je;
    mfs_val *doc = mfs_json_parse(text, len, JSON_DEPTH, &budget, &je);
    if (doc == NULL)
        mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "the Hub's %s is not valid JSON (byte %zu: %s)",
                 what, je.offset, je.msg);
    return doc;
}

int mfs_hub_parse_tree(const char *text, size_t len, mfs_hub_entries *out, size_t max,
                       mfs_err *e)
{
    mfs_val *doc = parse_json(text, len, "listing", e);
    if (doc == NULL)
        return -1;
    int r = 0;
    if (doc->type != MFS_V_ARR)
        r = mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "the Hub's listing is not a JSON array");
    for (size_t i = 0; r == 0 && i < doc->u.arr.n; i++) {
        const mfs_val *it = doc->u.arr.items[i];
        const mfs_val *type = mfs_obj_get(it, "type"), *path = mfs_obj_get(it, "path"),
                      *size = mfs_obj_get(it, "size");
        if (it->type != MFS_V_OBJ || type == NULL || type->type != MFS_V_STR ||
            path == NULL || path->type != MFS_V_STR) {
            r = mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                         "the Hub's listing has an entry without \"type\" and \"path\"");
            break;
        }
        if (type->u.s.len != 4 || memcmp(type->u.s.p, "file", 4) != 0)
            continue;   /* a folder: its files are listed too (recursive) */
        if (!mfs_path_ok(path->u.s.p, path->u.s.len) || strlen(path->u.s.p) != path->u.s.len ||
            size == NULL || size->type != MFS_V_INT || size->u.i < 0) {
            r = mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                         "the Hub's listing has a file with a bad path or size");
            break;
        }
        if (out->count >= max) {
            r = mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "the repository has more than %zu files",
                         max);
            break;
        }
        out->items = mfs_xrealloc(out->items, (out->count + 1) * sizeof *out->items);
        out->items[out->count++] = (mfs_hub_entry){ mfs_xstrdup(path->u.s.p),
                                                    (uint64_t)size->u.i };
    }
    mfs_val_free(doc);
    return r;
}

void mfs_hub_entries_free(mfs_hub_entries *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->items[i].path);
    free(l->items);
    memset(l, 0, sizeof *l);
}

int mfs_hub_parse_revision(const char *text, size_t len, char *out, mfs_err *e)
{
    mfs_val *doc = parse_json(text, len, "revision", e);
    if (doc == NULL)
        return -1;
    const mfs_val *sha = doc->type == MFS_V_OBJ ? mfs_obj_get(doc, "sha") : NULL;
    int r = 0;
    if (sha == NULL || sha->type != MFS_V_STR || sha->u.s.len != 40 ||
        strlen(sha->u.s.p) != 40 || !mfs_hub_is_commit(sha->u.s.p))
        r = mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                     "the Hub's revision has no \"sha\" of 40 hex digits");
    else
        memcpy(out, sha->u.s.p, 41);
    mfs_val_free(doc);
    return r;
}
