/* Files of a Hugging Face Hub repository:
 * hf://[models/|datasets/]ORG/REPO[@REVISION][/PATH]. The revision is
 * resolved once to its commit; each file is resolved once per mount and
 * read by range from where the Hub redirects (the token goes to the Hub
 * host only); a file already complete in the Hub's own cache is mapped
 * from there. */
#ifndef MFS_HUB_H
#define MFS_HUB_H

#include <stdbool.h>

#include "err.h"
#include "http.h"
#include "remote.h"
#include "source.h"

bool mfs_is_hub_url(const char *s);
/* hf://ORG/REPO[@REV] with no PATH: the repository's model files. */
bool mfs_hub_is_repo(const char *url);
mfs_src *mfs_hub_open(const char *url, const mfs_http_opts *o, mfs_err *e);
int mfs_hub_list(const char *url, const mfs_http_opts *o, mfs_remote_listing *out, mfs_err *e);

#endif
