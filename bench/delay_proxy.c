/* A TCP proxy that holds every chunk DELAY_MS before passing it on, each
 * way: a link with a round trip of 2 * DELAY_MS on loopback, where this
 * kernel has no netem. Bytes are never reordered or dropped; each
 * direction of each connection has a reader thread (stamps chunks as they
 * arrive) and a writer thread (sends each chunk when its time comes), so
 * the delay does not cut throughput.
 *
 *   bench-delay-proxy LISTEN_PORT UPSTREAM_PORT DELAY_MS
 *
 * Listens on 127.0.0.1:LISTEN_PORT, connects to 127.0.0.1:UPSTREAM_PORT.
 * Prints "ready" once listening. Runs until killed. Benchmarks only. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (256u << 10)

typedef struct chunk {
    struct chunk *next;
    struct timespec due;
    size_t len;          /* 0: the reader saw the end */
    char data[];
} chunk;

typedef struct pipe_dir {
    int from, to;
    long delay_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    chunk *head, *tail;
} pipe_dir;

static void push(pipe_dir *p, chunk *c)
{
    pthread_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->next = c;
    else
        p->head = c;
    p->tail = c;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void *reader(void *arg)
{
    pipe_dir *p = arg;
    for (;;) {
        chunk *c = malloc(sizeof *c + CHUNK);
        if (c == NULL)
            abort();
        ssize_t n = recv(p->from, c->data, CHUNK, 0);
        if (n < 0 && errno == EINTR) {
            free(c);
            continue;
        }
        c->next = NULL;
        c->len = n > 0 ? (size_t)n : 0;
        clock_gettime(CLOCK_MONOTONIC, &c->due);
        c->due.tv_nsec += (p->delay_ms % 1000) * 1000000L;
        c->due.tv_sec += p->delay_ms / 1000 + c->due.tv_nsec / 1000000000L;
        c->due.tv_nsec %= 1000000000L;
        push(p, c);
        if (n <= 0)
            return NULL;
    }
}

static void *writer(void *arg)
{
    pipe_dir *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->head == NULL)
            pthread_cond_wait(&p->cv, &p->mu);
        chunk *c = p->head;
        p->head = c->next;
        if (p->head == NULL)
            p->tail = NULL;
        pthread_mutex_unlock(&p->mu);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &c->due, NULL) == EINTR)
            ;
        if (c->len == 0) {
            free(c);
            shutdown(p->to, SHUT_WR);
            return NULL;
        }
        for (size_t done = 0; done < c->len;) {
            ssize_t n = send(p->to, c->data + done, c->len - done, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                free(c);
                shutdown(p->from, SHUT_RD);
                return NULL;   /* the reader ends at its next recv */
            }
            done += (size_t)n;
        }
        free(c);
    }
}

typedef struct conn {
    int a, b;
    long delay_ms;
} conn;

static void *serve(void *arg)
{
    conn *k = arg;
    pipe_dir up = { .from = k->a, .to = k->b, .delay_ms = k->delay_ms };
    pipe_dir down = { .from = k->b, .to = k->a, .delay_ms = k->delay_ms };
    pipe_dir *dirs[2] = { &up, &down };
    pthread_t t[4];
    for (int i = 0; i < 2; i++) {
        pthread_mutex_init(&dirs[i]->mu, NULL);
        pthread_cond_init(&dirs[i]->cv, NULL);
        pthread_create(&t[2 * i], NULL, reader, dirs[i]);
        pthread_create(&t[2 * i + 1], NULL, writer, dirs[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++)
        while (dirs[i]->head) {
            chunk *c = dirs[i]->head;
            dirs[i]->head = c->next;
            free(c);
        }
    close(k->a);
    close(k->b);
    free(k);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bench-delay-proxy LISTEN_PORT UPSTREAM_PORT DELAY_MS\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int port = atoi(argv[1]), up = atoi(argv[2]);
    long delay = atol(argv[3]);
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(ls, 128) != 0) {
        perror("bench-delay-proxy: listen");
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        int a = accept(ls, NULL, NULL);
        if (a < 0)
            continue;
        int b = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in ua = { .sin_family = AF_INET, .sin_port = htons((uint16_t)up) };
        ua.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(b, (struct sockaddr *)&ua, sizeof ua) != 0) {
            close(a);
            close(b);
            continue;
        }
        setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn *k = malloc(sizeof *k);
        *k = (conn){ a, b, delay };
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &at, serve, k) != 0) {
            close(a);
            close(b);
            free(k);
        }
        pthread_attr_destroy(&at);
    }
}
