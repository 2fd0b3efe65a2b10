#include "s3_xml.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

typedef enum field { F_NONE, F_KEY, F_SIZE, F_MTIME, F_TRUNCATED, F_TOKEN, F_CODE, F_MESSAGE } field;

/* The element names read, and where: a Contents' own, or anywhere. */
static field field_of(const char *name, size_t n, bool in_contents, bool is_error)
{
#define IS(s) (n == sizeof s - 1 && memcmp(name, s, n) == 0)
    if (in_contents && IS("Key"))
        return F_KEY;
    if (in_contents && IS("Size"))
        return F_SIZE;
    if (in_contents && IS("LastModified"))
        return F_MTIME;
    if (!in_contents && IS("IsTruncated"))
        return F_TRUNCATED;
    if (!in_contents && IS("NextContinuationToken"))
        return F_TOKEN;
    if (is_error && IS("Code"))
        return F_CODE;
    if (is_error && IS("Message"))
        return F_MESSAGE;
    return F_NONE;
#undef IS
}

static size_t put_utf8(char *out, unsigned long c)
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | (c >> 6));
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xe0 | (c >> 12));
        out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (c >> 18));
    out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    out[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* One entity at s[0..n) (s[0] == '&'): its bytes into out (4 bytes of
 * room), the entity's length into *used; 0 when it is not one. */
static size_t entity(const char *s, size_t n, char *out, size_t *used)
{
    static const struct { const char *name; char c; } named[] = {
        { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' },
    };
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        size_t k = strlen(named[i].name);
        if (n >= k && memcmp(s, named[i].name, k) == 0) {
            out[0] = named[i].c;
            *used = k;
            return 1;
        }
    }
    if (n < 4 || s[1] != '#')
        return 0;
    bool hex = s[2] == 'x';
    size_t i = hex ? 3 : 2, digits = 0;
    unsigned long c = 0;
    for (; i < n && digits < 8; i++, digits++) {
        char d = s[i];
        int v = d >= '0' && d <= '9' ? d - '0'
                : hex && d >= 'a' && d <= 'f' ? d - 'a' + 10
                : hex && d >= 'A' && d <= 'F' ? d - 'A' + 10 : -1;
        if (v < 0)
            break;
        c = c * (hex ? 16u : 10u) + (unsigned long)v;
    }
    /* NUL, surrogates and beyond Unicode are no character. */
    if (digits == 0 || i >= n || s[i] != ';' || c == 0 || c > 0x10ffff ||
        (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *used = i + 1;
    return put_utf8(out, c);
}

/* The text s[0..n) decoded into a new string of at most `max` bytes;
 * NULL when too long or an entity is not one. */
static char *decode(const char *s, size_t n, size_t max)
{
    char *out = mfs_xmalloc(max + 1);
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        char tmp[4];
        size_t k = 1, used = 1;
        if (s[i] == '&') {
            k = entity(s + i, n - i, tmp, &used);
            if (k == 0)
                goto bad;
        } else {
            tmp[0] = s[i];
        }
        if (k > max - w)
            goto bad;
        memcpy(out + w, tmp, k);
        w += k;
        i += used;
    }
    out[w] = '\0';
    return out;
bad:
    free(out);
    return NULL;
}

/* The first occurrence of `pat` in [p, end), or NULL. */
static const char *find(const char *p, const char *end, const char *pat)
{
    size_t k = strlen(pat);
    for (; (size_t)(end - p) >= k; p++)
        if (memcmp(p, pat, k) == 0)
            return p;
    return NULL;
}

static bool parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (*s == '\0')
        return false;
    for (; *s; s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian): the civil-date
 * arithmetic with 400-year eras. */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int64_t mfs_s3_xml_time(const char *s)
{
    /* YYYY-MM-DDTHH:MM:SS, then anything (fractions, Z). */
    static const char shape[] = "dddd-dd-ddTdd:dd:dd";
    int v[6] = { 0 };
    static const int at[6] = { 0, 5, 8, 11, 14, 17 }, len[6] = { 4, 2, 2, 2, 2, 2 };
    for (size_t i = 0; i < sizeof shape - 1; i++) {
        if (s[i] == '\0')
            return 0;
        if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
            return 0;
    }
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < len[i]; k++)
            v[i] = v[i] * 10 + (s[at[i] + k] - '0');
    if (v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 || v[4] > 59 || v[5] > 60)
        return 0;
    int64_t t = days_from_civil(v[0], v[1], v[2]) * 86400 + v[3] * 3600 + v[4] * 60 + v[5];
    return t > 0 ? t : 0;
}

static int fail(const char **why, const char *w)
{
    *why = w;
    return -1;
}

int mfs_s3_xml_parse(const char *xml, size_t len, mfs_s3_page *out, const char **why)
{
    memset(out, 0, sizeof *out);
    const char *p = xml, *end = xml + len;
    bool in_contents = false, seen_root = false;
    mfs_s3_object cur = { 0 };
    size_t cap = 0;
    for (;;) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        if (lt == NULL)
            break;
        p = lt;
        if (end - p >= 2 && p[1] == '?') {
            const char *q = find(p, end, "?>");
            if (q == NULL)
                goto unclosed;
            p = q + 2;
            continue;
        }
        if (end - p >= 4 && memcmp(p, "<!--", 4) == 0) {
            const char *q = find(p + 4, end, "-->");
            if (q == NULL)
                goto unclosed;
            p = q + 3;
            continue;
        }
        if (end - p >= 2 && p[1] == '!') {   /* a DOCTYPE: no internal subset read */
            const char *q = memchr(p, '>', (size_t)(end - p));
            if (q == NULL)
                goto unclosed;
            p = q + 1;
            continue;
        }
        bool closing = end - p >= 2 && p[1] == '/';
        const char *ns = p + (closing ? 2 : 1), *ne = ns;
        while (ne < end && *ne != '>' && *ne != '/' && *ne != ' ' && *ne != '\t' &&
               *ne != '\r' && *ne != '\n')
            ne++;
        /* The tag's end, past attributes (whose quoted values may hold '>'). */
        const char *q = ne;
        char quote = 0;
        while (q < end && (quote || *q != '>')) {
            if (quote && *q == quote)
                quote = 0;
            else if (!quote && (*q == '"' || *q == '\''))
                quote = *q;
            q++;
        }
        if (q >= end)
            goto unclosed;
        bool empty = !closing && q > ns && q[-1] == '/';
        size_t n = (size_t)(ne - ns);
        p = q + 1;
        if (closing) {
            if (in_contents && n == 8 && memcmp(ns, "Contents", 8) == 0) {
                in_contents = false;
                if (cur.key == NULL)
                    continue;   /* no key: nothing to list */
                if (out->count >= MFS_S3_XML_MAX_KEYS) {
                    free(cur.key);
                    mfs_s3_page_free(out);
                    return fail(why, "more keys in one page than allowed");
                }
                if (out->count == cap) {
                    cap = cap ? cap * 2 : 64;
                    out->objects = mfs_xreallocarray(out->objects, cap, sizeof *out->objects);
                }
                out->objects[out->count++] = cur;
                memset(&cur, 0, sizeof cur);
            }
            continue;
        }
        if (!seen_root) {
            seen_root = true;
            out->is_error = n == 5 && memcmp(ns, "Error", 5) == 0;
        }
        if (n == 8 && memcmp(ns, "Contents", 8) == 0 && !empty) {
            free(cur.key);
            memset(&cur, 0, sizeof cur);
            in_contents = true;
            continue;
        }
        field f = field_of(ns, n, in_contents, out->is_error);
        if (f == F_NONE)
            continue;
        /* Its text, then exactly its closing tag. */
        const char *ts = p, *te = p;
        if (!empty) {
            te = memchr(p, '<', (size_t)(end - p));
            if (te == NULL || (size_t)(end - te) < n + 3 || te[1] != '/' ||
                memcmp(te + 2, ns, n) != 0 || te[2 + n] != '>')
                goto free_fail_text;
            p = te + n + 3;
        }
        size_t max = f == F_KEY ? MFS_S3_XML_MAX_KEY : f == F_TOKEN ? MFS_S3_XML_MAX_TOKEN
                     : f == F_CODE ? sizeof out->code - 1 : f == F_MESSAGE ? sizeof out->message - 1
                     : 64;
        char *text = decode(ts, (size_t)(te - ts), max);
        if (text == NULL) {
            if (f == F_MESSAGE)
                continue;   /* only shown: a long one is left out */
            goto free_fail_text;
        }
        switch (f) {
        case F_KEY:
            if (strlen(text) != 0 && cur.key == NULL) {
                cur.key = text;
                text = NULL;
            }
            break;
        case F_SIZE:
            if (!parse_u64(text, &cur.size)) {
                free(text);
                free(cur.key);
                mfs_s3_page_free(out);
                return fail(why, "a <Size> that is not a number");
            }
            break;
        case F_MTIME:
            cur.mtime = mfs_s3_xml_time(text);
            break;
        case F_TRUNCATED:
            out->truncated = strcmp(text, "true") == 0;
            break;
        case F_TOKEN:
            free(out->token);
            out->token = text;
            text = NULL;
            break;
        case F_CODE:
            memcpy(out->code, text, strlen(text) + 1);
            break;
        case F_MESSAGE:
            memcpy(out->message, text, strlen(text) + 1);
            break;
        case F_NONE:
            break;
        }
        free(text);
    }
    free(cur.key);
    if (!seen_root) {
        mfs_s3_page_free(out);
        return fail(why, "no XML element");
    }
    return 0;
free_fail_text:
    free(cur.key);
    mfs_s3_page_free(out);
    return fail(why, "an element's text too long, with a bad entity, or not closed");
unclosed:
    free(cur.key);
    mfs_s3_page_free(out);
    return fail(why, "a tag, comment or declaration never closed");
}

void mfs_s3_page_free(mfs_s3_page *p)
{
    for (size_t i = 0; i < p->count; i++)
        free(p->objects[i].key);
    free(p->objects);
    free(p->token);
    p->objects = NULL;
    p->token = NULL;
    p->count = 0;
}
