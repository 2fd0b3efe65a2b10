#include "url_redact.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "xalloc.h"

#define REDACTED "?<redacted>"

bool mfs_url_is_web(const char *s)
{
    return strncasecmp(s, "http://", 7) == 0 || strncasecmp(s, "https://", 8) == 0;
}

size_t mfs_url_query_at(const char *s)
{
    if (!mfs_url_is_web(s))
        return strlen(s);
    const char *rest = strstr(s, "://") + 3;
    return (size_t)(rest - s) + strcspn(rest, "?#");
}

/* The shown form's pieces: [0, scheme_end) then [host, end), then
 * REDACTED when a query was cut. */
static size_t pieces(const char *s, size_t *scheme_end, const char **host, bool *query)
{
    size_t end = mfs_url_query_at(s);
    const char *rest = strstr(s, "://") + 3;
    *scheme_end = (size_t)(rest - s);
    *host = rest;
    /* A user or password: what comes before the last '@' of the
     * authority (the part up to the first '/'). */
    size_t auth = strcspn(rest, "/?#");
    for (size_t i = auth; i > 0; i--)
        if (rest[i - 1] == '@') {
            *host = rest + i;
            break;
        }
    *query = s[end] == '?';
    return end;
}

void mfs_url_redact(const char *s, char *out, size_t size)
{
    if (size == 0)
        return;
    if (!mfs_url_is_web(s)) {
        snprintf(out, size, "%s", s);
        return;
    }
    size_t scheme_end;
    const char *host;
    bool query;
    size_t end = pieces(s, &scheme_end, &host, &query);
    snprintf(out, size, "%.*s%.*s%s", (int)scheme_end, s, (int)(s + end - host), host,
             query ? REDACTED : "");
}

/* Whether query parameter [p, p + n) (up to its '=') is one that signs. */
static bool signs(const char *p, size_t n)
{
    static const char *const prefixes[] = { "x-amz-", "x-goog-" };
    static const char *const names[] = { "awsaccesskeyid", "googleaccessid", "signature",
                                         "expires", "policy", "key-pair-id", "sig", "se", "st",
                                         "sp", "sv", "sr", "spr", "skoid", "sktid", "skt", "ske",
                                         "sks", "skv" };
    size_t name = 0;
    while (name < n && p[name] != '=')
        name++;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (name >= strlen(prefixes[i]) && strncasecmp(p, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (name == strlen(names[i]) && strncasecmp(p, names[i], name) == 0)
            return true;
    return false;
}

char *mfs_url_unsigned(const char *s)
{
    size_t end = mfs_url_query_at(s);
    char *out = mfs_xmalloc(strlen(s) + 1);
    memcpy(out, s, end);
    size_t o = end;
    if (s[end] == '?') {
        const char *q = s + end + 1;
        size_t qlen = strcspn(q, "#");
        for (size_t i = 0; i < qlen;) {
            size_t n = strcspn(q + i, "&");
            if (n > qlen - i)
                n = qlen - i;
            if (n > 0 && !signs(q + i, n)) {
                char sep = o == end ? '?' : '&';
                out[o++] = sep;
                memcpy(out + o, q + i, n);
                o += n;
            }
            i += n + 1;
        }
    }
    out[o] = '\0';
    return out;
}

char *mfs_url_redacted(const char *s)
{
    size_t n = strlen(s) + sizeof REDACTED;
    char *out = mfs_xmalloc(n);
    mfs_url_redact(s, out, n);
    return out;
}
