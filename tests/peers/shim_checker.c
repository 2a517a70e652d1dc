/* Checks what the `nodelay exec` shim does inside a real process: run as
 * `nodelay exec -- shim_checker`. Prints one line per check, "ok NAME" or "FAIL NAME: why",
 * and exits 1 if any check failed. Without the shim the checks marked [shim] fail, which shows
 * they can fail; the others hold with or without it (the shim must leave those calls alone).
 *
 * Baselines come from raw system calls (syscall(2)), which no preloaded library can intercept:
 * the errno libc would give, and sockets whose options nobody touched. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

static int failures;

static void check(int passed, const char *name, const char *why) {
    if (passed) printf("ok %s\n", name);
    else {
        printf("FAIL %s: %s\n", name, why);
        failures++;
    }
}

static int option(int fd, int level, int name) {
    int value = -1;
    socklen_t length = sizeof value;
    if (getsockopt(fd, level, name, &value, &length) != 0) return -errno;
    return value;
}

static int nodelay(int fd) { return option(fd, IPPROTO_TCP, TCP_NODELAY); }

static int raw_socket(int domain, int type, int protocol) {
    return (int)syscall(SYS_socket, domain, type, protocol);
}

static int raw_setsockopt(int fd, int level, int name, const void *value, socklen_t length) {
    return (int)syscall(SYS_setsockopt, fd, level, name, value, length);
}

/* A loopback TCP listener made with raw calls and NODELAY explicitly off, so that a connection
 * it accepts has NODELAY only if accept() set it (accepted sockets inherit the listener's). */
static int raw_listener(struct sockaddr_in *address) {
    int fd = raw_socket(AF_INET, SOCK_STREAM, 0);
    int zero = 0;
    raw_setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero);
    memset(address, 0, sizeof *address);
    address->sin_family = AF_INET;
    address->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof *address;
    if (bind(fd, (struct sockaddr *)address, length) || listen(fd, 8) ||
        getsockname(fd, (struct sockaddr *)address, &length)) {
        perror("listener");
        exit(2);
    }
    return fd;
}

static void raw_connect(const struct sockaddr_in *address) {
    int fd = raw_socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (const struct sockaddr *)address, sizeof *address)) {
        perror("connect");
        exit(2);
    }
    /* Left open: the listener's backlog holds the connection until it is accepted. */
}

static void check_loaded(void) {
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;
    while (maps && fgets(line, sizeof line, maps))
        if (strstr(line, "/libnodelay-") && strstr(line, ".so")) found = 1;
    if (maps) fclose(maps);
    check(found, "[shim] loaded: /proc/self/maps lists libnodelay-*.so", "not mapped");
}

static void check_created(const char *name, int domain, int type, int protocol) {
    char why[128];
    int fd = socket(domain, type, protocol);
    if (fd < 0 && domain == AF_INET6 && errno == EAFNOSUPPORT) {
        printf("ok %s (skipped: no IPv6 here)\n", name);
        return;
    }
    int value = fd < 0 ? -errno : nodelay(fd);
    snprintf(why, sizeof why, "TCP_NODELAY is %d", value);
    check(value == 1, name, why);
    if (fd >= 0) close(fd);
}

static void check_setsockopt_off_becomes_on(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int zero = 0;
    int result = setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero);
    char why[128];
    snprintf(why, sizeof why, "setsockopt returned %d, TCP_NODELAY reads %d", result, nodelay(fd));
    check(result == 0 && nodelay(fd) == 1, "[shim] setsockopt(IPPROTO_TCP, TCP_NODELAY, 0) reads back 1", why);
    close(fd);
}

static void check_accepted(int use_accept4) {
    struct sockaddr_in address;
    int listener = raw_listener(&address);
    char why[128];
    snprintf(why, sizeof why, "the raw listener has TCP_NODELAY %d", nodelay(listener));
    check(nodelay(listener) == 0, "baseline: a listener made by raw syscalls has TCP_NODELAY 0", why);
    raw_connect(&address);
    int fd = use_accept4 ? accept4(listener, NULL, NULL, SOCK_CLOEXEC) : accept(listener, NULL, NULL);
    snprintf(why, sizeof why, "fd %d, TCP_NODELAY %d", fd, fd < 0 ? -errno : nodelay(fd));
    check(fd >= 0 && nodelay(fd) == 1,
          use_accept4 ? "[shim] accept4: the accepted connection has TCP_NODELAY 1"
                      : "[shim] accept: the accepted connection has TCP_NODELAY 1",
          why);
    close(listener);
}

static void check_udp_cork(void) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    int zero = 0;
    int result = setsockopt(fd, IPPROTO_UDP, UDP_CORK, &zero, sizeof zero);
    char why[128];
    snprintf(why, sizeof why, "setsockopt returned %d, UDP_CORK reads %d", result, option(fd, IPPROTO_UDP, UDP_CORK));
    check(result == 0 && option(fd, IPPROTO_UDP, UDP_CORK) == 0,
          "UDP: setsockopt(IPPROTO_UDP, UDP_CORK, 0) leaves UDP_CORK 0 (same number as TCP_NODELAY)", why);
    close(fd);
}

/* Every option but TCP_NODELAY of a socket made through the shim equals that of a raw one. */
static void check_other_options_untouched(void) {
    static const struct {
        int level, name;
        const char *label;
    } options[] = {
        {SOL_SOCKET, SO_DEBUG, "SO_DEBUG"},         {SOL_SOCKET, SO_KEEPALIVE, "SO_KEEPALIVE"},
        {SOL_SOCKET, SO_REUSEADDR, "SO_REUSEADDR"}, {SOL_SOCKET, SO_REUSEPORT, "SO_REUSEPORT"},
        {SOL_SOCKET, SO_SNDBUF, "SO_SNDBUF"},       {SOL_SOCKET, SO_RCVBUF, "SO_RCVBUF"},
        {SOL_SOCKET, SO_OOBINLINE, "SO_OOBINLINE"}, {IPPROTO_TCP, TCP_CORK, "TCP_CORK"},
        {IPPROTO_TCP, TCP_QUICKACK, "TCP_QUICKACK"}, {IPPROTO_TCP, TCP_MAXSEG, "TCP_MAXSEG"},
        {IPPROTO_TCP, TCP_KEEPIDLE, "TCP_KEEPIDLE"}, {IPPROTO_TCP, TCP_NOTSENT_LOWAT, "TCP_NOTSENT_LOWAT"},
    };
    int shimmed = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int raw = raw_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    char why[256] = "";
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
        int a = option(shimmed, options[i].level, options[i].name);
        int b = option(raw, options[i].level, options[i].name);
        if (a != b && strlen(why) < 200)
            snprintf(why + strlen(why), sizeof why - strlen(why), "%s %d (raw %d) ", options[i].label, a, b);
    }
    int flags = fcntl(shimmed, F_GETFL);
    if (!(flags & O_NONBLOCK)) strcat(why, "O_NONBLOCK lost ");
    check(why[0] == 0, "TCP: every option but TCP_NODELAY equals a raw socket's", why);

    int zero = 0, one = 1;
    int result = setsockopt(shimmed, SOL_SOCKET, SO_DEBUG, &zero, sizeof zero);
    snprintf(why, sizeof why, "setsockopt returned %d, SO_DEBUG reads %d", result, option(shimmed, SOL_SOCKET, SO_DEBUG));
    check(result == 0 && option(shimmed, SOL_SOCKET, SO_DEBUG) == 0,
          "TCP: setsockopt(SOL_SOCKET, SO_DEBUG, 0) leaves SO_DEBUG 0 (same number as TCP_NODELAY)", why);
    result = setsockopt(shimmed, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    snprintf(why, sizeof why, "setsockopt returned %d, SO_KEEPALIVE reads %d", result,
             option(shimmed, SOL_SOCKET, SO_KEEPALIVE));
    check(result == 0 && option(shimmed, SOL_SOCKET, SO_KEEPALIVE) == 1, "TCP: SO_KEEPALIVE 1 is set as asked", why);
    close(shimmed);
    close(raw);
}

/* Unix stream sockets: the calls succeed as without the shim, errno is not disturbed by any
 * TCP option tried on the side, and data flows. */
static void check_unix(void) {
    int pair[2];
    errno = 4242;
    int result = socketpair(AF_UNIX, SOCK_STREAM, 0, pair);
    char why[160];
    snprintf(why, sizeof why, "socketpair returned %d, errno %d", result, errno);
    check(result == 0 && errno == 4242 && write(pair[0], "x", 1) == 1, "Unix: socketpair works, errno untouched", why);

    char path[108];
    snprintf(path, sizeof path, "/tmp/nodelay-shim-checker-%d.sock", (int)getpid());
    unlink(path);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    strcpy(address.sun_path, path);
    errno = 4242;
    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    snprintf(why, sizeof why, "socket returned %d, errno %d", listener, errno);
    check(listener >= 0 && errno == 4242, "Unix: socket(AF_UNIX, SOCK_STREAM) works, errno untouched", why);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) || listen(listener, 8)) {
        perror("unix listener");
        exit(2);
    }
    for (int round = 0; round < 2; round++) {
        int client = raw_socket(AF_UNIX, SOCK_STREAM, 0);
        if (connect(client, (struct sockaddr *)&address, sizeof address)) {
            perror("unix connect");
            exit(2);
        }
        errno = 4242;
        int fd = round ? accept4(listener, NULL, NULL, SOCK_CLOEXEC) : accept(listener, NULL, NULL);
        int saw = errno;
        char byte = 0;
        int flows = fd >= 0 && write(client, "y", 1) == 1 && read(fd, &byte, 1) == 1 && byte == 'y';
        snprintf(why, sizeof why, "fd %d, errno %d, data %s", fd, saw, flows ? "flows" : "does not flow");
        check(fd >= 0 && saw == 4242 && flows,
              round ? "Unix: accept4 on a Unix listener works, errno untouched"
                    : "Unix: accept on a Unix listener works, errno untouched",
              why);
        close(client);
        if (fd >= 0) close(fd);
    }
    close(listener);
    unlink(path);
}

/* A failing call leaves exactly the errno libc's own call would. */
static void check_errno(const char *name, int result, int seen, int expected_result, int expected) {
    char why[128];
    snprintf(why, sizeof why, "returned %d errno %d (%s), raw call: %d errno %d (%s)", result, seen, strerror(seen),
             expected_result, expected, strerror(expected));
    check(result == expected_result && seen == expected, name, why);
}

static void check_errnos(void) {
    int zero = 0, result, seen, raw_result, raw_errno;

#define COMPARE(name, call, raw_call)                                                                                  \
    do {                                                                                                               \
        errno = 0;                                                                                                     \
        result = (call);                                                                                               \
        seen = errno;                                                                                                  \
        errno = 0;                                                                                                     \
        raw_result = (raw_call);                                                                                       \
        raw_errno = errno;                                                                                             \
        check_errno(name, result, seen, raw_result, raw_errno);                                                        \
    } while (0)

    COMPARE("errno: setsockopt(TCP_NODELAY, 0) on a bad fd", setsockopt(-1, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero),
            raw_setsockopt(-1, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero));
    int udp = socket(AF_INET, SOCK_DGRAM, 0);
    COMPARE("errno: setsockopt(TCP_NODELAY, 0) on a UDP socket", setsockopt(udp, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero),
            raw_setsockopt(udp, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero));
    close(udp);
    int tcp = socket(AF_INET, SOCK_STREAM, 0);
    COMPARE("errno: setsockopt(TCP_NODELAY) with a 2-byte value", setsockopt(tcp, IPPROTO_TCP, TCP_NODELAY, &zero, 2),
            raw_setsockopt(tcp, IPPROTO_TCP, TCP_NODELAY, &zero, 2));
    COMPARE("errno: socket with a bad domain", socket(12345, SOCK_STREAM, 0), raw_socket(12345, SOCK_STREAM, 0));
    COMPARE("errno: socket(AF_INET, SOCK_STREAM, IPPROTO_UDP)", socket(AF_INET, SOCK_STREAM, IPPROTO_UDP),
            raw_socket(AF_INET, SOCK_STREAM, IPPROTO_UDP));
    int not_socket = open("/dev/null", O_RDONLY);
    COMPARE("errno: accept on a file that is not a socket", accept(not_socket, NULL, NULL),
            (int)syscall(SYS_accept4, not_socket, NULL, NULL, 0));
    COMPARE("errno: accept4 with bad flags", accept4(tcp, NULL, NULL, -1), (int)syscall(SYS_accept4, tcp, NULL, NULL, -1));
    close(not_socket);
    struct sockaddr_in address;
    int listener = raw_listener(&address);
    int flags = fcntl(listener, F_GETFL);
    fcntl(listener, F_SETFL, flags | O_NONBLOCK);
    COMPARE("errno: accept with nothing pending on a non-blocking listener", accept(listener, NULL, NULL),
            (int)syscall(SYS_accept4, listener, NULL, NULL, 0));
    close(listener);
    close(tcp);

    /* A call that succeeds leaves errno as it was, with the shim's own calls in between. */
    errno = 4242;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    seen = errno;
    char why[96];
    snprintf(why, sizeof why, "fd %d, errno %d", fd, seen);
    check(fd >= 0 && seen == 4242, "errno: a TCP socket() that succeeds leaves errno as it was", why);
    close(fd);
}

int main(void) {
    check_loaded();
    check_created("[shim] socket(AF_INET, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC, 0) has TCP_NODELAY 1", AF_INET,
                  SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    check_created("[shim] socket(AF_INET6, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC, 0) has TCP_NODELAY 1", AF_INET6,
                  SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    check_created("[shim] socket(AF_INET, SOCK_STREAM, IPPROTO_TCP) has TCP_NODELAY 1", AF_INET, SOCK_STREAM, IPPROTO_TCP);
    check_setsockopt_off_becomes_on();
    check_accepted(0);
    check_accepted(1);
    check_udp_cork();
    check_other_options_untouched();
    check_unix();
    check_errnos();
    printf("%d failed\n", failures);
    return failures ? 1 : 0;
}
