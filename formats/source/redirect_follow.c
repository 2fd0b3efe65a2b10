#include "redirect_follow.h"

#include <stdio.h>
#include <stdlib.h>

#include "redirect.h"
#include "url_redact.h"
#include "xalloc.h"

CURLcode mfs_redirect_follow(const mfs_curl_api *c, CURL *k, const mfs_hops *h, char *why,
                             size_t size)
{
    char *hop_url = NULL, *home = NULL;
    bool with_creds = true;
    why[0] = '\0';
    for (unsigned hop = 0;; hop++) {
        bool ready = h->setup(h->arg, k, hop_url, with_creds);
        /* Whatever the setup did: the next hop is this loop's to judge. */
        c->easy_setopt(k, CURLOPT_FOLLOWLOCATION, 0L);
        CURLcode rc = ready ? c->easy_perform(k) : CURLE_OUT_OF_MEMORY;
        long status = 0;
        char *at = NULL, *loc = NULL;
        c->easy_getinfo(k, CURLINFO_RESPONSE_CODE, &status);
        c->easy_getinfo(k, CURLINFO_EFFECTIVE_URL, &at);
        if (home == NULL)
            home = mfs_xstrdup(at ? at : h->url);   /* the first hop's: the credentials' */
        bool redirect = rc == CURLE_OK && status >= 300 && status < 400 &&
                        c->easy_getinfo(k, CURLINFO_REDIRECT_URL, &loc) == CURLE_OK &&
                        loc != NULL;
        char *next = NULL;
        if (!redirect) {
            /* the answer itself */
        } else if (hop == MFS_MAX_REDIRECTS) {
            char shown[512];
            mfs_url_redact(loc, shown, sizeof shown);
            snprintf(why, size, "more than %d redirects (the last to %s)", MFS_MAX_REDIRECTS,
                     shown);
        } else {
            bool creds = with_creds && h->credentialed != NULL && h->credentialed(h->arg);
            mfs_redirect_verdict v = mfs_redirect_judge(at ? at : h->url, loc, home, creds, why,
                                                        size);
            if (v != MFS_REDIRECT_REFUSE)
                next = mfs_xstrdup(loc);   /* the handle's string: gone at its reset */
            with_creds = v == MFS_REDIRECT_FOLLOW;
        }
        free(hop_url);
        hop_url = next;
        if (next == NULL) {
            free(home);
            return rc;
        }
    }
}
