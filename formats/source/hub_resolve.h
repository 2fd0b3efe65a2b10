/* Where a Hub file's bytes are: one request (HEAD, redirects not
 * followed) to ENDPOINT/ORG/REPO/resolve/REV/PATH with the token. An LFS
 * file answers 302 to another host (a signed URL that expires) with
 * X-Linked-Size and X-Linked-Etag (its sha256); a small file answers 200
 * and is read from the Hub itself. Either way X-Repo-Commit names the
 * commit. A relative redirect (a renamed repository) stays on the Hub and
 * is followed, at most 5 times. The resolve endpoint is rate-limited:
 * this runs once per file and mount, and again only when the signed URL
 * expired. */
#ifndef MFS_HUB_RESOLVE_H
#define MFS_HUB_RESOLVE_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "http.h"
#include "hub_env.h"
#include "hub_url.h"

typedef struct mfs_hub_target {
    char *url;               /* where ranged GETs go */
    bool hub_host;           /* on the Hub's host: the token goes with them */
    char commit[41];
    bool size_known;
    uint64_t size;
    char etag[256];          /* X-Linked-Etag, else ETag: the file's identity */
} mfs_hub_target;

/* Resolves r->path at `rev`; -1 with e (MFS_E_IO) naming the HTTP status
 * and what it means (a gated repository, a missing file or revision). */
int mfs_hub_resolve(const mfs_hub_env *env, const mfs_hub_ref *r, const char *rev,
                    const mfs_http_opts *o, mfs_hub_target *t, mfs_err *e);
void mfs_hub_target_free(mfs_hub_target *t);

/* The message end of a refused Hub request (401, 403, 404), or NULL. */
const char *mfs_hub_status_hint(long status, const char *error_code, bool has_token);

/* -1 with e for a Hub answer that is not a success: the status, what
 * the Hub's X-Error-Code says is missing, the hint. */
int mfs_hub_status_fail(mfs_err *e, long status, const char *error_code, bool has_token,
                        const mfs_hub_ref *r, const char *rev);

#endif
