/* Where the Hub is and who asks, from the environment as huggingface_hub
 * reads it: HF_ENDPOINT (default https://huggingface.co), the token
 * (HF_TOKEN, then HUGGING_FACE_HUB_TOKEN, then the file HF_TOKEN_PATH,
 * default $HF_HOME/token, HF_HOME default ~/.cache/huggingface), the
 * Hub's cache (HF_HUB_CACHE, default $HF_HOME/hub) and HF_HUB_OFFLINE. */
#ifndef MFS_HUB_ENV_H
#define MFS_HUB_ENV_H

#include <stdbool.h>

#include "err.h"

typedef struct mfs_hub_env {
    char *endpoint;      /* no trailing '/' */
    char *token;         /* NULL: none; wiped at free */
    char *cache;         /* the Hub's cache folder (may not exist) */
    bool offline;        /* HF_HUB_OFFLINE: no request at all */
} mfs_hub_env;

/* -1 with e (MFS_E_USAGE) when HF_ENDPOINT is no http(s) URL. */
int mfs_hub_env_get(mfs_hub_env *out, mfs_err *e);
void mfs_hub_env_free(mfs_hub_env *v);

#endif
