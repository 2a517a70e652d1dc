/* A C HTTP/1.1 server that writes the response head and body with two send() calls, as
 * much hand-written server code does. Nagle is on unless --nodelay sets TCP_NODELAY on the
 * listening socket (accepted sockets inherit it on Linux). One thread per connection.
 * Usage: c_split_server [--nodelay] [--body-bytes N]. Prints "PORT <n>" once listening. */
#define _GNU_SOURCE /* strcasestr */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static char *body;
static size_t body_len = 13;

static void *serve(void *arg) {
    int fd = (int)(long)arg;
    char buf[65536], head[256];
    size_t have = 0;
    for (;;) {
        ssize_t n = recv(fd, buf + have, sizeof buf - have - 1, 0);
        if (n <= 0) break;
        have += (size_t)n;
        buf[have] = 0;
        char *end;
        while ((end = strstr(buf, "\r\n\r\n")) != NULL) {
            size_t used = (size_t)(end + 4 - buf);
            int len = snprintf(head, sizeof head,
                               "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n\r\n", body_len);
            if (send(fd, head, (size_t)len, 0) < 0 || send(fd, body, body_len, 0) < 0) goto done;
            /* HTTP/1.0 without keep-alive: close after the response, as HTTP wants. */
            *end = 0;
            int http10 = strstr(buf, " HTTP/1.0\r\n") != NULL && strcasestr(buf, "keep-alive") == NULL;
            if (http10) goto done;
            memmove(buf, buf + used, have - used);
            have -= used;
            buf[have] = 0;
        }
        if (have == sizeof buf - 1) break;
    }
done:
    close(fd);
    return NULL;
}

int main(int argc, char **argv) {
    int nodelay = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--nodelay") == 0) nodelay = 1;
        if (strcmp(argv[i], "--body-bytes") == 0 && i + 1 < argc) body_len = (size_t)atol(argv[++i]);
    }
    body = malloc(body_len);
    memset(body, 'x', body_len);
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (nodelay) setsockopt(listener, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t addr_len = sizeof addr;
    if (bind(listener, (struct sockaddr *)&addr, sizeof addr) || listen(listener, 128) ||
        getsockname(listener, (struct sockaddr *)&addr, &addr_len)) {
        perror("listen");
        return 1;
    }
    printf("PORT %d\n", ntohs(addr.sin_port));
    fflush(stdout);
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) continue;
        pthread_t thread;
        if (pthread_create(&thread, NULL, serve, (void *)(long)fd) == 0) pthread_detach(thread);
        else close(fd);
    }
}
