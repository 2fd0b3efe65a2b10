#include "http_parse.h"

#include <string.h>
#include <strings.h>

#include "http_date.h"

bool mfs_http_header_is(const char *line, size_t len, const char *name, const char **value,
                        size_t *vlen)
{
    size_t n = strlen(name);
    if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
        return false;
    const char *v = line + n + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *value = v;
    *vlen = (size_t)(end - v);
    return true;
}

/* Decimal digits at *p (at least one, no overflow), advancing *p. */
static bool parse_u64(const char **p, const char *end, uint64_t *out)
{
    uint64_t v = 0;
    const char *s = *p;
    if (s >= end || *s < '0' || *s > '9')
        return false;
    for (; s < end && *s >= '0' && *s <= '9'; s++) {
        if (v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *p = s;
    *out = v;
    return true;
}

/* "bytes FIRST-LAST/TOTAL" or "bytes STAR/TOTAL", TOTAL may be a STAR
 * ('*'): range_ok only when all of it parses and nothing follows. */
static void content_range(const char *v, size_t len, mfs_http_header *h)
{
    const char *p = v, *end = v + len;
    h->range_ok = h->total_unknown = false;
    if (len < 6 || strncasecmp(p, "bytes ", 6) != 0)
        return;
    p += 6;
    if (p < end && *p == '*') {
        p++;
        h->first = 1;
        h->last = 0;
    } else if (!parse_u64(&p, end, &h->first) || p >= end || *p++ != '-' ||
               !parse_u64(&p, end, &h->last) || h->last < h->first) {
        return;
    }
    if (p >= end || *p++ != '/')
        return;
    if (p < end && *p == '*') {
        h->total_unknown = true;
        p++;
    } else if (!parse_u64(&p, end, &h->total)) {
        return;
    }
    h->range_ok = p == end;
}

mfs_http_hkind mfs_http_parse_header(const char *line, size_t len, mfs_http_header *out)
{
    const char *v;
    size_t vlen;
    memset(out, 0, sizeof *out);
    if (len >= 5 && memcmp(line, "HTTP/", 5) == 0)
        return MFS_HTTP_H_STATUS;
    if (mfs_http_header_is(line, len, "ETag", &v, &vlen)) {
        out->value = v;
        out->len = vlen;
        return MFS_HTTP_H_ETAG;
    }
    if (mfs_http_header_is(line, len, "Content-Range", &v, &vlen)) {
        out->value = v;
        out->len = vlen;
        content_range(v, vlen, out);
        return MFS_HTTP_H_RANGE;
    }
    if (mfs_http_header_is(line, len, "Last-Modified", &v, &vlen)) {
        out->value = v;
        out->len = vlen;
        out->date = mfs_http_date_parse(v, vlen);
        return MFS_HTTP_H_LAST_MODIFIED;
    }
    if (mfs_http_header_is(line, len, "Retry-After", &v, &vlen)) {
        const char *q = v;
        if (parse_u64(&q, v + vlen, &out->seconds) && q == v + vlen)
            return MFS_HTTP_H_RETRY_AFTER;
    }
    return MFS_HTTP_H_OTHER;
}
