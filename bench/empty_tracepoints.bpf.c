// The floor for bench/kernel_holds_cost.py: programs that do nothing, on the two tracepoints
// nodelay watch's hot programs use (a send, an incoming segment). What they cost is what any
// eBPF program there pays on this kernel and machine, before its own work.
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

SEC("tp_btf/sock_send_length")
int empty_send(__u64 *ctx) {
    return 0;
}

SEC("tp_btf/tcp_probe")
int empty_ack(__u64 *ctx) {
    return 0;
}

char LICENSE[] SEC("license") = "GPL";
