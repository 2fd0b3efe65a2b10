#include "hub_resolve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hub_request.h"
#include "redirect.h"
#include "xalloc.h"

#define MAX_HOPS 5

const char *mfs_hub_status_hint(long status, const char *error_code, bool has_token)
{
    if (error_code != NULL && strcmp(error_code, "GatedRepo") == 0 && has_token)
        return "gated repository, and this token was not granted access";
    if (status == 401)
        return has_token ? "the token (HF_TOKEN) is refused for this repository"
                         : "gated repository, set HF_TOKEN";
    if (status == 403)
        return has_token ? "gated repository, and this token was not granted access"
                         : "gated repository, set HF_TOKEN";
    return NULL;
}

int mfs_hub_status_fail(mfs_err *e, long status, const char *error_code, bool has_token,
                        const mfs_hub_ref *r, const char *rev)
{
    const char *hint = mfs_hub_status_hint(status, error_code, has_token);
    if (hint != NULL)
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "%ld: %s", status, hint);
    if (status == 404) {
        const char *ec = error_code ? error_code : "";
        if (strcmp(ec, "RepoNotFound") == 0)
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "404: no repository %s/%s",
                            r->org, r->name);
        if (strcmp(ec, "RevisionNotFound") == 0)
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "404: no revision %.200s in %s/%s",
                            rev, r->org, r->name);
        if (strcmp(ec, "EntryNotFound") == 0 && r->path != NULL)
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "404: no file %.200s in %s/%s at %.200s",
                            r->path, r->org, r->name, rev);
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                        "404: not found (repository %s/%s, revision %.200s%s%.200s)", r->org,
                        r->name, rev, r->path ? ", file " : "", r->path ? r->path : "");
    }
    return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "HTTP %ld from the Hub", status);
}

int mfs_hub_resolve(const mfs_hub_env *env, const mfs_hub_ref *r, const char *rev,
                    const mfs_http_opts *o, mfs_hub_target *t, mfs_err *e)
{
    memset(t, 0, sizeof *t);
    char hub_origin[512];
    if (!mfs_hub_origin(env->endpoint, hub_origin, sizeof hub_origin))
        return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "HF_ENDPOINT is not an http(s) URL");
    char *url = mfs_hub_resolve_url(env->endpoint, r, rev);
    char commit[64] = "";   /* X-Repo-Commit of any hop */
    for (int hop = 0;; hop++) {
        mfs_hub_reply a;
        if (mfs_hub_request(url, env->token, true, 0, o, &a, e) != 0) {
            free(url);
            return -1;
        }
        mfs_hub_reply_free(&a);
        if (a.commit[0])
            memcpy(commit, a.commit, sizeof commit);
        if (a.status >= 300 && a.status < 400) {
            char *next = a.location[0] ? mfs_hub_url_join(url, a.location) : NULL;
            if (next == NULL) {
                free(url);
                return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                                "the Hub answered %ld with no usable Location", a.status);
            }
            /* Judged as every redirect is (redirect.h): never from https
             * to http, no user:password; on the Hub's origin it is asked
             * again with the token, elsewhere it is where the bytes are,
             * read with no token (hub.c). */
            char why[600];
            mfs_redirect_verdict v = mfs_redirect_judge(url, next, env->endpoint, false, why,
                                                        sizeof why);
            if (v == MFS_REDIRECT_REFUSE) {
                free(next);
                free(url);
                return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "the Hub's resolve: %s", why);
            }
            bool on_hub = v == MFS_REDIRECT_FOLLOW;
            if (on_hub && hop + 1 < MAX_HOPS) {
                /* A renamed repository: asked again there, token and all. */
                free(url);
                url = next;
                continue;
            }
            if (on_hub) {
                free(next);
                free(url);
                return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "more than %d redirects on the Hub",
                                MAX_HOPS);
            }
            free(url);
            t->url = next;
        } else if (a.status == 200 || a.status == 206) {
            t->url = url;   /* a small file the Hub serves itself */
            t->hub_host = true;
        } else {
            free(url);
            return mfs_hub_status_fail(e, a.status, a.error_code[0] ? a.error_code : NULL,
                                       env->token != NULL, r, rev);
        }
        if (mfs_hub_is_commit(commit))
            memcpy(t->commit, commit, 41);
        else if (mfs_hub_is_commit(rev))
            memcpy(t->commit, rev, 41);
        else {
            mfs_hub_target_free(t);
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                            "the Hub did not say which commit %.200s is (no X-Repo-Commit)", rev);
        }
        if (a.has_linked_size) {
            t->size_known = true;
            t->size = a.linked_size;
        } else if (t->hub_host && a.content_length >= 0) {
            t->size_known = true;
            t->size = (uint64_t)a.content_length;
        }
        snprintf(t->etag, sizeof t->etag, "%s", a.linked_etag[0] ? a.linked_etag : a.etag);
        return 0;
    }
}

void mfs_hub_target_free(mfs_hub_target *t)
{
    free(t->url);
    t->url = NULL;
}
