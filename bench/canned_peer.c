/* A trivial request/response peer for benchmarks: one thread, epoll, non-blocking sockets,
 * TCP_NODELAY. In "http" mode every request head (ended by a blank line) gets a canned
 * 13-byte HTTP/1.1 response; in "line" mode every line gets "+PONG\n". The work per request
 * is the same, so the load generator's two paths can be compared.
 * Usage: canned_peer http|line  -- prints "PORT <n>" once listening. */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <fcntl.h>

#define MAX_FDS 65536
static int matched[MAX_FDS]; /* bytes of the terminator matched so far, per connection */

int main(int argc, char **argv) {
    int http = argc > 1 && strcmp(argv[1], "http") == 0;
    const char *term = http ? "\r\n\r\n" : "\n";
    size_t term_len = strlen(term);
    const char *reply = http ? "HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello, world!" : "+PONG\n";
    size_t reply_len = strlen(reply);
    static char out[65536 * 8];

    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(listener, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t addr_len = sizeof addr;
    if (bind(listener, (struct sockaddr *)&addr, sizeof addr) || listen(listener, 1024) ||
        getsockname(listener, (struct sockaddr *)&addr, &addr_len)) {
        perror("listen");
        return 1;
    }
    printf("PORT %d\n", ntohs(addr.sin_port));
    fflush(stdout);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = listener};
    epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
    struct epoll_event events[256];
    char buf[65536];
    for (;;) {
        int n = epoll_wait(ep, events, 256, -1);
        for (int i = 0; i < n; i++) {
            int fd = events[i].data.fd;
            if (fd == listener) {
                int client;
                while ((client = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    if (client >= MAX_FDS) { close(client); continue; }
                    matched[client] = 0;
                    struct epoll_event cev = {.events = EPOLLIN, .data.fd = client};
                    epoll_ctl(ep, EPOLL_CTL_ADD, client, &cev);
                }
                continue;
            }
            ssize_t got = read(fd, buf, sizeof buf);
            if (got <= 0) {
                if (got < 0 && errno == EAGAIN) continue;
                close(fd);
                continue;
            }
            size_t replies = 0;
            for (ssize_t k = 0; k < got; k++) {
                if (buf[k] == term[matched[fd]]) {
                    if (++matched[fd] == (int)term_len) { replies++; matched[fd] = 0; }
                } else {
                    matched[fd] = buf[k] == term[0] ? 1 : 0;
                }
            }
            size_t len = 0;
            for (size_t r = 0; r < replies && len + reply_len <= sizeof out; r++, len += reply_len)
                memcpy(out + len, reply, reply_len);
            if (len && write(fd, out, len) < 0) close(fd);
        }
    }
}
