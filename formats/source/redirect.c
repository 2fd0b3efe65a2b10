#include "redirect.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "url_redact.h"

bool mfs_url_origin(const char *url, char *out, size_t size)
{
    bool https = strncasecmp(url, "https://", 8) == 0;
    if (!https && strncasecmp(url, "http://", 7) != 0)
        return false;
    const char *p = url + (https ? 8 : 7);
    size_t auth = strcspn(p, "/?#");
    const char *host = p;
    for (size_t i = auth; i > 0; i--)
        if (p[i - 1] == '@') {
            host = p + i;
            break;
        }
    size_t hlen = (size_t)(p + auth - host);
    /* The port after the last ':' outside an IPv6 literal's brackets. */
    const char *colon = NULL;
    for (size_t i = hlen; i > 0 && host[i - 1] != ']'; i--)
        if (host[i - 1] == ':') {
            colon = host + i - 1;
            break;
        }
    size_t name = colon ? (size_t)(colon - host) : hlen;
    const char *port = colon && colon + 1 < host + hlen ? colon + 1 : NULL;
    size_t plen = port ? (size_t)(host + hlen - port) : 0;
    if (name == 0 || plen > 5)
        return false;
    for (size_t i = 0; i < plen; i++)
        if (port[i] < '0' || port[i] > '9')
            return false;
    int n = snprintf(out, size, "%s://%.*s:%.*s", https ? "https" : "http", (int)name, host,
                     port ? (int)plen : 3, port ? port : https ? "443" : "80");
    if (n < 0 || (size_t)n >= size)
        return false;
    for (char *c = out; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    return true;
}

mfs_redirect_verdict mfs_redirect_judge(const char *from, const char *to, const char *home,
                                        bool credentials, char *why, size_t size)
{
    char shown[512], o_to[512], o_home[512] = "";
    mfs_url_redact(to, shown, sizeof shown);
    if (!mfs_url_origin(to, o_to, sizeof o_to)) {
        snprintf(why, size, "a redirect to %s: not an http(s) URL; not followed", shown);
        return MFS_REDIRECT_REFUSE;
    }
    const char *auth = strstr(to, "://") + 3;
    if (memchr(auth, '@', strcspn(auth, "/?#")) != NULL) {
        snprintf(why, size, "a redirect to %s with a user or password in it; not followed (they "
                 "would be sent to that host)", shown);
        return MFS_REDIRECT_REFUSE;
    }
    if (strncasecmp(from, "https://", 8) == 0 && strncasecmp(to, "https://", 8) != 0) {
        snprintf(why, size, "a redirect from https to %s; not followed (never from https to "
                 "plain http)", shown);
        return MFS_REDIRECT_REFUSE;
    }
    if (mfs_url_origin(home, o_home, sizeof o_home) && strcmp(o_home, o_to) == 0)
        return MFS_REDIRECT_FOLLOW;
    if (credentials) {
        snprintf(why, size, "a redirect to another host (%s); not followed: the request's "
                 "credentials are for %s only", shown, o_home[0] ? o_home : "their own host");
        return MFS_REDIRECT_REFUSE;
    }
    return MFS_REDIRECT_FOLLOW_BARE;
}
