/* A libevent evhttp REST-style server, as in the field report (Bitcoin Core's REST on evhttp:
 * `ab -k -c 1` on a 25 086-byte block took 40.7 ms per request). evhttp_send_reply queues
 * head and body in one buffer, but bufferevent writes at most 16 KB per write(), so a 25 KB
 * response leaves in two writes and Nagle holds the second until the client's delayed ACK.
 * Small responses leave in one write and do not stall. --nodelay applies the fix an evhttp
 * user would: TCP_NODELAY on the bound socket (evhttp_bound_socket_get_fd), which accepted
 * sockets inherit on Linux. Usage: evhttp_server [--nodelay] [--body-bytes N] (default
 * 25086). Prints "PORT <n>" once listening. Needs libevent-dev; the tests' compiled()
 * reads the next line for the libraries to link.
 * link: -levent
 */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static char *body;
static size_t body_len = 25086;

static void handle(struct evhttp_request *req, void *arg) {
    (void)arg;
    struct evbuffer *reply = evbuffer_new();
    evbuffer_add(reply, body, body_len);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/octet-stream");
    evhttp_send_reply(req, HTTP_OK, "OK", reply);
    evbuffer_free(reply);
}

int main(int argc, char **argv) {
    int nodelay = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--nodelay") == 0) nodelay = 1;
        if (strcmp(argv[i], "--body-bytes") == 0 && i + 1 < argc) body_len = (size_t)atol(argv[++i]);
    }
    body = malloc(body_len + 1);
    memset(body, 'x', body_len);
    struct event_base *base = event_base_new();
    struct evhttp *http = base ? evhttp_new(base) : NULL;
    struct evhttp_bound_socket *bound = http ? evhttp_bind_socket_with_handle(http, "127.0.0.1", 0) : NULL;
    if (!bound) {
        fprintf(stderr, "evhttp_server: cannot listen on 127.0.0.1\n");
        return 1;
    }
    evutil_socket_t fd = evhttp_bound_socket_get_fd(bound);
    int one = 1;
    if (nodelay && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one)) {
        perror("setsockopt TCP_NODELAY");
        return 1;
    }
    struct sockaddr_in addr;
    socklen_t addr_len = sizeof addr;
    if (getsockname(fd, (struct sockaddr *)&addr, &addr_len)) {
        perror("getsockname");
        return 1;
    }
    evhttp_set_gencb(http, handle, NULL);
    printf("PORT %d\n", ntohs(addr.sin_port));
    fflush(stdout);
    return event_base_dispatch(base);
}
