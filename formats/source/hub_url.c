#include "hub_url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "path.h"
#include "utf8.h"
#include "xalloc.h"

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
}

/* One ORG or REPO name at *p, up to a '/', '@' or the end. */
static bool take_name(const char **p, char *out)
{
    size_t n = 0;
    const char *s = *p;
    while (s[n] != '\0' && s[n] != '/' && s[n] != '@') {
        if (!name_char(s[n]) || n >= MFS_HUB_NAME_MAX)
            return false;
        n++;
    }
    /* "." and ".." would be path steps in a request URL. */
    if (n == 0 || (n <= 2 && strncmp(s, "..", n) == 0))
        return false;
    memcpy(out, s, n);
    out[n] = '\0';
    *p = s + n;
    return true;
}

/* The revision at *p up to a '/' or the end, percent-decoded. */
static bool take_rev(const char **p, char *out)
{
    size_t n = 0;
    const char *s = *p;
    for (; *s != '\0' && *s != '/'; s++) {
        int c = (unsigned char)*s;
        if (c == '%') {
            int hi = mfs_hexval(s[1]), lo = hi < 0 ? -1 : mfs_hexval(s[2]);
            if (lo < 0)
                return false;
            c = hi * 16 + lo;
            s += 2;
        }
        if (c < 0x21 || c == 0x7f || n >= MFS_HUB_REV_MAX)
            return false;
        out[n++] = (char)c;
    }
    if (n == 0)
        return false;
    out[n] = '\0';
    *p = s;
    return true;
}

int mfs_hub_ref_parse(const char *url, mfs_hub_ref *out, mfs_err *e)
{
    memset(out, 0, sizeof *out);
    if (strncasecmp(url, "hf://", 5) != 0)
        return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "not an hf:// URL");
    const char *p = url + 5;
    if (strncmp(p, "datasets/", 9) == 0) {
        out->dataset = true;
        p += 9;
    } else if (strncmp(p, "models/", 7) == 0) {
        p += 7;
    }
    if (!take_name(&p, out->org) || *p++ != '/' || !take_name(&p, out->name))
        return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET,
                        "not hf://[models/|datasets/]ORG/REPO[@REVISION][/PATH] (ORG and REPO "
                        "are names of letters, digits, '.', '_' and '-')");
    snprintf(out->rev, sizeof out->rev, "main");
    if (*p == '@') {
        p++;
        if (!take_rev(&p, out->rev))
            return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET,
                            "the revision after '@' is empty, too long or badly encoded (write "
                            "a '/' in it as %%2F)");
        out->rev_given = true;
    }
    if (*p == '\0' || (p[0] == '/' && p[1] == '\0'))
        return 0;
    p++;
    size_t n = strlen(p);
    if (!mfs_path_ok(p, n) || strstr(p, "//") != NULL || p[n - 1] == '/')
        return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET,
                        "the file's path in the repository is not a relative path (no \"..\", "
                        "no empty part)");
    out->path = mfs_xstrdup(p);
    return 0;
}

void mfs_hub_ref_free(mfs_hub_ref *r)
{
    free(r->path);
    r->path = NULL;
}

bool mfs_hub_is_commit(const char *rev)
{
    size_t n = 0;
    for (; rev[n] != '\0'; n++)
        if (!((rev[n] >= '0' && rev[n] <= '9') || (rev[n] >= 'a' && rev[n] <= 'f')))
            return false;
    return n == 40;
}

char *mfs_hub_quote(const char *s, bool keep_slash)
{
    size_t n = strlen(s);
    char *out = mfs_xmalloc(3 * n + 1), *w = out;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p) != NULL || (keep_slash && *p == '/'))
            *w++ = (char)*p;
        else
            w += sprintf(w, "%%%02X", *p);
    }
    *w = '\0';
    return out;
}

static char *join_parts(const char *const *parts, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(parts[i]);
    char *out = mfs_xmalloc(len), *w = out;
    for (size_t i = 0; i < n; i++) {
        size_t k = strlen(parts[i]);
        memcpy(w, parts[i], k);
        w += k;
    }
    *w = '\0';
    return out;
}

char *mfs_hub_resolve_url(const char *endpoint, const mfs_hub_ref *r, const char *rev)
{
    char *qrev = mfs_hub_quote(rev, false), *qpath = mfs_hub_quote(r->path ? r->path : "", true);
    const char *parts[] = { endpoint, r->dataset ? "/datasets/" : "/", r->org, "/", r->name,
                            "/resolve/", qrev, "/", qpath };
    char *u = join_parts(parts, sizeof parts / sizeof *parts);
    free(qrev);
    free(qpath);
    return u;
}

char *mfs_hub_api_url(const char *endpoint, const mfs_hub_ref *r, const char *what,
                      const char *rev, const char *query)
{
    char *qrev = mfs_hub_quote(rev, false);
    const char *parts[] = { endpoint, r->dataset ? "/api/datasets/" : "/api/models/", r->org, "/",
                            r->name, "/", what, "/", qrev, query ? "?" : "", query ? query : "" };
    char *u = join_parts(parts, sizeof parts / sizeof *parts);
    free(qrev);
    return u;
}

char *mfs_hub_file_url(const mfs_hub_ref *r, const char *rev, const char *path)
{
    char *qrev = mfs_hub_quote(rev, false);
    const char *parts[] = { "hf://", r->dataset ? "datasets/" : "", r->org, "/", r->name, "@", qrev,
                            "/", path };
    char *u = join_parts(parts, sizeof parts / sizeof *parts);
    free(qrev);
    return u;
}

bool mfs_hub_origin(const char *url, char *out, size_t size)
{
    size_t skip = strncasecmp(url, "https://", 8) == 0 ? 8
                  : strncasecmp(url, "http://", 7) == 0 ? 7 : 0;
    if (skip == 0)
        return false;
    size_t host = strcspn(url + skip, "/?#");
    if (host == 0 || skip + host >= size)
        return false;
    memcpy(out, url, skip + host);
    out[skip + host] = '\0';
    for (char *c = out; *c; c++)   /* scheme and host compare without case */
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    return true;
}

char *mfs_hub_url_join(const char *base, const char *loc)
{
    if (mfs_is_http_url(loc))
        return mfs_xstrdup(loc);
    char origin[512];
    if (!mfs_hub_origin(base, origin, sizeof origin))
        return NULL;
    size_t n;
    if (loc[0] == '?') {
        /* Only the query changes: the base's path stays. */
        n = strcspn(base, "?#");
    } else if (loc[0] == '/') {
        if (loc[1] == '/')
            return NULL;   /* scheme-relative: another host; not expected of the Hub */
        n = strlen(origin);
    } else {
        const char *q = base + strcspn(base, "?#");
        const char *slash = base + strlen(origin);
        for (const char *s = slash; s < q; s++)
            if (*s == '/')
                slash = s;
        n = (size_t)(slash - base) + (*slash == '/' ? 1 : 0);
    }
    size_t k = strlen(loc);
    char *u = mfs_xmalloc(n + k + 2);
    memcpy(u, base, n);
    if (loc[0] != '/' && loc[0] != '?' && (n == 0 || u[n - 1] != '/'))
        u[n++] = '/';
    memcpy(u + n, loc, k + 1);
    return u;
}
