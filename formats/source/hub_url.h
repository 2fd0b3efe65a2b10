/* hf:// URLs: hf://[models/|datasets/]ORG/REPO[@REVISION][/PATH], parsed
 * and turned into the Hub's request URLs and cache paths.
 *
 * ORG and REPO are names of [A-Za-z0-9._-] (at most 96 bytes each), so
 * they go into request URLs and cache folder names as they are. The
 * revision ends at the first '/' after '@': a revision with '/' in it
 * (refs/pr/1) is written percent-encoded (@refs%2Fpr%2F1) and decoded
 * here. PATH is the file as the repository stores it ('/'-separated, no
 * "..", no empty part); it is encoded when a request is made. */
#ifndef MFS_HUB_URL_H
#define MFS_HUB_URL_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define MFS_HUB_NAME_MAX 96
#define MFS_HUB_REV_MAX 256

typedef struct mfs_hub_ref {
    bool dataset;                        /* datasets/ (else models/) */
    char org[MFS_HUB_NAME_MAX + 1];
    char name[MFS_HUB_NAME_MAX + 1];
    char rev[MFS_HUB_REV_MAX + 1];       /* decoded; "main" when not given */
    bool rev_given;
    char *path;                          /* NULL: the repository itself */
} mfs_hub_ref;

/* Parses `url`; -1 with e (MFS_E_USAGE) naming what is wrong. */
int mfs_hub_ref_parse(const char *url, mfs_hub_ref *out, mfs_err *e);
void mfs_hub_ref_free(mfs_hub_ref *r);

/* True when `rev` is a full commit id (40 lowercase hex digits). */
bool mfs_hub_is_commit(const char *rev);

/* `s` percent-encoded into a new string: unreserved bytes kept, and '/'
 * too when keep_slash (Python's quote(s, safe="/") and quote(s, safe="")). */
char *mfs_hub_quote(const char *s, bool keep_slash);

/* ENDPOINT[/datasets]/ORG/REPO/resolve/REV/PATH (rev quoted whole). */
char *mfs_hub_resolve_url(const char *endpoint, const mfs_hub_ref *r, const char *rev);
/* ENDPOINT/api/{models|datasets}/ORG/REPO/WHAT/REV (rev quoted whole). */
char *mfs_hub_api_url(const char *endpoint, const mfs_hub_ref *r, const char *what,
                      const char *rev, const char *query);
/* hf://[datasets/]ORG/REPO@REV/PATH (rev quoted whole): a file of a listing. */
char *mfs_hub_file_url(const mfs_hub_ref *r, const char *rev, const char *path);

/* The scheme, host and port of an http(s) URL ("https://h:1"), into out;
 * false when it is none. */
bool mfs_hub_origin(const char *url, char *out, size_t size);

/* `loc` (a Location, a Link target) made absolute against the URL `base`
 * it came from; NULL when it cannot be (a scheme-relative "//host"). */
char *mfs_hub_url_join(const char *base, const char *loc);

#endif
