/* libFuzzer target for what a remote source makes of URLs a server or a
 * user gave: url_redact.c (the shown form) and redirect.c (where a
 * redirect may lead). The input is up to three NUL-separated URLs: the
 * request's, the Location made absolute, and the credentials' home.
 * What must hold: a web URL's shown form carries no query but the
 * redacted mark and no user or password; an origin, when there is one,
 * is scheme://host:port; a redirect from https is never followed to
 * http, nor to a URL with a user or password, and one carrying
 * credentials never leaves their origin. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "redirect.h"
#include "url_redact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_URL 4096

/* The next NUL-separated piece of [*p, end) as a string (cut to MAX_URL). */
static char *piece(const uint8_t **p, const uint8_t *end)
{
    const uint8_t *nul = memchr(*p, '\0', (size_t)(end - *p));
    size_t n = (size_t)((nul ? nul : end) - *p);
    char *s = malloc((n < MAX_URL ? n : MAX_URL) + 1);
    if (s == NULL)
        abort();
    memcpy(s, *p, n < MAX_URL ? n : MAX_URL);
    s[n < MAX_URL ? n : MAX_URL] = '\0';
    *p = nul ? nul + 1 : end;
    return s;
}

static void shown(const char *url)
{
    char out[MAX_URL + 32];
    mfs_url_redact(url, out, sizeof out);
    if (!mfs_url_is_web(url)) {
        if (strcmp(out, url) != 0)
            abort();
        return;
    }
    const char *q = strpbrk(out, "?#");
    if (q != NULL && strcmp(q, "?<redacted>") != 0)
        abort();
    const char *rest = strstr(out, "://") + 3;
    size_t auth = strcspn(rest, "/?#");
    if (memchr(rest, '@', auth) != NULL)
        abort();
    if (mfs_url_query_at(url) > strlen(url))
        abort();
    char *name = mfs_url_unsigned(url);   /* the cache's name: never longer */
    if (strlen(name) > strlen(url) || strncmp(name, url, mfs_url_query_at(url)) != 0)
        abort();
    free(name);
    char small[8];
    mfs_url_redact(url, small, sizeof small);   /* cut to fit, terminated */
    if (strlen(small) >= sizeof small)
        abort();
}

static bool scheme_is(const char *url, const char *scheme)
{
    size_t n = strlen(scheme);
    return strncasecmp(url, scheme, n) == 0 && strncmp(url + n, "://", 3) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    char *from = piece(&p, end), *to = piece(&p, end), *home = piece(&p, end);
    shown(from);
    shown(to);
    char origin[MAX_URL + 32], o_to[MAX_URL + 32], o_home[MAX_URL + 32];
    if (mfs_url_origin(from, origin, sizeof origin) &&
        (strstr(origin, "://") == NULL || strchr(strstr(origin, "://") + 3, ':') == NULL))
        abort();
    char why[512];
    for (int cred = 0; cred < 2; cred++) {
        why[0] = '\0';
        mfs_redirect_verdict v = mfs_redirect_judge(from, to, home, cred, why, sizeof why);
        if (v == MFS_REDIRECT_REFUSE) {
            if (why[0] == '\0')
                abort();
            continue;
        }
        if (v != MFS_REDIRECT_FOLLOW && v != MFS_REDIRECT_FOLLOW_BARE)
            abort();
        if (!scheme_is(to, "http") && !scheme_is(to, "https"))
            abort();
        if (scheme_is(from, "https") && !scheme_is(to, "https"))
            abort();
        const char *rest = strstr(to, "://") + 3;
        if (memchr(rest, '@', strcspn(rest, "/?#")) != NULL)
            abort();
        bool same = mfs_url_origin(to, o_to, sizeof o_to) &&
                    mfs_url_origin(home, o_home, sizeof o_home) && strcmp(o_to, o_home) == 0;
        if (v == MFS_REDIRECT_FOLLOW && !same)
            abort();   /* credentials off their origin */
        if (cred && v == MFS_REDIRECT_FOLLOW_BARE)
            abort();   /* a credentialed request goes nowhere else */
    }
    free(from);
    free(to);
    free(home);
    return 0;
}
