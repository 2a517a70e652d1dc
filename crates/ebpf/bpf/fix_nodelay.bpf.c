// nodelay fix --cgroup: TCP_NODELAY on every TCP connection of a cgroup, kept on.
//
// The sock_ops program runs when a connection of the cgroup is established, accepted or
// opened, and sets TCP_NODELAY there. The cgroup setsockopt program runs on the program's
// own setsockopt(2) calls: setsockopt(SOL_TCP, TCP_NODELAY, 0) is rewritten to 1 before the
// kernel sees it, and counted, so the change is reported rather than silent.
// Compiled by clang in build.rs; loaded by crates/ebpf/src/fix.rs.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define SOL_TCP 6
#define TCP_NODELAY 1

// The slots of `counts`, read by fix.rs (FixCounts).
#define CONNECTIONS_SET 0
#define SET_REFUSED 1
#define TURN_OFFS_KEPT 2

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 3);
    __type(key, __u32);
    __type(value, __u64);
} counts SEC(".maps");

static void count(__u32 slot) {
    __u64 *n = bpf_map_lookup_elem(&counts, &slot);
    if (n)
        __sync_fetch_and_add(n, 1);
}

SEC("sockops")
int nodelay_sockops(struct bpf_sock_ops *ops) {
    if (ops->op == BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB || ops->op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB) {
        int on = 1;
        count(bpf_setsockopt(ops, SOL_TCP, TCP_NODELAY, &on, sizeof(on)) == 0 ? CONNECTIONS_SET : SET_REFUSED);
    }
    return 1;
}

#define PAGE_SIZE 4096
#define IPPROTO_TCP 6

SEC("cgroup/setsockopt")
int nodelay_keep(struct bpf_sockopt *ctx) {
    // The program sees at most a page of a larger optval: such an option is none of ours,
    // and optlen 0 hands the kernel the caller's own buffer (prog_cgroup_sockopt.rst).
    if (ctx->optlen > PAGE_SIZE) {
        ctx->optlen = 0;
        return 1;
    }
    struct bpf_sock *sk = ctx->sk;
    // A short optval, or level 6 on a socket that is not TCP, is the kernel's to refuse.
    if (ctx->level == SOL_TCP && ctx->optname == TCP_NODELAY && ctx->optlen >= 4 && sk &&
        sk->protocol == IPPROTO_TCP) {
        int *value = ctx->optval;
        // The verifier insists on the bound (optval_end is at least 16 bytes on).
        if ((void *)(value + 1) <= ctx->optval_end && *value == 0) {
            *value = 1;
            count(TURN_OFFS_KEPT);
        }
    }
    // 1: the kernel goes on with the (possibly rewritten) call.
    return 1;
}

char LICENSE[] SEC("license") = "GPL";
