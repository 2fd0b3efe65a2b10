#include "hub_env.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "http.h"
#include "xalloc.h"

#define TOKEN_MAX 512

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? v : NULL;
}

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a), k = strlen(b);
    char *s = mfs_xmalloc(n + k + 2);
    memcpy(s, a, n);
    s[n] = '/';
    memcpy(s + n + 1, b, k + 1);
    return s;
}

/* The value without the blanks around it; NULL when nothing is left or
 * it holds a byte a header cannot (a line break would add headers). */
static char *trimmed(const char *s, size_t n)
{
    while (n > 0 && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n'))
        s++, n--;
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        n--;
    if (n == 0 || n > TOKEN_MAX)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return NULL;
    char *t = mfs_xmalloc(n + 1);
    memcpy(t, s, n);
    t[n] = '\0';
    return t;
}

static char *token_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    char buf[TOKEN_MAX + 64];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    char *t = n > 0 ? trimmed(buf, (size_t)n) : NULL;
    explicit_bzero(buf, sizeof buf);
    return t;
}

static bool truthy(const char *v)
{
    return v != NULL && (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 ||
                         strcasecmp(v, "yes") == 0 || strcasecmp(v, "on") == 0);
}

int mfs_hub_env_get(mfs_hub_env *out, mfs_err *e)
{
    memset(out, 0, sizeof *out);
    const char *ep = env("HF_ENDPOINT");
    if (ep == NULL)
        ep = "https://huggingface.co";
    if (!mfs_is_http_url(ep) || mfs_url_has_userinfo(ep))
        return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET,
                        "HF_ENDPOINT is not an http(s) URL without user:password@");
    out->endpoint = mfs_xstrdup(ep);
    for (size_t n = strlen(out->endpoint); n > 0 && out->endpoint[n - 1] == '/'; n--)
        out->endpoint[n - 1] = '\0';

    const char *home = env("HF_HOME");
    char *home_dflt = NULL;
    if (home == NULL) {
        const char *h = env("HOME");
        home_dflt = join(h ? h : "/", ".cache/huggingface");
        home = home_dflt;
    }
    const char *t = env("HF_TOKEN");
    if (t == NULL)
        t = env("HUGGING_FACE_HUB_TOKEN");
    if (t != NULL) {
        out->token = trimmed(t, strlen(t));
    } else {
        const char *tp = env("HF_TOKEN_PATH");
        char *dflt = tp ? NULL : join(home, "token");
        out->token = token_file(tp ? tp : dflt);
        free(dflt);
    }
    const char *cache = env("HF_HUB_CACHE");
    out->cache = cache ? mfs_xstrdup(cache) : join(home, "hub");
    out->offline = truthy(env("HF_HUB_OFFLINE"));
    free(home_dflt);
    return 0;
}

void mfs_hub_env_free(mfs_hub_env *v)
{
    free(v->endpoint);
    if (v->token != NULL)
        explicit_bzero(v->token, strlen(v->token));
    free(v->token);
    free(v->cache);
    memset(v, 0, sizeof *v);
}
