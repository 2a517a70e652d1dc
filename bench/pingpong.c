/* The latency floor for one HTTP/1.1 request/response on a keep-alive connection: one
 * blocking socket with TCP_NODELAY, one request written, the whole response read (head, then
 * Content-Length bytes of body, however many reads that takes), again and again. Each round
 * trip is timed with clock_gettime(CLOCK_MONOTONIC) from just before the write to just after
 * the read that completes the response; warm-up round trips are not counted.
 *
 * The request is what nodelay bench sends for the URL, byte for byte, so the server does the
 * same work:  GET PATH HTTP/1.1\r\nHost: HOST:PORT\r\nUser-Agent: nodelay/VERSION\r\n\r\n
 * (-r FILE sends FILE's bytes verbatim instead; bench/latency_floor.py passes the bytes it
 * captured from nodelay itself).
 *
 * Usage: pingpong [-n COUNT] [-w WARMUP] [-a USER_AGENT] [-r REQUEST_FILE] HOST PORT [PATH]
 *   HOST is an IPv4 address, e.g. 127.0.0.1; PATH defaults to /; COUNT 20000; WARMUP 500.
 * Prints one line:
 *   requests=N min_us=.. p50_us=.. p90_us=.. p99_us=.. max_us=.. mean_us=..
 * Exit status 0 on success, 1 on any error (connect, short response, close, timeout, non-2xx). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_COUNT 100000000L
#define MAX_REQUEST 65536
#define BUF_SIZE 65536

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("pingpong: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long parse_count(const char *text, const char *what) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || *end || v < 0 || v > MAX_COUNT) die("%s must be an integer 0..%ld, not '%s'", what, MAX_COUNT, text);
    return v;
}

static void send_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("send: %s", strerror(errno));
        }
        data += n;
        len -= (size_t)n;
    }
}

/* The value of Content-Length in the head [head, head+len), or -1 when there is none. */
static long content_length(const char *head, size_t len) {
    static const char name[] = "\r\ncontent-length:";
    size_t nlen = sizeof name - 1;
    for (size_t i = 0; i + nlen <= len; i++) {
        if (strncasecmp(head + i, name, nlen) != 0) continue;
        size_t j = i + nlen;
        while (j < len && (head[j] == ' ' || head[j] == '\t')) j++;
        long v = 0;
        size_t digits = 0;
        while (j < len && head[j] >= '0' && head[j] <= '9' && digits < 18) v = v * 10 + (head[j++] - '0'), digits++;
        if (digits == 0) die("malformed Content-Length in response head");
        return v;
    }
    return -1;
}

/* Reads one whole response: the head up to the blank line, then Content-Length body bytes.
 * The request is written only after the previous response is complete, so any byte beyond
 * this response is a protocol error. */
static void read_response(int fd, char *buf) {
    size_t have = 0;
    size_t head_end = 0;
    long body = -1; /* body bytes still expected once the head is in */
    for (;;) {
        if (have == BUF_SIZE) {
            if (head_end == 0) die("response head longer than %d bytes", BUF_SIZE);
            have = 0; /* the body is only counted, not kept */
        }
        ssize_t n = recv(fd, buf + have, BUF_SIZE - have, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) die("no complete response within 10 s");
            die("recv: %s", strerror(errno));
        }
        if (n == 0) die("server closed the connection mid-response (or before it)");
        if (head_end == 0) {
            size_t scan_from = have >= 3 ? have - 3 : 0;
            have += (size_t)n;
            void *end = memmem(buf + scan_from, have - scan_from, "\r\n\r\n", 4);
            if (end == NULL) continue;
            head_end = (size_t)((char *)end - buf) + 4;
            if (head_end < 12 || memcmp(buf, "HTTP/1.", 7) != 0 || buf[9] != '2')
                die("not a 2xx response: '%.*s'", (int)(head_end < 60 ? head_end : 60), buf);
            body = content_length(buf, head_end);
            if (body < 0) die("response has no Content-Length (chunked or close-delimited bodies are not supported)");
            size_t extra = have - head_end;
            if ((long)extra > body) die("%zu bytes beyond the response", extra - (size_t)body);
            body -= (long)extra;
        } else {
            have += (size_t)n;
            if (n > body) die("%zd bytes beyond the response", n - body);
            body -= n;
        }
        if (body == 0) return;
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples, in microseconds. */
static double pct_us(const uint64_t *sorted, long n, double p) {
    long rank = (long)(p / 100.0 * (double)n + 0.999999);
    if (rank < 1) rank = 1;
    if (rank > n) rank = n;
    return (double)sorted[rank - 1] / 1000.0;
}

int main(int argc, char **argv) {
    long count = 20000, warmup = 500;
    const char *agent = "nodelay/0.1.0";
    const char *request_file = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "n:w:a:r:h")) != -1) {
        switch (opt) {
        case 'n': count = parse_count(optarg, "-n COUNT"); break;
        case 'w': warmup = parse_count(optarg, "-w WARMUP"); break;
        case 'a': agent = optarg; break;
        case 'r': request_file = optarg; break;
        default:
            fprintf(stderr, "usage: pingpong [-n COUNT] [-w WARMUP] [-a USER_AGENT] [-r REQUEST_FILE] HOST PORT [PATH]\n");
            return opt == 'h' ? 0 : 1;
        }
    }
    if (argc - optind < 2 || argc - optind > 3)
        die("usage: pingpong [-n COUNT] [-w WARMUP] [-a USER_AGENT] [-r REQUEST_FILE] HOST PORT [PATH]");
    const char *host = argv[optind];
    long port = parse_count(argv[optind + 1], "PORT");
    const char *path = argc - optind == 3 ? argv[optind + 2] : "/";
    if (port < 1 || port > 65535) die("PORT must be 1..65535");
    if (count < 1) die("-n COUNT must be at least 1");

    static char request[MAX_REQUEST];
    size_t request_len;
    if (request_file) {
        FILE *f = fopen(request_file, "rb");
        if (!f) die("%s: %s", request_file, strerror(errno));
        request_len = fread(request, 1, sizeof request, f);
        int too_long = !feof(f) && fgetc(f) != EOF;
        fclose(f);
        if (too_long) die("%s: longer than %d bytes", request_file, MAX_REQUEST);
        if (request_len < 4 || memcmp(request + request_len - 4, "\r\n\r\n", 4) != 0)
            die("%s: not a request head ending in a blank line (a body is not supported)", request_file);
    } else {
        int n = snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: %s:%ld\r\nUser-Agent: %s\r\n\r\n",
                         path, host, port, agent);
        if (n < 0 || (size_t)n >= sizeof request) die("request longer than %d bytes", MAX_REQUEST);
        request_len = (size_t)n;
    }

    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) die("HOST must be an IPv4 address, not '%s'", host);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket: %s", strerror(errno));
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) die("TCP_NODELAY: %s", strerror(errno));
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
        die("connect %s:%ld: %s", host, port, strerror(errno));

    uint64_t *samples = malloc((size_t)count * sizeof *samples);
    static char buf[BUF_SIZE];
    if (!samples) die("out of memory for %ld samples", count);
    for (long i = 0; i < warmup; i++) {
        send_all(fd, request, request_len);
        read_response(fd, buf);
    }
    for (long i = 0; i < count; i++) {
        uint64_t start = now_ns();
        send_all(fd, request, request_len);
        read_response(fd, buf);
        samples[i] = now_ns() - start;
    }
    close(fd);

    double sum = 0;
    for (long i = 0; i < count; i++) sum += (double)samples[i];
    qsort(samples, (size_t)count, sizeof *samples, cmp_u64);
    printf("requests=%ld min_us=%.1f p50_us=%.1f p90_us=%.1f p99_us=%.1f max_us=%.1f mean_us=%.1f\n", count,
           samples[0] / 1000.0, pct_us(samples, count, 50), pct_us(samples, count, 90), pct_us(samples, count, 99),
           samples[count - 1] / 1000.0, sum / (double)count / 1000.0);
    free(samples);
    return 0;
}
