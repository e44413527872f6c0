/*
 * Raw TCP socket ping-pong: the tcp limit that bench/compare-net.sh holds ninefold's
 * tcp transport against. Blocking sockets, TCP_NODELAY, one write and one read loop
 * per message: what a plain program gets from the kernel. With --busy (give it to
 * both sides) reads spin on non-blocking recv instead of sleeping, as a busy-polling
 * runtime does: the latency limit.
 *
 *   tcp_pingpong --listen ADDR:PORT [--busy]            echo side: serves one client
 *   tcp_pingpong --connect ADDR:PORT [--busy] [options] timing side, writes the report
 *
 * Options of the timing side (and the iteration rule, statistics and report):
 * bench/c/ppreport.h; the transport defaults to "raw-tcp", params.peer is ADDR:PORT.
 *
 * Protocol, all integers big-endian u64:
 * 1. The timing side connects (retrying a refusal for up to 10 s: the echo side may
 *    still be starting) and sends its plan: the magic "nfrawpp1", the number of sizes,
 *    iters, warmup, then each size.
 * 2. For each size, both sides derive warmup(size) + iters(size) rounds from the plan;
 *    in each round the timing side writes `size` bytes and reads them back, timing the
 *    round trip with CLOCK_MONOTONIC and recording half of it (as nf bench pingpong does).
 * 3. Both close. Every read and write has a 30 s timeout, so a dead peer ends the run
 *    with an error, never a hang; the echo side waits at most 30 s for its client.
 *
 * Build: cc -O2 -I bench/c -o tcp_pingpong bench/net/tcp_pingpong.c bench/c/ppreport.c -lm
 */
#define _DEFAULT_SOURCE

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "ppreport.h"

#define MAGIC "nfrawpp1"
#define IO_TIMEOUT_S 30
#define CONNECT_RETRY_S 10

static void die(const char *what)
{
    fprintf(stderr, "tcp_pingpong: %s: %s\n", what, errno ? strerror(errno) : "failed");
    exit(1);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: tcp_pingpong --listen ADDR:PORT [--busy]\n"
               "       tcp_pingpong --connect ADDR:PORT [--busy]\n%s", pp_opts_usage);
}

/* Parses "A.B.C.D:PORT". */
static int parse_addr(const char *s, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof host)
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port <= 0 || port > 65535)
        return -1;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

/* TCP_NODELAY and the I/O timeouts on a connected socket. */
static void tune(int fd)
{
    int one = 1;
    struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv))
        die("setting TCP_NODELAY and timeouts");
}

/* --busy: reads spin on MSG_DONTWAIT; the clock is read every SPIN_CHECK empty
 * reads, so a dead peer still ends the run after IO_TIMEOUT_S. */
static int busy;
#define SPIN_CHECK 65536

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void io_all(int fd, char *buf, size_t len, int write_it)
{
    size_t at = 0;
    unsigned long spins = 0;
    double deadline = 0;
    while (at < len) {
        ssize_t n = write_it ? send(fd, buf + at, len - at, MSG_NOSIGNAL)
                             : recv(fd, buf + at, len - at, busy ? MSG_DONTWAIT : 0);
        if (n > 0) {
            at += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && busy && !write_it && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (++spins % SPIN_CHECK == 0) {
                if (deadline == 0)
                    deadline = now_s() + IO_TIMEOUT_S;
                else if (now_s() > deadline)
                    die("recv: nothing for 30 s");
            }
            continue;
        }
        if (n == 0)
            errno = 0;
        die(write_it ? "send" : n == 0 ? "recv: peer closed the connection" : "recv");
    }
}

static void put_u64(int fd, uint64_t v)
{
    uint64_t be = htobe64(v);
    io_all(fd, (char *)&be, sizeof be, 1);
}

static uint64_t get_u64(int fd)
{
    uint64_t be;
    io_all(fd, (char *)&be, sizeof be, 0);
    return be64toh(be);
}

/* The echo side: one client, its plan, its rounds. */
static int serve(const struct sockaddr_in *sa)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(ls, (const struct sockaddr *)sa, sizeof *sa) || listen(ls, 1))
        die("listening");
    struct pollfd p = { .fd = ls, .events = POLLIN };
    int ready = poll(&p, 1, IO_TIMEOUT_S * 1000);
    if (ready <= 0) {
        if (ready == 0)
            errno = ETIMEDOUT;
        die("waiting for the timing side to connect");
    }
    int fd = accept(ls, NULL, NULL);
    if (fd < 0)
        die("accept");
    close(ls);
    tune(fd);
    char magic[8];
    io_all(fd, magic, sizeof magic, 0);
    if (memcmp(magic, MAGIC, sizeof magic)) {
        fprintf(stderr, "tcp_pingpong: the client is not a tcp_pingpong of this version\n");
        return 1;
    }
    struct pp_opts o;
    pp_init_opts(&o, "pingpong", "raw-tcp");
    uint64_t nsizes = get_u64(fd);
    o.iters = (long)get_u64(fd);
    o.warmup = (long)get_u64(fd);
    if (nsizes == 0 || nsizes > PP_MAX_SIZES || o.iters <= 0 || o.warmup < 0) {
        fprintf(stderr, "tcp_pingpong: bad plan (%llu sizes, %ld iters, %ld warmup)\n",
                (unsigned long long)nsizes, o.iters, o.warmup);
        return 1;
    }
    o.nsizes = (int)nsizes;
    for (int k = 0; k < o.nsizes; k++) {
        uint64_t s = get_u64(fd);
        if (s == 0 || s > (1ULL << 31)) {
            fprintf(stderr, "tcp_pingpong: bad size %llu in the plan\n", (unsigned long long)s);
            return 1;
        }
        o.sizes[k] = (long)s;
    }
    long max_size, max_iters;
    pp_maxima(&o, &max_size, &max_iters);
    char *buf = malloc((size_t)max_size);
    if (!buf)
        die("allocating the buffer");
    memset(buf, 0, (size_t)max_size);
    for (int k = 0; k < o.nsizes; k++) {
        long rounds = pp_warmup_for(o.sizes[k], o.iters, o.warmup) + pp_iters_for(o.sizes[k], o.iters);
        for (long i = 0; i < rounds; i++) {
            io_all(fd, buf, (size_t)o.sizes[k], 0);
            io_all(fd, buf, (size_t)o.sizes[k], 1);
        }
    }
    free(buf);
    close(fd);
    return 0;
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* The timing side. */
static int measure(const struct sockaddr_in *sa, const char *peer, struct pp_opts *o)
{
    int fd = -1;
    double give_up = now_us() + CONNECT_RETRY_S * 1e6;
    for (;;) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            die("socket");
        if (!connect(fd, (const struct sockaddr *)sa, sizeof *sa))
            break;
        if (errno != ECONNREFUSED || now_us() > give_up)
            die("connecting to the echo side");
        close(fd);
        usleep(10000);
    }
    tune(fd);
    io_all(fd, MAGIC, 8, 1);
    put_u64(fd, (uint64_t)o->nsizes);
    put_u64(fd, (uint64_t)o->iters);
    put_u64(fd, (uint64_t)o->warmup);
    for (int k = 0; k < o->nsizes; k++)
        put_u64(fd, (uint64_t)o->sizes[k]);

    long max_size, max_iters;
    pp_maxima(o, &max_size, &max_iters);
    char *sbuf = malloc((size_t)max_size), *rbuf = malloc((size_t)max_size);
    double *samples = malloc((size_t)max_iters * sizeof *samples);
    struct pp_result *results = calloc((size_t)o->nsizes, sizeof *results);
    if (!sbuf || !rbuf || !samples || !results)
        die("allocating buffers");
    for (long i = 0; i < max_size; i++)
        sbuf[i] = (char)(i * 31);
    memset(rbuf, 0, (size_t)max_size);
    for (int k = 0; k < o->nsizes; k++) {
        long size = o->sizes[k];
        long n = pp_iters_for(size, o->iters), w = pp_warmup_for(size, o->iters, o->warmup);
        for (long i = 0; i < w + n; i++) {
            double t0 = now_us();
            io_all(fd, sbuf, (size_t)size, 1);
            io_all(fd, rbuf, (size_t)size, 0);
            double t1 = now_us();
            if (i >= w)
                samples[i - w] = (t1 - t0) / 2.0;
        }
        results[k] = pp_summarise(size, samples, n);
    }
    close(fd);
    pp_print_table(stdout, o, 2, results, o->nsizes);
    const struct pp_param params[] = { { "peer", peer } };
    if (o->json && pp_write_json(o->json, o, 2, params, 1, results, o->nsizes))
        die(o->json);
    free(sbuf);
    free(rbuf);
    free(samples);
    free(results);
    return 0;
}

int main(int argc, char **argv)
{
    struct pp_opts o;
    pp_init_opts(&o, "pingpong", "raw-tcp");
    const char *listen_at = NULL, *connect_to = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--busy")) {
            busy = 1;
            continue;
        }
        int took = pp_take_opt(&o, a, v);
        if (took == 0 && v && !strcmp(a, "--listen"))
            listen_at = v;
        else if (took == 0 && v && !strcmp(a, "--connect"))
            connect_to = v;
        else if (took != 1) {
            fprintf(stderr, "tcp_pingpong: bad argument %s%s%s\n", a, v ? " " : "", v ? v : "");
            usage(stderr);
            return 2;
        }
        i++;
    }
    struct sockaddr_in sa;
    const char *addr = listen_at ? listen_at : connect_to;
    if (!listen_at == !connect_to || parse_addr(addr, &sa)) {
        fprintf(stderr, "tcp_pingpong: give exactly one of --listen / --connect ADDR:PORT "
                        "(IPv4 address and port)\n");
        usage(stderr);
        return 2;
    }
    if (listen_at)
        return serve(&sa);
    pp_finish_opts(&o);
    return measure(&sa, connect_to, &o);
}
