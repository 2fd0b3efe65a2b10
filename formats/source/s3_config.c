#include "s3_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws_ini.h"
#include "http.h"

/* The environment variable `name` when set and not empty. */
static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? v : NULL;
}

/* An AWS file: the variable's path, else ~/.aws/NAME. 0 with *text NULL
 * when there is none; -1 with e when it cannot be used. */
static int read_aws_file(const char *var, const char *name, char **text, size_t *len, mfs_err *e)
{
    const char *path = env(var);
    char buf[4096], what[64];
    *text = NULL;
    if (path == NULL) {
        const char *home = env("HOME");
        if (home == NULL || (size_t)snprintf(buf, sizeof buf, "%s/.aws/%s", home, name) >= sizeof buf)
            return 0;
        path = buf;
        snprintf(what, sizeof what, "the AWS %s file", name);
    } else {
        snprintf(what, sizeof what, "%s", var);
    }
    return mfs_aws_ini_read(path, what, text, len, e);
}

typedef struct profile {
    char name[128];
    char *cred, *conf;        /* the files' text, or NULL */
    size_t cred_len, conf_len;
    char conf_section[160];   /* "profile NAME", or "default" */
} profile;

/* `key` of the profile: the credentials file first, then the config. */
static bool lookup(const profile *p, const char *key, char *out, size_t size, bool creds_file)
{
    if (creds_file && p->cred != NULL &&
        mfs_aws_ini_get(p->cred, p->cred_len, p->name, key, out, size))
        return true;
    if (p->conf == NULL)
        return false;
    if (mfs_aws_ini_get(p->conf, p->conf_len, p->conf_section, key, out, size))
        return true;
    /* [profile default] is the default profile's too. */
    return strcmp(p->name, "default") == 0 &&
           mfs_aws_ini_get(p->conf, p->conf_len, "profile default", key, out, size);
}

static bool host_safe(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '.'))
            return false;
    return true;
}

static int copy(char *dst, size_t size, const char *src, const char *what, mfs_err *e)
{
    if (strlen(src) >= size)
        return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "%s is longer than %zu bytes", what,
                        size - 1);
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

int mfs_s3_config_load(mfs_s3_config *c, bool no_sign, mfs_err *e)
{
    memset(c, 0, sizeof *c);
    profile p = { .cred = NULL };
    const char *pname = env("AWS_PROFILE");
    bool named = pname != NULL;
    int rc = -1;
    if (pname == NULL)
        pname = "default";
    if (strlen(pname) >= sizeof p.name) {
        mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "AWS_PROFILE is longer than %zu bytes",
                 sizeof p.name - 1);
        return -1;
    }
    snprintf(p.name, sizeof p.name, "%s", pname);
    snprintf(p.conf_section, sizeof p.conf_section, strcmp(pname, "default") == 0 ? "%s"
             : "profile %s", pname);
    if (read_aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials", &p.cred, &p.cred_len, e) != 0 ||
        read_aws_file("AWS_CONFIG_FILE", "config", &p.conf, &p.conf_len, e) != 0)
        goto out;

    const char *v;
    if ((v = env("AWS_REGION")) != NULL || (v = env("AWS_DEFAULT_REGION")) != NULL) {
        if (copy(c->region, sizeof c->region, v, "the region", e) != 0)
            goto out;
    } else if (!lookup(&p, "region", c->region, sizeof c->region, false) || !c->region[0]) {
        snprintf(c->region, sizeof c->region, "us-east-1");
    }
    if (!host_safe(c->region)) {
        mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "the region '%s' is not one", c->region);
        goto out;
    }
    if ((v = env("AWS_ENDPOINT_URL_S3")) != NULL || (v = env("AWS_ENDPOINT_URL")) != NULL) {
        if (copy(c->endpoint, sizeof c->endpoint, v, "the endpoint URL", e) != 0)
            goto out;
    } else {
        lookup(&p, "endpoint_url", c->endpoint, sizeof c->endpoint, false);
    }
    if (c->endpoint[0] != '\0') {
        size_t n = strlen(c->endpoint);
        while (n > 0 && c->endpoint[n - 1] == '/')
            c->endpoint[--n] = '\0';
        /* The endpoint shows in messages: no password in it. */
        if (!mfs_is_http_url(c->endpoint) || mfs_url_has_userinfo(c->endpoint) ||
            strpbrk(c->endpoint, "?#") != NULL) {
            mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "the S3 endpoint URL is not an "
                     "http(s)://HOST[:PORT][/PATH] (with no user:password@)");
            goto out;
        }
    }
    if (no_sign) {
        rc = 0;
        goto out;
    }
    const char *id = env("AWS_ACCESS_KEY_ID"), *secret = env("AWS_SECRET_ACCESS_KEY");
    if (id != NULL || secret != NULL) {
        if (id == NULL || secret == NULL) {
            mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "AWS_ACCESS_KEY_ID and "
                     "AWS_SECRET_ACCESS_KEY must be set together");
            goto out;
        }
        if (copy(c->key_id, sizeof c->key_id, id, "AWS_ACCESS_KEY_ID", e) != 0 ||
            copy(c->secret, sizeof c->secret, secret, "AWS_SECRET_ACCESS_KEY", e) != 0)
            goto out;
        v = env("AWS_SESSION_TOKEN");
        if (v != NULL && copy(c->token, sizeof c->token, v, "AWS_SESSION_TOKEN", e) != 0)
            goto out;
        snprintf(c->from, sizeof c->from, "AWS_ACCESS_KEY_ID");
        c->sign = true;
    } else if (lookup(&p, "aws_access_key_id", c->key_id, sizeof c->key_id, true) &&
               lookup(&p, "aws_secret_access_key", c->secret, sizeof c->secret, true) &&
               c->key_id[0] && c->secret[0]) {
        lookup(&p, "aws_session_token", c->token, sizeof c->token, true);
        snprintf(c->from, sizeof c->from, "AWS_PROFILE (profile '%.100s')", p.name);
        c->sign = true;
    } else if (named) {
        mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "AWS_PROFILE '%s' has no aws_access_key_id "
                 "and aws_secret_access_key in the AWS credentials or config file", p.name);
        goto out;
    } else {
        memset(c->key_id, 0, sizeof c->key_id);
        memset(c->secret, 0, sizeof c->secret);
    }
    /* ':' ends the key id in the user:password curl signs with. */
    if (c->sign && strchr(c->key_id, ':') != NULL) {
        mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "the AWS access key id has a ':'");
        goto out;
    }
    rc = 0;
out:
    if (p.cred != NULL) {
        memset(p.cred, 0, p.cred_len);
        free(p.cred);
    }
    if (p.conf != NULL) {
        memset(p.conf, 0, p.conf_len);
        free(p.conf);
    }
    if (rc != 0)
        mfs_s3_config_wipe(c);
    return rc;
}

void mfs_s3_config_wipe(mfs_s3_config *c)
{
    /* volatile: the stores are not dropped as dead. */
    volatile char *s = c->secret, *t = c->token;
    for (size_t i = 0; i < sizeof c->secret; i++)
        s[i] = 0;
    for (size_t i = 0; i < sizeof c->token; i++)
        t[i] = 0;
}
