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

char *mfs_url_redacted(const char *s)
{
    size_t n = strlen(s) + sizeof REDACTED;
    char *out = mfs_xmalloc(n);
    mfs_url_redact(s, out, n);
    return out;
}
