/* nodelay_shim.c: the LD_PRELOAD library of `nodelay exec`. It sets TCP_NODELAY on every TCP
 * socket (AF_INET, AF_INET6; TCP or MPTCP) the program creates with socket() or accepts with
 * accept()/accept4(), and turns setsockopt(IPPROTO_TCP, TCP_NODELAY, 0) into 1. Every other
 * call, option and kind of socket is passed through untouched.
 *
 * Rules, each one a bug of the older libnodelay not to repeat:
 * - the socket type is compared after masking SOCK_NONBLOCK | SOCK_CLOEXEC (libuv, Python and
 *   the JVM create sockets with those flags);
 * - setsockopt is rewritten only when the level is IPPROTO_TCP *and* the option TCP_NODELAY
 *   (SO_DEBUG and UDP_CORK have the same number);
 * - an accepted socket is checked with getsockopt (domain, type, protocol), never assumed TCP:
 *   accept on a Unix listener stays untouched;
 * - the caller sees exactly the errno of its own call: everything the shim adds saves and
 *   restores errno;
 * - the shim never prints and never aborts: if a symbol cannot be resolved, the call fails with
 *   ENOSYS like an unsupported system call.
 *
 * Built by crates/launch/build.rs into a shared object embedded in the nodelay binary. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif

#define EXPORT __attribute__((visibility("default")))

typedef int (*socket_fn)(int, int, int);
typedef int (*accept_fn)(int, struct sockaddr *, socklen_t *);
typedef int (*accept4_fn)(int, struct sockaddr *, socklen_t *, int);
typedef int (*setsockopt_fn)(int, int, int, const void *, socklen_t);

/* The next definitions (libc's), resolved on first use. Two threads racing to resolve store
 * the same pointer, so an atomic load and store is all the synchronisation needed. */
static void *next_socket, *next_accept, *next_accept4, *next_setsockopt;

static void *resolve(void **slot, const char *name) {
    void *function = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (function == NULL) {
        int saved = errno;
        function = dlsym(RTLD_NEXT, name);
        __atomic_store_n(slot, function, __ATOMIC_RELEASE);
        errno = saved;
    }
    return function;
}

static int is_tcp_protocol(int protocol) {
    return protocol == IPPROTO_TCP || protocol == IPPROTO_MPTCP;
}

/* Sets TCP_NODELAY on fd through libc's setsockopt, never through the wrapper below. */
static void force_nodelay(int fd) {
    setsockopt_fn real = (setsockopt_fn)resolve(&next_setsockopt, "setsockopt");
    if (real == NULL) return;
    int saved = errno;
    int one = 1;
    (void)real(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    errno = saved;
}

/* Whether an accepted fd is a TCP socket, asked of the kernel. */
static int is_tcp_socket(int fd) {
    int saved = errno;
    int domain = 0, type = 0, protocol = 0;
    socklen_t length = sizeof domain;
    int tcp = getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) == 0 &&
              (domain == AF_INET || domain == AF_INET6);
    length = sizeof type;
    tcp = tcp && getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0 && type == SOCK_STREAM;
    length = sizeof protocol;
    tcp = tcp && getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &length) == 0 &&
          is_tcp_protocol(protocol);
    errno = saved;
    return tcp;
}

EXPORT int socket(int domain, int type, int protocol) {
    socket_fn real = (socket_fn)resolve(&next_socket, "socket");
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    int fd = real(domain, type, protocol);
    /* The low bits are the type; SOCK_NONBLOCK and SOCK_CLOEXEC are flags above them. */
    if (fd >= 0 && (domain == AF_INET || domain == AF_INET6) && (type & 0xf) == SOCK_STREAM &&
        (protocol == 0 || is_tcp_protocol(protocol)))
        force_nodelay(fd);
    return fd;
}

EXPORT int accept(int listener, struct sockaddr *address, socklen_t *length) {
    accept_fn real = (accept_fn)resolve(&next_accept, "accept");
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    int fd = real(listener, address, length);
    if (fd >= 0 && is_tcp_socket(fd)) force_nodelay(fd);
    return fd;
}

EXPORT int accept4(int listener, struct sockaddr *address, socklen_t *length, int flags) {
    accept4_fn real = (accept4_fn)resolve(&next_accept4, "accept4");
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    int fd = real(listener, address, length, flags);
    if (fd >= 0 && is_tcp_socket(fd)) force_nodelay(fd);
    return fd;
}

EXPORT int setsockopt(int fd, int level, int option, const void *value, socklen_t length) {
    setsockopt_fn real = (setsockopt_fn)resolve(&next_setsockopt, "setsockopt");
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    /* Only a well-formed "turn NODELAY off" is changed; anything malformed goes to the kernel
     * as it came, so the caller gets the kernel's own error. */
    if (level == IPPROTO_TCP && option == TCP_NODELAY && value != NULL && length >= sizeof(int)) {
        int requested;
        memcpy(&requested, value, sizeof requested); /* the caller's pointer may be unaligned */
        if (requested == 0) {
            static const int one = 1;
            return real(fd, level, option, &one, sizeof one);
        }
    }
    return real(fd, level, option, value, length);
}
