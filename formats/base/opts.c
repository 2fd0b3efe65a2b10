#include "opts.h"

#include <errno.h>
#include <stdlib.h>

static bool parse_u64(const char *s, uint64_t *v, char **end)
{
    /* strtoull takes "-1" and spaces: only digits are a count here. */
    if (s[0] < '0' || s[0] > '9')
        return false;
    errno = 0;
    unsigned long long x = strtoull(s, end, 10);
    if (errno != 0)
        return false;
    *v = x;
    return true;
}

bool mfs_parse_size(const char *s, uint64_t *out)
{
    char *end;
    uint64_t v;
    if (!parse_u64(s, &v, &end))
        return false;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    case 't': case 'T': shift = 40; break;
    default: break;
    }
    if (shift)
        end++;
    if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)))
        return false;
    *out = v << shift;
    return true;
}

bool mfs_parse_seconds(const char *s, uint64_t *out)
{
    char *end;
    uint64_t v;
    if (!parse_u64(s, &v, &end) || *end != '\0' || v == 0 || v > 10ull * 366 * 86400)
        return false;
    *out = v;
    return true;
}
