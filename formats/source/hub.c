#include "hub.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "curl_lib.h"
#include "hub_cache.h"
#include "hub_env.h"
#include "hub_resolve.h"
#include "hub_url.h"
#include "local.h"
#include "xalloc.h"

bool mfs_is_hub_url(const char *s)
{
    return strncasecmp(s, "hf://", 5) == 0;
}

bool mfs_hub_is_repo(const char *url)
{
    mfs_hub_ref r;
    mfs_err e = { 0 };
    if (mfs_hub_ref_parse(url, &r, &e) != 0)
        return false;
    bool repo = r.path == NULL;
    mfs_hub_ref_free(&r);
    return repo;
}

/* ---- one file -------------------------------------------------------- */

/* The hooks' state: where the bytes are now (a signed URL that expires is
 * replaced by refresh, from any reader's thread). */
typedef struct hub_file {
    pthread_mutex_t mu;
    pthread_mutex_t refresh_mu;   /* one refresh at a time */
    struct timespec refreshed;    /* when the last one ended well (0: never) */
    mfs_hub_env env;
    mfs_hub_ref ref;
    mfs_http_opts o;
    mfs_hub_target t;
} hub_file;

static struct curl_slist *hub_prepare(void *arg, CURL *k, struct curl_slist *hdr)
{
    hub_file *f = arg;
    const mfs_curl_api *c = mfs_curl();
    pthread_mutex_lock(&f->mu);
    c->easy_setopt(k, CURLOPT_URL, f->t.url);
    if (f->t.hub_host && f->env.token != NULL) {
        /* The token is for the Hub's host only: a redirect from there to
         * another host is refused (hub_credentialed), never followed
         * with it. */
        char auth[600];
        if ((size_t)snprintf(auth, sizeof auth, "Authorization: Bearer %s", f->env.token) <
            sizeof auth)
            hdr = c->slist_append(hdr, auth);
        explicit_bzero(auth, sizeof auth);
    }
    pthread_mutex_unlock(&f->mu);
    return hdr;
}

/* Whether hub_prepare sends the token: to the Hub's own host only. */
static bool hub_credentialed(void *arg)
{
    hub_file *f = arg;
    pthread_mutex_lock(&f->mu);
    bool with = f->t.hub_host && f->env.token != NULL;
    pthread_mutex_unlock(&f->mu);
    return with;
}

/* A 401/403 from where the bytes are: the signed URL expired. Resolved
 * again at the pinned commit; the same file must come back. */
/* Several GETs in flight with the old URL all come back refused: the
 * first to get here resolves again, those within this long after take
 * its URL. */
#define REFRESH_SHARED_S 2

static bool hub_refresh(void *arg)
{
    hub_file *f = arg;
    pthread_mutex_lock(&f->refresh_mu);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (f->refreshed.tv_sec != 0 && now.tv_sec - f->refreshed.tv_sec < REFRESH_SHARED_S) {
        pthread_mutex_unlock(&f->refresh_mu);
        return true;
    }
    mfs_hub_target t;
    mfs_err e = { 0 };
    pthread_mutex_lock(&f->mu);
    char commit[41];
    memcpy(commit, f->t.commit, sizeof commit);
    pthread_mutex_unlock(&f->mu);
    if (mfs_hub_resolve(&f->env, &f->ref, commit, &f->o, &t, &e) != 0) {
        pthread_mutex_unlock(&f->refresh_mu);
        return false;
    }
    pthread_mutex_lock(&f->mu);
    bool same = strcmp(t.etag, f->t.etag) == 0 && t.size_known == f->t.size_known &&
                t.size == f->t.size;
    if (same) {
        free(f->t.url);
        f->t.url = t.url;
        f->t.hub_host = t.hub_host;
        t.url = NULL;
    }
    pthread_mutex_unlock(&f->mu);
    mfs_hub_target_free(&t);
    if (same)
        clock_gettime(CLOCK_MONOTONIC, &f->refreshed);
    pthread_mutex_unlock(&f->refresh_mu);
    return same;
}

static const char *hub_hint(void *arg, long status)
{
    hub_file *f = arg;
    return mfs_hub_status_hint(status, NULL, f->env.token != NULL);
}

static void hub_free(void *arg)
{
    hub_file *f = arg;
    pthread_mutex_destroy(&f->mu);
    pthread_mutex_destroy(&f->refresh_mu);
    mfs_hub_env_free(&f->env);
    mfs_hub_ref_free(&f->ref);
    mfs_hub_target_free(&f->t);
    free(f);
}

/* The file from the Hub's cache, when it holds it complete. Named by its
 * URL, as a fetched one is: in messages, and for the drivers that look
 * at the name (a remote sharded index). */
static mfs_src *from_hub_cache(const hub_file *f, const char *url, const char *commit,
                               bool size_known, uint64_t size, mfs_err *e)
{
    char *p = mfs_hub_cache_file(f->env.cache, &f->ref, commit, f->ref.path, size_known, size);
    if (p == NULL)
        return NULL;
    mfs_src *s = mfs_src_local_open(p, e);
    free(p);
    if (s != NULL) {
        free(s->name);
        s->name = mfs_xstrdup(url);
    }
    return s;
}

/* Offline, and the revision is nowhere here. */
static mfs_src *offline_miss(const hub_file *f, mfs_err *e)
{
    mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
             "offline, and revision %.200s of %s/%s is not in the Hub's cache (%.300s) nor the "
             "disk cache", f->ref.rev, f->ref.org, f->ref.name, f->env.cache);
    return NULL;
}

mfs_src *mfs_hub_open(const char *url, const mfs_http_opts *o, mfs_err *e)
{
    hub_file *f = mfs_xcalloc(1, sizeof *f);
    pthread_mutex_init(&f->mu, NULL);
    pthread_mutex_init(&f->refresh_mu, NULL);
    if (o != NULL)
        f->o = *o;
    f->o.cache_dir = NULL;   /* the caller's string: not kept */
    if (mfs_hub_ref_parse(url, &f->ref, e) != 0 || mfs_hub_env_get(&f->env, e) != 0) {
        hub_free(f);
        return NULL;
    }
    if (f->ref.path == NULL) {
        mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "names a repository, not one of its files");
        hub_free(f);
        return NULL;
    }
    bool offline = f->env.offline || (o != NULL && o->offline);
    mfs_src *s = NULL;
    if (offline) {
        /* No request: the commit from the Hub's cache (refs/REV), the
         * bytes from there or from modelfs's own disk cache. */
        if (!mfs_hub_cache_commit(f->env.cache, &f->ref, f->ref.rev, f->t.commit)) {
            s = offline_miss(f, e);
            hub_free(f);
            return s;
        }
        mfs_err ce = { 0 };
        s = from_hub_cache(f, url, f->t.commit, false, 0, &ce);
        if (s != NULL) {
            hub_free(f);
            return s;
        }
        f->t.url = mfs_hub_resolve_url(f->env.endpoint, &f->ref, f->t.commit);
    } else {
        if (mfs_hub_resolve(&f->env, &f->ref, f->ref.rev, &f->o, &f->t, e) != 0) {
            hub_free(f);
            return NULL;
        }
        mfs_err ce = { 0 };
        s = from_hub_cache(f, url, f->t.commit, f->t.size_known, f->t.size, &ce);
        if (s != NULL) {
            hub_free(f);
            return s;
        }
    }
    /* Named in the disk cache by commit and path: the bytes they name
     * never change, so a cached file opens with no request. */
    char *qpath = mfs_hub_quote(f->ref.path, true);
    size_t n = strlen(f->env.endpoint) + strlen(qpath) + 2 * MFS_HUB_NAME_MAX + 80;
    char *cache_name = mfs_xmalloc(n);
    snprintf(cache_name, n, "hf:%s/%s/%s/%s@%s/%s", f->env.endpoint,
             f->ref.dataset ? "datasets" : "models", f->ref.org, f->ref.name, f->t.commit, qpath);
    free(qpath);
    bool size_known = f->t.size_known;
    uint64_t size = f->t.size;
    char *target = mfs_xstrdup(f->t.url);
    mfs_http_hooks hk = {
        .arg = f, .prepare = hub_prepare, .refresh = hub_refresh, .hint = hub_hint,
        .credentialed = hub_credentialed,
        .free = hub_free, .shown = url, .cache_name = cache_name, .immutable = true,
    };
    mfs_http_opts ho = o ? *o : (mfs_http_opts){ 0 };
    ho.offline = offline;
    s = mfs_src_http_open_hooked(target, &ho, &hk, e);
    free(target);
    free(cache_name);
    if (s == NULL)
        return NULL;   /* f freed by the source's failed open */
    if (size_known && s->size != size) {
        mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                 "the Hub says %" PRIu64 " bytes, where it redirects has %" PRIu64, size,
                 s->size);
        mfs_src_close(s);
        return NULL;
    }
    return s;
}
