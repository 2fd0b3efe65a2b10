#include "redirect_follow.h"

#include <stdio.h>
#include <stdlib.h>

#include "http_loop.h"
#include "redirect.h"
#include "url_redact.h"
#include "xalloc.h"

/* Sets k up for the hop to r->hop_url (NULL: the first). */
static bool set_up(mfs_redirects *r, const mfs_curl_api *c, CURL *k)
{
    bool ready = r->h->setup(r->h->arg, k, r->hop_url, r->with_creds);
    /* Whatever the setup did: the next hop is this loop's to judge. */
    c->easy_setopt(k, CURLOPT_FOLLOWLOCATION, 0L);
    return ready;
}

bool mfs_redirects_begin(mfs_redirects *r, const mfs_curl_api *c, CURL *k, const mfs_hops *h)
{
    *r = (mfs_redirects){ .h = h, .with_creds = true };
    return set_up(r, c, k);
}

bool mfs_redirects_next(mfs_redirects *r, const mfs_curl_api *c, CURL *k, CURLcode rc, char *why,
                        size_t size)
{
    const mfs_hops *h = r->h;
    why[0] = '\0';
    for (;;) {
        long status = 0;
        char *at = NULL, *loc = NULL;
        c->easy_getinfo(k, CURLINFO_RESPONSE_CODE, &status);
        c->easy_getinfo(k, CURLINFO_EFFECTIVE_URL, &at);
        if (r->home == NULL)
            r->home = mfs_xstrdup(at ? at : h->url);   /* the first hop's: the credentials' */
        bool redirect = rc == CURLE_OK && status >= 300 && status < 400 &&
                        c->easy_getinfo(k, CURLINFO_REDIRECT_URL, &loc) == CURLE_OK &&
                        loc != NULL;
        char *next = NULL;
        if (!redirect) {
            /* the answer itself */
        } else if (r->hop == MFS_MAX_REDIRECTS) {
            char shown[512];
            mfs_url_redact(loc, shown, sizeof shown);
            snprintf(why, size, "more than %d redirects (the last to %s)", MFS_MAX_REDIRECTS,
                     shown);
        } else {
            bool creds = r->with_creds && h->credentialed != NULL && h->credentialed(h->arg);
            mfs_redirect_verdict v = mfs_redirect_judge(at ? at : h->url, loc, r->home, creds,
                                                        why, size);
            if (v != MFS_REDIRECT_REFUSE)
                next = mfs_xstrdup(loc);   /* the handle's string: gone at its reset */
            r->with_creds = v == MFS_REDIRECT_FOLLOW;
        }
        free(r->hop_url);
        r->hop_url = next;
        if (next == NULL) {
            free(r->home);
            r->home = NULL;
            return false;
        }
        r->hop++;
        if (set_up(r, c, k))
            return true;
        rc = CURLE_OUT_OF_MEMORY;   /* judged as the answer: not a redirect */
    }
}

CURLcode mfs_redirect_follow(const mfs_curl_api *c, CURL *k, const mfs_hops *h, char *why,
                             size_t size)
{
    mfs_redirects r;
    CURLcode rc = mfs_redirects_begin(&r, c, k, h) ? mfs_loop_perform(k) : CURLE_OUT_OF_MEMORY;
    while (mfs_redirects_next(&r, c, k, rc, why, size))
        rc = mfs_loop_perform(k);
    return rc;
}
