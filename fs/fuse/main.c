/* modelfs MODEL MOUNTPOINT: loads the model, builds the tree, mounts it.
 *
 * Everything that can fail because of the model happens before the mount,
 * so errors reach the terminal with their exit code. Without -f the process
 * forks after mounting; the parent returns only once the daemon has served
 * a first request (the mount is usable on the caller's next line). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "load_models.h"
#include "registry.h"
#include "http.h"
#include "remote.h"
#include "file.h"
#include "inflight.h"
#include "multi.h"
#include "ll.h"
#include "open_files.h"
#include "log.h"
#include "opts.h"
#include "strbuf.h"
#include "url_redact.h"

static const char *prog = "modelfs";

/* How long the parent waits for the daemon to come up. */
#define READY_TIMEOUT_MS 60000

struct cli {
    const char **paths;     /* MODEL... MOUNTPOINT: every non-option argument */
    size_t npaths;
    const char *model;      /* the first MODEL (the file system's name) */
    const char *mountpoint;
    int help;
    int version;
    char *cache_size;   /* -o cache_size=SIZE */
    char *links_dir;    /* -o links_dir=DIR */
    char *fetch_max;    /* -o fetch_max=SIZE */
    char *fetch_timeout;    /* -o fetch_timeout=SECONDS */
    char *fetch_reserve;    /* -o fetch_reserve=SIZE */
    char *cache_dir;    /* -o cache_dir=DIR */
    char *cache_max;    /* -o cache_max=SIZE */
    int offline;        /* -o offline */
    int no_sign_request;    /* -o no_sign_request */
};

enum { KEY_HELP, KEY_VERSION };

static const struct fuse_opt cli_opts[] = {
    { "cache_size=%s", offsetof(struct cli, cache_size), 0 },
    { "links_dir=%s", offsetof(struct cli, links_dir), 0 },
    { "fetch_max=%s", offsetof(struct cli, fetch_max), 0 },
    { "fetch_timeout=%s", offsetof(struct cli, fetch_timeout), 0 },
    { "fetch_reserve=%s", offsetof(struct cli, fetch_reserve), 0 },
    { "cache_dir=%s", offsetof(struct cli, cache_dir), 0 },
    { "cache_max=%s", offsetof(struct cli, cache_max), 0 },
    { "offline", offsetof(struct cli, offline), 1 },
    { "no_sign_request", offsetof(struct cli, no_sign_request), 1 },
    FUSE_OPT_KEY("-h", KEY_HELP),
    FUSE_OPT_KEY("--help", KEY_HELP),
    FUSE_OPT_KEY("-V", KEY_VERSION),
    FUSE_OPT_KEY("--version", KEY_VERSION),
    FUSE_OPT_END,
};

static int cli_proc(void *data, const char *arg, int key, struct fuse_args *out)
{
    (void)out;
    struct cli *c = data;
    switch (key) {
    case KEY_HELP:
        c->help = 1;
        return 0;
    case KEY_VERSION:
        c->version = 1;
        return 0;
    case FUSE_OPT_KEY_NONOPT: {
        /* The last one is the mount point: known only at the end. */
        const char **p = realloc(c->paths, (c->npaths + 1) * sizeof *p);
        if (p == NULL)
            return -1;
        c->paths = p;
        c->paths[c->npaths++] = arg;
        return 0;
    }
    default:
        return 1;
    }
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s [options] MODEL MOUNTPOINT\n"
            "       %s [options] MODEL... MOUNTPOINT\n"
            "       %s [options] DIR MOUNTPOINT\n"
            "Mount a machine-learning model file as a read-only directory tree.\n"
            "\n"
            "  MODEL           a model file; the format is recognised by its bytes\n"
            "                  (%s); or the http:// or https:// URL of one\n"
            "                  (fetched by byte ranges, as reads need it), or\n"
            "                  s3://BUCKET/KEY, an S3 object (s3://BUCKET/PREFIX/:\n"
            "                  the models below it), or\n"
            "                  hf://ORG/REPO[@REV]/PATH, a Hugging Face Hub file\n"
            "                  (hf://ORG/REPO[@REV]: the repository's models)\n"
            "  MODEL...        several: each is a folder named after its file, with\n"
            "                  models.json listing them; each loads on first use and one\n"
            "                  that fails shows a folder with an ERROR file\n"
            "  DIR             a folder of models: every model file below it (found by\n"
            "                  its bytes) is a folder at its path; other files are not shown\n"
            "  MOUNTPOINT      an existing directory\n"
            "\n"
            "options:\n"
            "  -f              stay in the foreground\n"
            "  -d              debug output (implies -f)\n"
            "  -s              single-threaded\n"
            "  -o OPT[,OPT...] mount options: FUSE's (e.g. allow_other) and modelfs's:\n"
            "    cache_size=SIZE  memory for decoded (compressed) files, open or not, with\n"
            "                     K, M or G (default a quarter of RAM, at least 256M, and\n"
            "                     at most 16 times the models' size but at least 768M);\n"
            "                     an open that does not fit gets ENOMEM and a log line\n"
            "    links_dir=DIR    folder of files named by their sha256, for Carton LINKS\n"
            "    fetch_max=SIZE   most bytes (decoded) one fetched Carton LINKS file may\n"
            "                     have (default 16G)\n"
            "    fetch_timeout=SECONDS  time for fetching one LINKS file, all its URLs\n"
            "                     together (default 3600)\n"
            "    fetch_reserve=SIZE  stop a fetch before links_dir's file system has less\n"
            "                     than this free (default 1G, or 5%% of it if less)\n"
            "    cache_dir=DIR    where blocks of remote models are kept between mounts\n"
            "                     (default $XDG_CACHE_HOME/modelfs, else ~/.cache/modelfs)\n"
            "    cache_max=SIZE   most bytes cache_dir may take (default 10G)\n"
            "    offline          remote models from cache_dir only: no request\n"
            "    no_sign_request  s3:// requests unsigned (a public bucket): no AWS\n"
            "                     credentials looked up\n"
            "  -h, --help      this text and FUSE's options\n"
            "  -V, --version   version\n"
            "\n"
            "Unmount with: fusermount3 -u MOUNTPOINT (or SIGINT/SIGTERM to a foreground modelfs).\n"
            "MODEL may also be a folder holding an unpacked carton.\n"
            "Exit codes: 0 ok, 1 internal error, 2 usage, 3 cannot read MODEL,\n"
            "4 not a recognised model, 5 corrupt model, 6 mount failed.\n",
            prog, prog, prog, mfs_format_names());
}

/* -o NAME=VALUE as a size above 0, when given; false after saying why. */
static bool size_opt(const char *name, const char *value, uint64_t *out)
{
    if (value == NULL || (mfs_parse_size(value, out) && *out > 0))
        return true;
    fprintf(stderr, "%s: %s=%s: not a size above 0 (e.g. 512M)\n", prog, name, value);
    return false;
}

/* fsname=modelfs:PATH, with the characters the option parser treats
 * specially escaped; a URL's query redacted (/proc/mounts is
 * world-readable, and a presigned URL's query holds its signature). */
static char *fsname_opt(const char *model)
{
    mfs_strbuf sb = { 0 };
    mfs_sb_adds(&sb, "-ofsname=modelfs:");
    char *shown = mfs_url_redacted(model);
    for (const char *p = shown; *p; p++) {
        if (*p == ',' || *p == '\\')
            mfs_sb_addc(&sb, '\\');
        mfs_sb_addc(&sb, *p);
    }
    free(shown);
    return mfs_sb_take(&sb, NULL);
}

/* Daemonizing: the parent waits on a pipe for one status byte. */
static int ready_fd = -1;

static void daemon_ready(char status)
{
    if (ready_fd < 0)
        return;
    if (status == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, STDIN_FILENO);
            dup2(null, STDOUT_FILENO);
            dup2(null, STDERR_FILENO);
            if (null > STDERR_FILENO)
                close(null);
        }
    }
    ssize_t w = write(ready_fd, &status, 1);
    (void)w;
    close(ready_fd);
    ready_fd = -1;
}

/* Returns in the child; the parent exits with the daemon's verdict. */
static int daemonize(void)
{
    int p[2];
    if (pipe(p) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0) {
        close(p[1]);
        struct pollfd pfd = { .fd = p[0], .events = POLLIN };
        char status = 1;
        int r = poll(&pfd, 1, READY_TIMEOUT_MS);
        if (r <= 0 || read(p[0], &status, 1) != 1) {
            fprintf(stderr, "%s: the daemon did not come up\n", prog);
            _exit(mfs_exit_code(MFS_E_MOUNT));
        }
        _exit(mfs_exit_code(status == 0 ? MFS_OK : MFS_E_MOUNT));
    }
    close(p[0]);
    ready_fd = p[1];
    setsid();
    if (chdir("/") != 0)
        return -1;
    return 0;
}

/* Kernel read-ahead for this mount (its bdi): with 4 MiB, sequential reads
 * keep several 1 MiB requests in flight for the worker threads; measured
 * better than 1 MiB and than 16 MiB (bench/bench.py). A mount of a remote
 * model keeps the kernel's 128 KiB: the remote source fetches ahead of a
 * reader on its own (readahead.c), and the kernel's read-around of each
 * page fault of a mapping (safe_open) would fetch 2 MiB on either side
 * of every tensor touched (bench/remote_bench.py, the mmap trace).
 * Best effort: needs root. */
#define MFS_READAHEAD_KB 4096
#define MFS_REMOTE_READAHEAD_KB 128

static bool any_remote;   /* a model of the mount is fetched */

static void set_readahead(dev_t dev)
{
    char path[64];
    snprintf(path, sizeof path, "/sys/class/bdi/%u:%u/read_ahead_kb", major(dev), minor(dev));
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return;
    char kb[16];
    int n = snprintf(kb, sizeof kb, "%u", any_remote ? MFS_REMOTE_READAHEAD_KB : MFS_READAHEAD_KB);
    ssize_t w = write(fd, kb, (size_t)n);
    (void)w;
    close(fd);
}

/* Runs beside the session loop: the stat() is served by the loop, and it
 * can only complete after the kernel's INIT, so once it returns the mount
 * works and the kernel has settled its read-ahead (which we then raise). */
static void *ready_thread(void *arg)
{
    const char *mountpoint = arg;
    struct stat st;
    if (stat(mountpoint, &st) == 0) {
        set_readahead(st.st_dev);
        daemon_ready(0);
    } else {
        fprintf(stderr, "%s: %s: mounted but not usable: %s\n", prog, mountpoint, strerror(errno));
        daemon_ready(1);
    }
    return NULL;
}

/* The session, for remote fetches to see it end (mfs_http_set_stop); and
 * whether its loop returned: libfuse's loop resets the session's "exited"
 * as it returns, and fetches must still stop after that. */
static struct fuse_session *the_session;
static atomic_bool loop_done;

static bool session_ended(void)
{
    return atomic_load(&loop_done) || (the_session != NULL && fuse_session_exited(the_session));
}

static int serve(struct fuse_session *se, const struct fuse_cmdline_opts *o)
{
    the_session = se;
    mfs_http_set_stop(session_ended);
    pthread_t t;
    if (pthread_create(&t, NULL, ready_thread, o->mountpoint) != 0) {
        daemon_ready(1);
        return 1;
    }
    pthread_detach(t);
    if (o->singlethread) {
        int r = fuse_session_loop(se);
        atomic_store(&loop_done, true);
        mfs_http_stop();   /* reads waiting on remote bytes are answered now */
        return r;
    }
    struct fuse_loop_config *cfg = fuse_loop_cfg_create();
    fuse_loop_cfg_set_clone_fd(cfg, (unsigned)o->clone_fd);
    /* fuse_parse_cmdline leaves these at -1 unless given with -o; libfuse
     * 3.14 complains when handed -1, so pass only real values. */
    if (o->max_threads > 0 && o->max_threads <= 100000)
        fuse_loop_cfg_set_max_threads(cfg, o->max_threads);
    if (o->max_idle_threads <= 100000)
        fuse_loop_cfg_set_idle_threads(cfg, o->max_idle_threads);
    int r = fuse_session_loop_mt(se, cfg);
    atomic_store(&loop_done, true);
    mfs_http_stop();   /* reads waiting on remote bytes are answered now */
    fuse_loop_cfg_destroy(cfg);
    return r;
}

int main(int argc, char **argv)
{
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct cli cli = { 0 };
    struct fuse_cmdline_opts o = { 0 };
    int rc = mfs_exit_code(MFS_E_USAGE);  /* until the command line is taken */
    mfs_log_set_program(prog);  /* the layers' messages say whose they are */
    mfs_raise_open_files();  /* a descriptor per loaded model of a folder */

    if (fuse_opt_parse(&args, &cli, cli_opts, cli_proc) != 0)
        goto out_args;
    if (cli.help) {
        usage(stdout);
        printf("\nFUSE options:\n");
        fuse_cmdline_help();
        fuse_lowlevel_help();
        rc = mfs_exit_code(MFS_OK);
        goto out_args;
    }
    if (cli.version) {
        printf("modelfs %s (libfuse %s)\n", MODELFS_VERSION, fuse_pkgversion());
        rc = mfs_exit_code(MFS_OK);
        goto out_args;
    }
    if (cli.npaths < 2) {
        fprintf(stderr, "%s: expected MODEL and MOUNTPOINT\n", prog);
        usage(stderr);
        goto out_args;
    }
    cli.model = cli.paths[0];
    cli.mountpoint = cli.paths[cli.npaths - 1];
    size_t nmodels = cli.npaths - 1;
    struct stat mst;
    /* The models first: a missing one is what went wrong (exit 3), even
     * when the mount point is missing too. */
    for (size_t i = 0; i < nmodels; i++) {
        if (mfs_is_remote(cli.paths[i]) && mfs_url_has_userinfo(cli.paths[i])) {
            /* Not echoed: the password would be in the message too. */
            fprintf(stderr, "%s: model %zu: a URL with a user or password is refused (it would "
                    "show in messages and /proc/mounts)\n", prog, i + 1);
            rc = mfs_exit_code(MFS_E_USAGE);
            goto out_args;
        }
        any_remote |= mfs_is_remote(cli.paths[i]);
        if (!mfs_is_remote(cli.paths[i]) && stat(cli.paths[i], &mst) != 0) {
            fprintf(stderr, "%s: %s: cannot open: %s\n", prog, cli.paths[i], strerror(errno));
            rc = mfs_exit_code(MFS_E_IO);
            goto out_args;
        }
    }
    bool no_mp = stat(cli.mountpoint, &mst) != 0;
    if (no_mp || !S_ISDIR(mst.st_mode)) {
        fprintf(stderr, "%s: %s: mount point: %s\n", prog, cli.mountpoint,
                no_mp ? strerror(errno) : "is not a directory");
        rc = mfs_exit_code(MFS_E_MOUNT);
        goto out_args;
    }
    char *fsname = fsname_opt(cli.model);
    /* ro once more at the end: the last of ro/rw wins, and mount.fuse3
     * passes the mount's own "-o rw" when `mount -t fuse.modelfs` is run
     * without ro, which would flag a read-only file system rw. */
    int added = fuse_opt_insert_arg(&args, 1, "-oro,default_permissions,subtype=modelfs,max_read=1048576") |
                fuse_opt_insert_arg(&args, 1, fsname) | fuse_opt_add_arg(&args, cli.mountpoint) |
                fuse_opt_add_arg(&args, "-oro");
    free(fsname);
    if (added != 0 || fuse_parse_cmdline(&args, &o) != 0 || o.mountpoint == NULL) {
        fprintf(stderr, "%s: invalid arguments (try --help)\n", prog);
        goto out_opts;
    }

    uint64_t cache_size = mfs_content_default_cap();
    if (cli.cache_size != NULL && !mfs_parse_size(cli.cache_size, &cache_size)) {
        fprintf(stderr, "%s: cache_size=%s: not a size (e.g. 512M)\n", prog, cli.cache_size);
        goto out_opts;
    }
    mfs_load_opts lopts = { .links_dir = cli.links_dir, .cache_dir = cli.cache_dir,
                            .offline = cli.offline != 0,
                            .no_sign_request = cli.no_sign_request != 0 };
    if (!size_opt("cache_max", cli.cache_max, &lopts.cache_max))
        goto out_opts;
    if (!size_opt("fetch_max", cli.fetch_max, &lopts.fetch_max) ||
        !size_opt("fetch_reserve", cli.fetch_reserve, &lopts.fetch_reserve))
        goto out_opts;
    if (cli.fetch_timeout && !mfs_parse_seconds(cli.fetch_timeout, &lopts.fetch_timeout)) {
        fprintf(stderr, "%s: fetch_timeout=%s: not a number of seconds above 0\n", prog,
                cli.fetch_timeout);
        goto out_opts;
    }
    /* libfuse checks its options (allow_other, ...; an unknown one is
     * named on stderr) as it makes the session: made now, so a bad option
     * is found before a model is loaded, a remote one fetched. The session
     * is used once the tree is ready. */
    /* A remote mount's st_blksize is its kernel read-ahead: Python's
     * open() reads st_blksize at its first read, and 1 MiB of a
     * safetensors for its 8-byte length made the read-ahead take the
     * reader for a stream and fetch the first tensor whole
     * (bench/loaders_bench.py, 3 of 100). */
    mfs_mount fs = { .uid = getuid(), .gid = getgid(),
                     .blksize = any_remote ? MFS_REMOTE_READAHEAD_KB << 10 : 0 };
    struct fuse_session *se = fuse_session_new(&args, &mfs_ll_ops, sizeof mfs_ll_ops, &fs);
    if (se == NULL) {
        fprintf(stderr, "%s: invalid FUSE options (try --help)\n", prog);
        rc = mfs_exit_code(MFS_E_USAGE);
        goto out_opts;
    }
    mfs_forest forest;
    mfs_models held;
    /* One model is loaded now, so a bad one fails the mount with its code. */
    int code = mfs_models_load(&held, &forest, cli.paths, nmodels, &lopts,
                               cli.cache_size ? &cache_size : NULL, prog);
    if (code != MFS_OK) {
        rc = mfs_exit_code(code);
        fuse_session_destroy(se);
        goto out_opts;
    }
    fs.forest = &forest;
    if (fuse_set_signal_handlers(se) != 0) {
        rc = mfs_exit_code(MFS_E_INTERNAL);
        goto out_session;
    }
    if (fuse_session_mount(se, o.mountpoint) != 0) {
        fprintf(stderr, "%s: cannot mount on %s\n", prog, o.mountpoint);
        rc = mfs_exit_code(MFS_E_MOUNT);
        goto out_signals;
    }
    if (!o.foreground) {
        if (daemonize() != 0) {
            fprintf(stderr, "%s: cannot daemonize: %s\n", prog, strerror(errno));
            rc = mfs_exit_code(MFS_E_INTERNAL);
            goto out_unmount;
        }
        mfs_log_to_syslog(prog);
    }
    /* libfuse reports the signal that stopped the loop as its result; an
     * unmount by signal is a clean exit. */
    int served = serve(se, &o);
    bool clean = served == 0 || served == SIGINT || served == SIGTERM || served == SIGHUP;
    rc = mfs_exit_code(clean ? MFS_OK : MFS_E_INTERNAL);
    daemon_ready(1);  /* no-op if the daemon already said it was ready */
    /* Downloads and decodes still running answer opens through the
     * session: stop them before it goes. One that will not stop (a
     * library call that does not return) leaves everything as it is for
     * the exit to clean up. */
    /* And reads waiting on a remote model's fetches (inflight.h):
     * those end within a second of the session's end. */
    if (!mfs_forest_shutdown(&forest, 10000) || !mfs_inflight_drain(10000)) {
        char shown[1024];
        mfs_url_redact(cli.model, shown, sizeof shown);
        mfs_warn("%s: work still running at unmount; exiting anyway", shown);
        fuse_session_unmount(se);
        _exit(rc);
    }
    mfs_file_close_all();

out_unmount:
    fuse_session_unmount(se);
out_signals:
    fuse_remove_signal_handlers(se);
out_session:
    fuse_session_destroy(se);
    mfs_models_close(&held, &forest);
out_opts:
    free(o.mountpoint);
    free(cli.cache_size);
    free(cli.fetch_max);
    free(cli.fetch_timeout);
    free(cli.fetch_reserve);
    free(cli.cache_dir);
    free(cli.cache_max);
    free(cli.links_dir);
out_args:
    free(cli.paths);
    fuse_opt_free_args(&args);
    return rc;
}
