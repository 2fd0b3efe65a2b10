#include "http_date.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const MONTHS[12] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
static const char *const DAYS[7] = { "Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed" };

typedef struct cur {
    const char *p, *end;
} cur;

static bool lit(cur *c, char ch)
{
    if (c->p >= c->end || *c->p != ch)
        return false;
    c->p++;
    return true;
}

static void blanks(cur *c)
{
    while (c->p < c->end && *c->p == ' ')
        c->p++;
}

/* Between min and max decimal digits, into *out. */
static bool digits(cur *c, int min, int max, int *out)
{
    int n = 0, v = 0;
    while (n < max && c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        v = v * 10 + (*c->p++ - '0');
        n++;
    }
    *out = v;
    return n >= min;
}

static bool letters(cur *c, const char **word, size_t *len)
{
    const char *s = c->p;
    while (c->p < c->end && ((*c->p >= 'A' && *c->p <= 'Z') || (*c->p >= 'a' && *c->p <= 'z')))
        c->p++;
    *word = s;
    *len = (size_t)(c->p - s);
    return *len > 0;
}

static bool month(cur *c, int *m)
{
    const char *w;
    size_t n;
    if (!letters(c, &w, &n) || n != 3)
        return false;
    for (int i = 0; i < 12; i++)
        if (strncasecmp(w, MONTHS[i], 3) == 0) {
            *m = i + 1;
            return true;
        }
    return false;
}

static bool clock(cur *c, int *hh, int *mm, int *ss)
{
    return digits(c, 2, 2, hh) && lit(c, ':') && digits(c, 2, 2, mm) && lit(c, ':') &&
           digits(c, 2, 2, ss) && *hh < 24 && *mm < 60 && *ss <= 60;
}

static bool gmt(cur *c)
{
    const char *w;
    size_t n;
    return letters(c, &w, &n) && n == 3 && strncmp(w, "GMT", 3) == 0;
}

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = y / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int month_days(int y, int m)
{
    static const int n[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : n[m - 1];
}

int64_t mfs_http_date_parse(const char *s, size_t len)
{
    cur c = { s, s + len };
    const char *w;
    size_t n;
    int d = 0, m = 0, y = 0, hh = 0, mm = 0, ss = 0;
    if (!letters(&c, &w, &n))
        return -1;
    if (lit(&c, ',')) {
        blanks(&c);
        if (!digits(&c, 1, 2, &d))
            return -1;
        if (lit(&c, '-')) {   /* RFC 850: 06-Nov-94 */
            if (!month(&c, &m) || !lit(&c, '-') || !digits(&c, 2, 2, &y))
                return -1;
            y += y < 70 ? 2000 : 1900;
        } else if (!lit(&c, ' ') || !month(&c, &m) || !lit(&c, ' ') ||
                   !digits(&c, 4, 4, &y)) {
            return -1;
        }
        if (!lit(&c, ' ') || !clock(&c, &hh, &mm, &ss) || !lit(&c, ' ') || !gmt(&c))
            return -1;
    } else {   /* asctime: Sun Nov  6 08:49:37 1994 */
        if (!lit(&c, ' ') || !month(&c, &m))
            return -1;
        blanks(&c);
        if (!digits(&c, 1, 2, &d) || !lit(&c, ' ') || !clock(&c, &hh, &mm, &ss) ||
            !lit(&c, ' ') || !digits(&c, 4, 4, &y))
            return -1;
    }
    blanks(&c);
    if (c.p != c.end || y < 1970 || d < 1 || d > month_days(y, m))
        return -1;
    return days_from_civil(y, m, d) * 86400 + hh * 3600 + mm * 60 + ss;
}

void mfs_http_date_format(int64_t t, char out[30])
{
    if (t < 0 || t > 253402300799)   /* 9999-12-31 23:59:59 */
        t = 0;
    int64_t days = t / 86400, rem = t % 86400;
    /* The inverse of days_from_civil. */
    int64_t z = days + 719468, era = z / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int d = (int)(doy - (153 * mp + 2) / 5 + 1);
    int m = (int)(mp < 10 ? mp + 3 : mp - 9);
    int64_t y = yoe + era * 400 + (m <= 2);
    /* Room for any int the compiler sees; the fields are in range. */
    char buf[96];
    snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", DAYS[days % 7], d,
             MONTHS[m - 1], (int)(y % 10000), (int)(rem / 3600), (int)(rem / 60 % 60),
             (int)(rem % 60));
    memcpy(out, buf, 29);
    out[29] = '\0';
}
