// nodelay watch from the kernel: Nagle holds timed where the kernel decides them.
//
// At each send (sock:sock_send_length, in the sending process's context) the socket is read
// (CO-RE, struct tcp_sock): bytes left unsent with Nagle on while a small segment it sent is
// unacknowledged, neither the congestion window nor the peer's window keeping them, is a
// hold, and its start is kept in the socket's own storage. Not only a sub-MSS tail: with a
// small segment in flight Linux keeps the whole write back, full segments too (measured across
// a 10 ms path: 25 of 30 two-write responses of 2 KB left 2,000 bytes unsent). When an
// incoming segment (tcp:tcp_probe) acknowledges the small segment (Linux's Nagle is
// Minshall's variant), the held bytes go out: the hold ends. A resend (tcp:tcp_retransmit_skb)
// during a hold, or a loss probe outstanding when it ends, marks it: its wait was a loss's or
// a stalled path's, whatever its length. A connection's end (sock:inet_sock_set_state to
// CLOSE) is counted, and an end straight from ESTABLISHED or CLOSE-WAIT, with no closing
// handshake, is a reset (or a timeout: the kernel's own EstabResets counts the same).
// Figures are summed per (process, local port, remote port) in `holds`; user space reads the
// map once a second, never a copy per packet.
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#define LRU_HASH 9 // BPF_MAP_TYPE_LRU_HASH
#define SK_STORAGE 24 // BPF_MAP_TYPE_SK_STORAGE
#define BPF_SK_STORAGE_GET_F_CREATE 1
#define TCP_NAGLE_OFF 1
#define IPPROTO_TCP 6
#define TCP_ESTABLISHED 1
#define TCP_CLOSE 7
#define TCP_CLOSE_WAIT 8

// Only the fields read; clang records their names and the loader relocates each to the
// running kernel's offset (BTF), so no kernel headers are compiled in.
struct in6_addr {
    union {
        __u8 u6_addr8[16];
    } in6_u;
} __attribute__((preserve_access_index));
struct sock_common {
    __u32 skc_daddr;
    __u32 skc_rcv_saddr;
    __u16 skc_dport;
    __u16 skc_num;
    __u16 skc_family;
    struct in6_addr skc_v6_daddr;
    struct in6_addr skc_v6_rcv_saddr;
} __attribute__((preserve_access_index));
struct sock {
    struct sock_common __sk_common;
    __u16 sk_type;
    __u16 sk_protocol;
} __attribute__((preserve_access_index));
struct minmax_sample {
    __u32 t;
    __u32 v;
} __attribute__((preserve_access_index));
struct minmax {
    struct minmax_sample s[3];
} __attribute__((preserve_access_index));
struct tcp_sock {
    struct minmax rtt_min;
    __u32 mss_cache;
    __u32 snd_cwnd;
    __u32 snd_una;
    __u32 snd_wnd;
    __u32 write_seq;
    __u8 nonagle : 4;
    __u32 snd_nxt;
    __u32 snd_sml;
    __u32 packets_out;
    __u32 tlp_high_seq;
} __attribute__((preserve_access_index));
struct sk_buff {
    unsigned int len;
    unsigned char *data;
} __attribute__((preserve_access_index));
// BTF-typed raw tracepoints (tp_btf): the tracepoint's own arguments, with no record
// assembled for them (sock_send_length: sk, ret, flags; tcp_probe: sk, skb), and typed, so
// the kernel's structs are read with plain loads, not a helper call per field.

// What `holds` is keyed by: one process's connections on one pair of ports.
struct hold_key {
    __u32 tgid;
    __u16 local_port;
    __u16 remote_port;
};

// How a hold ended, told by the peer's share of it (the hold less the path's round trip),
// with the thresholds `nodelay watch` sets at load (the same as a capture's, crates/tcp).
#define DELAYED_ACK 0 // the peer's delayed-ACK timer released it
#define ROUND_TRIP 1  // an ACK sent at once, one round trip later
#define UNCLASSED 2   // neither: too short to matter, or longer than any ACK timer
#define RESENT 3      // the socket resent data or sent a loss probe during the hold: a loss's
                      // wait (or a stalled path's), not the peer's ACK timer
#define KINDS 4
volatile const __u64 min_ack_delay_ns = 25000000;
volatile const __u64 max_ack_delay_ns = 500000000;
volatile const __u64 min_round_trip_hold_ns = 500000;
volatile const __u64 round_trip_slack_ns = 200000;

// Each hold is also counted in a bucket of its length, by the upper bounds watch's Prometheus
// histogram uses (crates/watch, STALL_BUCKETS_SECONDS; set at load), the last bucket past them.
#define BUCKETS 16
volatile const __u64 bucket_bounds_ns[BUCKETS - 1] = {};

struct kind_totals {
    __u64 holds;
    __u64 held_ns;
    __u64 min_rtt_us_sum; // the connection's lowest RTT at each release: the path's share
    __u32 buckets[BUCKETS]; // holds by length (bucket_bounds_ns)
};

// Read by crates/ebpf/src/holds.rs (RawStats): keep the two in step.
struct hold_stats {
    struct kind_totals kinds[KINDS];
    __u64 longest_ns;
    __u64 sends;
    __u64 exchanges; // sends that followed data from the peer: request/response turns
    __u64 resends;   // retransmissions (a timeout's, a fast retransmit's, a loss probe's), each
                     // one buffer of one or more segments
    __u64 closes;    // sockets that reached CLOSE
    __u64 resets;    // ...straight from ESTABLISHED or CLOSE-WAIT: a reset sent or received, or
                     // the kernel giving up (retransmission or keep-alive timeouts)
    __u64 first_hold_ns; // bpf_ktime_get_ns (CLOCK_MONOTONIC); 0: none yet
    __u64 last_hold_ns;
    // The connection's addresses when the entry was made (network order; IPv4 in the first
    // four bytes), so the holder's side and descriptor can be looked up.
    __u8 local_addr[16];
    __u8 remote_addr[16];
    __u16 family;
    __u8 padding[6];
};

// What the programs keep per socket, in the socket's own storage: freed with the socket, so
// nothing of a closed connection is left for the next one at the same address.
struct sock_state {
    __u64 hold_start_ns; // 0: no hold pending
    struct hold_key key;  // the last send's (a hold's, as at its start); tgid 0: none yet
    __u32 hold_small_end; // the end of the small segment whose ACK Nagle waits for
    __u8 peer_spoke;      // the peer sent data since this socket's last send
    __u8 hold_resent;     // the socket resent data since the pending hold began
    __u8 padding[6];
};

struct {
    __uint(type, SK_STORAGE);
    __uint(map_flags, 1 /* BPF_F_NO_PREALLOC, which socket storage requires */);
    __type(key, int);
    __type(value, struct sock_state);
} sock_states SEC(".maps");

struct {
    __uint(type, LRU_HASH);
    __uint(max_entries, 16384);
    __type(key, struct hold_key);
    __type(value, struct hold_stats);
} holds SEC(".maps");

#define AF_INET 2

static struct hold_stats *stats_of(struct hold_key *key, struct sock *sk) {
    struct hold_stats *stats = bpf_map_lookup_elem(&holds, key);
    if (stats)
        return stats;
    // A new entry: its addresses are read once, here.
    struct hold_stats fresh = {};
    fresh.family = sk->__sk_common.skc_family;
    if (fresh.family == AF_INET) {
        __u32 local = sk->__sk_common.skc_rcv_saddr;
        __u32 remote = sk->__sk_common.skc_daddr;
        __builtin_memcpy(fresh.local_addr, &local, 4);
        __builtin_memcpy(fresh.remote_addr, &remote, 4);
    } else {
        BPF_CORE_READ_INTO(&fresh.local_addr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
        BPF_CORE_READ_INTO(&fresh.remote_addr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
    }
    bpf_map_update_elem(&holds, key, &fresh, 1 /* BPF_NOEXIST */);
    return bpf_map_lookup_elem(&holds, key);
}

// A send's socket: a hold starts where the send leaves bytes unsent behind Nagle. `tp` is `sk`
// as a tcp_sock (one of the two ways below), checked to be TCP.
static __always_inline int on_send(struct sock *sk, struct tcp_sock *tp) {
    // With TCP_NODELAY nothing is ever held: such a socket (most servers') costs one read.
    __u32 nonagle = BPF_CORE_READ_BITFIELD(tp, nonagle);
    if (nonagle & TCP_NAGLE_OFF)
        return 0;
    struct sock_state *state = bpf_sk_storage_get(&sock_states, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
    if (!state)
        return 0;
    struct hold_key key = {
        .tgid = bpf_get_current_pid_tgid() >> 32,
        .local_port = sk->__sk_common.skc_num,
        .remote_port = bpf_ntohs(sk->__sk_common.skc_dport),
    };
    struct hold_stats *stats = stats_of(&key, sk);
    // Kept for the events with no process of their own (a resend, the socket's end), while
    // no hold is pending: a pending hold keeps the key it began with.
    if (state->hold_start_ns == 0)
        state->key = key;
    if (stats) {
        __sync_fetch_and_add(&stats->sends, 1);
        if (state->peer_spoke) {
            __sync_fetch_and_add(&stats->exchanges, 1);
            state->peer_spoke = 0;
        }
    }
    __u32 snd_nxt = tp->snd_nxt;
    __u32 unsent = tp->write_seq - snd_nxt;
    __u32 in_flight = tp->packets_out;
    if (unsent == 0 || in_flight == 0)
        return 0;
    // Kept by the congestion window, or by the peer's window: not Nagle's.
    __u32 mss = tp->mss_cache;
    __u32 window_left = tp->snd_una + tp->snd_wnd - snd_nxt;
    if (in_flight >= tp->snd_cwnd || (__s32)window_left < (__s32)(unsent < mss ? unsent : mss))
        return 0;
    // Linux's Nagle (Minshall's variant) keeps a partial segment back only while a small
    // segment it sent is unacknowledged (tcp_minshall_check: snd_sml after snd_una, not after
    // snd_nxt). Bytes unsent without one wait for something else (autocorking, TSO's
    // deferral): no hold.
    __u32 small_end = tp->snd_sml;
    if ((__s32)(small_end - tp->snd_una) <= 0 || (__s32)(small_end - snd_nxt) > 0)
        return 0;
    // A hold already pending on the socket keeps its start.
    if (state->hold_start_ns == 0) {
        state->hold_start_ns = bpf_ktime_get_ns();
        state->hold_small_end = small_end;
        state->hold_resent = 0;
    }
    return 0;
}

// An incoming segment (tcp_probe: sk, skb), `tp` being `sk` as a tcp_sock: the hold ends at
// the ACK of the small segment Nagle waits for.
static __always_inline int on_segment(__u64 *ctx, struct sock *sk, struct tcp_sock *tp) {
    // Only sockets that can hold are followed (as at the send).
    if (BPF_CORE_READ_BITFIELD(tp, nonagle) & TCP_NAGLE_OFF)
        return 0;
    // tcp_rcv_established calls the tracepoint with skb->data at the TCP header.
    struct sk_buff *skb = (struct sk_buff *)ctx[1];
    unsigned char *header = skb->data;
    __u8 offset_byte = 0;
    bpf_probe_read_kernel(&offset_byte, 1, header + 12);
    // Data from the peer: more than the header (its length in words, the byte's high half).
    int data = skb->len > (__u32)(offset_byte >> 4) * 4;
    // Data makes the socket a state (the request a pre-opened connection's server is about to
    // answer); a pure ACK to a socket with none has nothing to release.
    struct sock_state *state =
        bpf_sk_storage_get(&sock_states, sk, 0, data ? BPF_SK_STORAGE_GET_F_CREATE : 0);
    if (!state)
        return 0;
    if (data)
        state->peer_spoke = 1;
    if (state->hold_start_ns == 0)
        return 0;
    __u32 ack = 0;
    bpf_probe_read_kernel(&ack, sizeof(ack), header + 8);
    ack = bpf_ntohl(ack);
    // The small segment acknowledged: Nagle lets the held bytes go now (what still waits,
    // waits on the congestion or the peer's window). Not "everything in flight": behind a
    // cwnd-limited body, that came a round trip after the tail left (a 25 KB response across
    // 10 ms: holds of 21.5 ms where the client lost 6.7 ms).
    if ((__s32)(ack - state->hold_small_end) < 0)
        return 0;
    // An ACK beyond a window's reach belongs to another connection's sequence space.
    if (ack - state->hold_small_end > (1u << 30)) {
        state->hold_start_ns = 0;
        return 0;
    }
    __u64 now = bpf_ktime_get_ns();
    __u64 held = now - state->hold_start_ns;
    struct hold_key key = state->key;
    state->hold_start_ns = 0;
    struct hold_stats *stats = stats_of(&key, sk);
    if (!stats)
        return 0;
    // Not the smoothed RTT: the peer's delayed ACKs inflate its samples by their delay.
    __u32 rtt_us = tp->rtt_min.s[0].v;
    __u64 rtt_ns = (__u64)rtt_us * 1000;
    __u64 peer_share = held > rtt_ns ? held - rtt_ns : 0;
    int kind = UNCLASSED;
    // A loss probe outstanding (tlp_high_seq, cleared once this ACK is processed) sent data
    // without waiting for the ACK: the held bytes, or a copy of the last segment.
    if (state->hold_resent || tp->tlp_high_seq != 0)
        kind = RESENT;
    else if (peer_share >= min_ack_delay_ns && peer_share <= max_ack_delay_ns)
        kind = DELAYED_ACK;
    else if (peer_share <= round_trip_slack_ns + rtt_ns / 4 && held >= min_round_trip_hold_ns)
        kind = ROUND_TRIP;
    struct kind_totals *totals = &stats->kinds[kind];
    __u32 bucket = BUCKETS - 1;
    for (int i = 0; i < BUCKETS - 1; i++) {
        if (held <= bucket_bounds_ns[i]) {
            bucket = i;
            break;
        }
    }
    // The count last: a reader that sees it sees the hold's length and bucket too (one that
    // reads between them finds figures without a count, and leaves them for its next read).
    __sync_fetch_and_add(&totals->buckets[bucket & (BUCKETS - 1)], 1);
    __sync_fetch_and_add(&totals->held_ns, held);
    __sync_fetch_and_add(&totals->min_rtt_us_sum, rtt_us);
    __sync_fetch_and_add(&totals->holds, 1);
    if (held > stats->longest_ns)
        stats->longest_ns = held;
    if (stats->first_hold_ns == 0)
        stats->first_hold_ns = now;
    stats->last_hold_ns = now;
    return 0;
}

// The socket as a tcp_sock, two ways. Every program runs at every send or incoming segment of
// the host, so its cost is per packet: on a host whose kernel returns go through a mitigation
// (SRSO's safe RET here), a helper call costs 35 ns a run, a third of a program's whole cost.
// bpf_rdonly_cast (a kfunc, Linux 6.2 and later) costs nothing: the verifier turns it into a
// register move, and the loads through it into checked ones. The loader in use (aya) links no
// kfuncs, so the call is written as its raw instruction (BPF_CALL, src_reg 2 for a kfunc in
// vmlinux) with a marker for an immediate, which user space replaces with the kernel's BTF id
// of bpf_rdonly_cast (crates/ebpf/src/kfunc.rs). Where the kernel has none, the `_h` programs,
// which call bpf_skc_to_tcp_sock, load instead.
#define SOCK_STREAM 1
static __always_inline struct tcp_sock *cast_tcp_sock(struct sock *sk) {
    // Not a tcp_sock at all: a raw socket of protocol TCP (SOCK_RAW), or MPTCP's own socket.
    if (sk->sk_protocol != IPPROTO_TCP || sk->sk_type != SOCK_STREAM)
        return 0;
    __u64 type_id = bpf_core_type_id_kernel(struct tcp_sock);
    struct tcp_sock *tp;
    asm volatile("r1 = %[sk]\n\t"
                 "r2 = %[type_id]\n\t"
                 ".quad 0x6e6f646c00002085\n\t" // call bpf_rdonly_cast (marker 0x6e6f646c)
                 "%[tp] = r0"
                 : [tp] "=r"(tp)
                 : [sk] "r"(sk), [type_id] "r"(type_id)
                 : "r0", "r1", "r2", "r3", "r4", "r5");
    return tp;
}

SEC("tp_btf/sock_send_length")
int nodelay_send(__u64 *ctx) {
    struct sock *sk = (struct sock *)ctx[0];
    if ((int)ctx[1] <= 0)
        return 0;
    struct tcp_sock *tp = cast_tcp_sock(sk);
    return tp ? on_send(sk, tp) : 0;
}

SEC("tp_btf/sock_send_length")
int nodelay_send_h(__u64 *ctx) {
    struct sock *sk = (struct sock *)ctx[0];
    if ((int)ctx[1] <= 0 || sk->sk_protocol != IPPROTO_TCP)
        return 0;
    struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
    return tp ? on_send(sk, tp) : 0;
}

// tcp_rcv_established calls it: the socket is always a tcp_sock.
SEC("tp_btf/tcp_probe")
int nodelay_ack(__u64 *ctx) {
    struct sock *sk = (struct sock *)ctx[0];
    struct tcp_sock *tp = cast_tcp_sock(sk);
    return tp ? on_segment(ctx, sk, tp) : 0;
}

SEC("tp_btf/tcp_probe")
int nodelay_ack_h(__u64 *ctx) {
    struct sock *sk = (struct sock *)ctx[0];
    struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
    return tp ? on_segment(ctx, sk, tp) : 0;
}

// The entry of a socket's last send: none for a socket never followed (TCP_NODELAY set, or
// no send yet), whose events are not counted.
static struct hold_stats *followed_stats(struct sock *sk, struct sock_state **state) {
    *state = bpf_sk_storage_get(&sock_states, sk, 0, 0);
    if (!*state || (*state)->key.tgid == 0)
        return 0;
    return bpf_map_lookup_elem(&holds, &(*state)->key);
}

static int count_resend(struct sock *sk) {
    struct sock_state *state;
    struct hold_stats *stats = followed_stats(sk, &state);
    if (!stats)
        return 0;
    __sync_fetch_and_add(&stats->resends, 1);
    if (state->hold_start_ns != 0)
        state->hold_resent = 1;
    return 0;
}

// Newer kernels (6.17 and later, as far as known) pass a third argument, the resend's error,
// and fire for failed tries too (the original still queued: -EBUSY), which sent nothing. The
// loader picks the program whose arguments the kernel has: the verifier refuses this one where
// the tracepoint has two.
SEC("tp_btf/tcp_retransmit_skb")
int nodelay_resend(__u64 *ctx) {
    if ((int)ctx[2] != 0)
        return 0;
    return count_resend((struct sock *)ctx[0]);
}

SEC("tp_btf/tcp_retransmit_skb")
int nodelay_resend2(__u64 *ctx) {
    return count_resend((struct sock *)ctx[0]);
}

SEC("tp_btf/inet_sock_set_state")
int nodelay_state(__u64 *ctx) {
    struct sock *sk = (struct sock *)ctx[0];
    int old_state = (int)ctx[1], new_state = (int)ctx[2];
    if (new_state != TCP_CLOSE || sk->sk_protocol != IPPROTO_TCP)
        return 0;
    struct sock_state *state;
    struct hold_stats *stats = followed_stats(sk, &state);
    if (!stats)
        return 0;
    __sync_fetch_and_add(&stats->closes, 1);
    if (old_state == TCP_ESTABLISHED || old_state == TCP_CLOSE_WAIT)
        __sync_fetch_and_add(&stats->resets, 1);
    return 0;
}

char LICENSE[] SEC("license") = "GPL";
