/* Where an s3:// request goes and how it is signed, found the AWS tools'
 * way (README "Remote models"):
 *  - credentials: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (and
 *    AWS_SESSION_TOKEN), else the profile (AWS_PROFILE, else "default")
 *    in the credentials file (AWS_SHARED_CREDENTIALS_FILE, else
 *    ~/.aws/credentials; sections [NAME]), then in the config file
 *    (AWS_CONFIG_FILE, else ~/.aws/config; sections [profile NAME], and
 *    [default]); none found: requests go unsigned;
 *  - region: AWS_REGION, AWS_DEFAULT_REGION, the profile's `region`,
 *    else us-east-1;
 *  - endpoint: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's
 *    `endpoint_url` (path-style: ENDPOINT/BUCKET/KEY), else AWS's own
 *    (https://BUCKET.s3.REGION.amazonaws.com/KEY).
 * The secret and the token are never put in a message. */
#ifndef MFS_S3_CONFIG_H
#define MFS_S3_CONFIG_H

#include <stdbool.h>

#include "err.h"

typedef struct mfs_s3_config {
    char region[64];
    char endpoint[512];       /* no trailing '/'; "" = AWS's own */
    char key_id[256];
    char secret[256];
    char token[4096];         /* AWS_SESSION_TOKEN or the profile's, "" when none */
    bool sign;                /* credentials were found and no_sign_request is off */
    char from[160];           /* where the credentials came from, for a 403's hint */
} mfs_s3_config;

/* Fills `c`; no_sign: -o no_sign_request (no credentials looked up).
 * -1 with e (MFS_E_USAGE) when a setting is unusable: an endpoint that
 * is not http(s):// or carries user:password@, a region with bytes a
 * host name cannot have, a key id without its secret. */
int mfs_s3_config_load(mfs_s3_config *c, bool no_sign, mfs_err *e);

/* Overwrites the secrets before `c` is freed or goes out of scope. */
void mfs_s3_config_wipe(mfs_s3_config *c);

#endif
