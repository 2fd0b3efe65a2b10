/* What the Hub answers, parsed from its untrusted bytes: the headers of a
 * resolve (Location, X-Repo-Commit, X-Linked-Size, X-Linked-Etag, ETag,
 * X-Error-Code), a listing page's `Link: <URL>; rel="next"`, the JSON of
 * a tree page ([{"type", "path", "size"}...]) and of a revision
 * ({"sha": ...}). Every value is bounded: a longer one is refused. */
#ifndef MFS_HUB_PARSE_H
#define MFS_HUB_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define MFS_HUB_HVAL_MAX 4096    /* bytes of a header value kept */

typedef enum mfs_hub_hkind {
    MFS_HUB_H_OTHER,
    MFS_HUB_H_STATUS,            /* "HTTP/...": a new response begins */
    MFS_HUB_H_LOCATION,
    MFS_HUB_H_COMMIT,            /* X-Repo-Commit */
    MFS_HUB_H_LINKED_SIZE,       /* X-Linked-Size: number holds it */
    MFS_HUB_H_LINKED_ETAG,       /* X-Linked-Etag */
    MFS_HUB_H_ETAG,
    MFS_HUB_H_ERROR_CODE,        /* X-Error-Code (RepoNotFound, EntryNotFound, ...) */
    MFS_HUB_H_LINK,
} mfs_hub_hkind;

/* The kind of header `line` (len bytes, line end included or not) is,
 * and its value (without the blanks around it) as a pointer into the
 * line. A known header whose value is malformed (a size that is not a
 * number) or longer than MFS_HUB_HVAL_MAX is MFS_HUB_H_OTHER. */
mfs_hub_hkind mfs_hub_parse_header(const char *line, size_t len, const char **value,
                                   size_t *vlen, uint64_t *number);

/* The target of the rel="next" link of a Link header's value, copied into
 * out (NUL-terminated); false when there is none or it does not fit. */
bool mfs_hub_link_next(const char *v, size_t len, char *out, size_t size);

typedef struct mfs_hub_entry {
    char *path;
    uint64_t size;
} mfs_hub_entry;

typedef struct mfs_hub_entries {
    mfs_hub_entry *items;
    size_t count;
} mfs_hub_entries;

/* The files of one tree page (entries of "type": "file"; folders are
 * skipped), appended to `out` while it holds fewer than `max` (-1 with e
 * past that). A path that is not a relative path (mfs_path_ok) refuses
 * the page. -1 with e (MFS_E_IO) when the page is not such JSON. */
int mfs_hub_parse_tree(const char *text, size_t len, mfs_hub_entries *out, size_t max,
                       mfs_err *e);
void mfs_hub_entries_free(mfs_hub_entries *l);

/* The commit ("sha": 40 hex digits) of a revision's JSON into out[41]. */
int mfs_hub_parse_revision(const char *text, size_t len, char *out, mfs_err *e);

#endif
