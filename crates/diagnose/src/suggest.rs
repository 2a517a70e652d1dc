//! What a bench run's own numbers suggest, with no experiment run: the passive signatures of
//! the idle-CPU latency family, each with the command that would prove it. bench prints
//! them under its results ("what these numbers suggest"); JSON `suggestions`.

use crate::phase::syn_retry_cluster;
use nodelay_flags::Flag::{self, Grpc, NoKeepalive};
use nodelay_tcp::timers::{hop_stall_timer, match_delayed_ack_timer};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// What a bench run measured, as the rules need it (milliseconds unless named otherwise).
#[derive(Debug, Clone, Default)]
pub struct RunShape {
    /// The target, for the commands that prove a suggestion.
    pub url: String,
    /// The options that reach it besides the URL (the CA file, no certificate check, the
    /// server name, no session resumption), each with its value: a command without them would
    /// fail where the run did not.
    pub tls_options: Vec<(Flag, Option<String>)>,
    /// nodelay's words for the run's method, headers, body, HTTP/2 and gRPC options (`-m PUT`,
    /// `--h2`, `--grpc /p.S/M`), quoted: the nodelay commands send what the run sent.
    pub nodelay_request_words: Vec<String>,
    /// curl's words for the run's method, headers and body (`-X PUT`, `-H 'A: b'`,
    /// `--data-binary @f`), quoted: the error-page command sends what the run sent.
    pub request_words: Vec<String>,
    /// Connections the run kept open at once (`-c`).
    pub connections: usize,
    /// Worker threads of the generator.
    pub threads: usize,
    /// Connections were reused (no `--no-keep-alive`).
    pub keep_alive: bool,
    /// Responses completed.
    pub responses: u64,
    /// Of those, responses on a connection that had already carried one.
    pub reused_responses: u64,
    /// Responses outside the success statuses, gRPC calls with a non-OK grpc-status among them.
    pub non_success: u64,
    /// `--grpc`: the method called.
    pub grpc_method: Option<String>,
    /// The non-OK grpc-statuses, with counts, as `grpc-status 12 ×50`; empty without any.
    pub grpc_failures: String,
    /// The path's round trip (client TCP_INFO min_rtt), when measured: first bytes are judged
    /// beyond it.
    pub path_rtt_ms: Option<f64>,
    /// HTTP/2: streams asked of each connection (`--streams`)...
    pub h2_streams_asked: Option<usize>,
    /// ...the server's SETTINGS_MAX_CONCURRENT_STREAMS, when it stated one...
    pub h2_stream_limit: Option<u32>,
    /// ...and the median time a request queued before its HEADERS left.
    pub h2_queued_p50_ms: Option<f64>,
    /// Median of each response's longest pause between two reads.
    pub read_gap_p50_ms: Option<f64>,
    /// 90th percentile of each response's longest pause between two reads.
    pub read_gap_p90_ms: Option<f64>,
    /// Mean `read()` calls per response: a stall needs at least two.
    pub read_chunks_mean: f64,
    /// Median TCP handshake.
    pub connect_p50_ms: Option<f64>,
    /// 90th percentile of the TCP handshake.
    pub connect_p90_ms: Option<f64>,
    /// Connects that gave up (`--connect-timeout`, 3 s by default: a SYN dropped twice).
    pub connect_timeouts: u64,
    /// Connects that took as long as a SYN retransmission ([`crate::SYN_RETRY_WINDOWS_MS`]): on
    /// loopback each is a dropped SYN, even when too few to move a percentile.
    pub connects_at_syn_retry: u64,
    /// Connects the run ended before any answer came to, past [`UNANSWERED_CONNECT_MIN_MS`] and
    /// ten times the completed ones' median: a run shorter than the SYN's 1 s retry sees a full
    /// listen queue only here.
    pub connects_unanswered_at_end: u64,
    /// The longest wait among them.
    pub connect_unanswered_longest_ms: Option<f64>,
    /// 99th percentile of the TCP handshake.
    pub connect_p99_ms: Option<f64>,
    /// Median time to first byte.
    pub first_byte_p50_ms: Option<f64>,
    /// 90th percentile of time to first byte.
    pub first_byte_p90_ms: Option<f64>,
    /// 99th percentile of time to first byte.
    pub first_byte_p99_ms: Option<f64>,
    /// Total latency at p10, p20 ... p90 (any ascending set of quantiles).
    pub latency_quantiles_ms: Vec<f64>,
    /// The generator's CPU over the run, as a share of its threads' time (1.0 = every thread
    /// busy all the time); `None` when not measured.
    pub generator_cpu_share: Option<f64>,
    /// The generator busy-polled (`--busy-poll`): its threads spin on purpose, so their CPU
    /// share says nothing about saturation.
    pub generator_spins: bool,
    /// Connects that found no free local port (EADDRNOTAVAIL).
    pub ports_exhausted: u64,
    /// This machine's ephemeral ports after the run, when some were exhausted.
    pub local_ports: Option<nodelay_host::LocalPorts>,
}

/// One suggestion: a finding id (or a generator one), why the numbers point at it, and the
/// command that proves or disproves it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Suggestion {
    /// The finding id it points at, or a generator one.
    pub id: Cow<'static, str>,
    /// Why the numbers point at it.
    pub why: String,
    /// The command that proves or disproves it.
    pub prove: String,
}

/// A first byte whose p90 is within this of its p50 is steady: a timer, not a busy server.
const STEADY_FIRST_BYTE_SPREAD_MS: f64 = 3.0;

/// The generator's CPU share above which its own speed, not the server's, bounds the run.
pub const GENERATOR_SATURATED_SHARE: f64 = 0.9;

/// A connect still unanswered at a run's end counts as a dropped SYN past this wait, and past
/// ten times the completed connects' median: the SYN-ACK of a loopback handshake comes within
/// a millisecond, one across a path within a round trip or so. (Not their p99: once SYNs are
/// dropped, it is the retry's second itself.)
pub const UNANSWERED_CONNECT_MIN_MS: f64 = 20.0;

/// Of the waits of connects the run ended before any answer came to, those long enough to be
/// dropped SYNs (see [`UNANSWERED_CONNECT_MIN_MS`]): how many, and the longest, in ms.
pub fn unanswered_connects(
    waits_ms: impl IntoIterator<Item = f64>,
    completed_p50_ms: Option<f64>,
) -> (u64, Option<f64>) {
    let floor_ms = UNANSWERED_CONNECT_MIN_MS.max(10.0 * completed_p50_ms.unwrap_or(0.0));
    waits_ms
        .into_iter()
        .filter(|ms| *ms >= floor_ms)
        .fold((0, None), |(count, longest), ms| (count + 1, Some(longest.map_or(ms, |l: f64| l.max(ms)))))
}

/// nodelay's own spelling of a TLS option: every one reaches a nodelay command.
fn nodelay_option(flag: Flag) -> Option<String> {
    Some(flag.to_string())
}

/// The URL after the TLS options a command takes (`spelled` says how, `None` where it takes
/// none), with their values, quoted for a shell where needed.
fn target(run: &RunShape, spelled: fn(Flag) -> Option<String>) -> String {
    let mut words = Vec::new();
    for (flag, value) in &run.tls_options {
        if let Some(option) = spelled(*flag) {
            words.push(option);
            words.extend(value.as_deref().map(shell_word));
        }
    }
    words.push(shell_word(&run.url));
    words.join(" ")
}

/// A word as a POSIX shell reads it back: as is when it holds only safe characters, else in
/// single quotes.
pub fn shell_word(text: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:@%+=,[]?&~".contains(c);
    if !text.is_empty() && text.chars().all(safe) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The passive rules, in order of how much of the time they explain.
pub(crate) fn suggest(run: &RunShape) -> Vec<Suggestion> {
    let mut out = Vec::new();
    if run.responses == 0 {
        return out;
    }
    // nodelay's commands: the request as the run sent it, then the TLS options and the URL.
    let url = &run
        .nodelay_request_words
        .iter()
        .cloned()
        .chain([target(run, nodelay_option)])
        .collect::<Vec<_>>()
        .join(" ");
    listen_queue(run, url, &mut out);
    delayed_ack_timer(run, url, &mut out);
    held_tail_or_hop(run, url, &mut out);
    stream_limit(run, url, &mut out);
    closed_keep_alive(run, url, &mut out);
    error_responses(run, url, &mut out);
    ports_exhausted(run, &mut out);
    generator_saturated(run, &mut out);
    out
}

/// Connects that waited a SYN retransmission, or timed out, while most connected at once.
fn listen_queue(run: &RunShape, url: &str, out: &mut Vec<Suggestion>) {
    // A cluster of connects (or of first bytes, when the handshake's last ACK was dropped and
    // the client believes it is connected) at the SYN retransmission times.
    // A server that simply takes a second has its median there too: only a tail counts.
    let fast_median = run.first_byte_p50_ms.is_some_and(|p50| p50 < 300.0);
    let first_bytes = [run.first_byte_p99_ms, run.first_byte_p90_ms].map(|ms| ms.filter(|_| fast_median));
    let retried = [run.connect_p99_ms, run.connect_p90_ms, first_bytes[0], first_bytes[1]]
        .into_iter()
        .flatten()
        .find_map(syn_retry_cluster);
    // Past the connect timeout, the 3 s cluster becomes failures; the others connected at once.
    let fast_connects = run.connect_p50_ms.is_some_and(|p50| p50 < 100.0);
    let connect_p50_ms = run.connect_p50_ms.unwrap_or_default();
    // Each sign is proven the same way: one connection at a time shows none of it.
    let overflow = |why: String, at_low_concurrency: &str| Suggestion {
        id: "listen-backlog-overflow".into(),
        why,
        prove: format!(
            "nodelay bench -c 1 {NoKeepalive} {url} ({at_low_concurrency}); on the server: nstat -az \
             TcpExtListenOverflows"
        ),
    };
    let suggestion = if let Some(seconds) = retried {
        overflow(
            format!(
                "connects (or first bytes) cluster at {seconds} s, a SYN retransmission time: the server's listen \
                 queue overflowed (or SYNs were lost)"
            ),
            "the cluster vanishes at low concurrency",
        )
    } else if !fast_connects {
        return;
    } else if run.connects_at_syn_retry > 0 {
        overflow(
            format!(
                "{} connects took as long as a SYN retransmission (1 s, 3 s or 7 s) while the median one took \
                 {connect_p50_ms:.2} ms: the server's listen queue overflowed (or SYNs were lost)",
                run.connects_at_syn_retry
            ),
            "none at low concurrency",
        )
    } else if run.connects_unanswered_at_end > 0 {
        let longest = run.connect_unanswered_longest_ms;
        let longest_ms = longest.unwrap_or_default();
        overflow(
            format!(
                "{} still unanswered when the run ended, the longest after {longest_ms:.0} ms, while the median one \
                 took {connect_p50_ms:.2} ms: their SYNs were dropped, the server's listen queue overflowed (or SYNs \
                 were lost){}",
                if run.connects_unanswered_at_end == 1 {
                    "1 connect was".to_string()
                } else {
                    format!("{} connects were", run.connects_unanswered_at_end)
                },
                // Waits shorter than the first retry: the run ended before it.
                if longest.is_some_and(|ms| ms < crate::SYN_RETRY_WINDOWS_MS[0].0) {
                    "; a run of 2 s or more sees them retried at 1 s"
                } else {
                    ""
                }
            ),
            "every connect answered at low concurrency",
        )
    } else if run.connect_timeouts > 0 {
        overflow(
            format!(
                "{} connects timed out while the median one took {connect_p50_ms:.2} ms: SYNs were dropped and \
                 retried (1 s, 3 s): the server's listen queue overflowed (or SYNs were lost)",
                run.connect_timeouts
            ),
            "no timeouts at low concurrency",
        )
    } else {
        return;
    };
    out.push(suggestion);
}

/// Pauses inside responses, or latencies stacked, at a delayed-ACK timer.
fn delayed_ack_timer(run: &RunShape, url: &str, out: &mut Vec<Suggestion>) {
    // A pause needs two reads; the median gap speaks for half the responses, p90 for a tenth.
    let at_timer = |gap: Option<f64>| gap.filter(|gap| match_delayed_ack_timer(*gap).is_some());
    let paused = match (at_timer(run.read_gap_p50_ms), at_timer(run.read_gap_p90_ms)) {
        (Some(gap), _) => Some((gap, "half or more")),
        (None, Some(gap)) => Some((gap, "10 % or more")),
        (None, None) => None,
    };
    if let (true, Some((gap, share))) = (run.read_chunks_mean > 1.0, paused) {
        out.push(Suggestion {
            id: "server-nagle-delayed-ack".into(),
            why: format!(
                "{share} of the responses pause {gap:.0} ms between two reads, a delayed-ACK timer: Nagle on the \
                 server suspected"
            ),
            prove: format!("nodelay doctor {url}"),
        });
    } else if let Some(step) = quantized_at_40ms(&run.latency_quantiles_ms) {
        out.push(Suggestion {
            id: "delayed-ack-quantized".into(),
            why: format!(
                "latencies fall on multiples of 40 ms ({step}): a delayed-ACK timer is in the path (Nagle on one \
                 side, or a request written in pieces)"
            ),
            prove: format!("nodelay doctor {url}"),
        });
    }
}

/// Across a path, a tail held a round trip; or a first byte a steady timer late (a hop's
/// stall). Neither when a timer was already named.
fn held_tail_or_hop(run: &RunShape, url: &str, out: &mut Vec<Suggestion>) {
    // A steady first byte a delayed-ACK timer late, with no pause inside the responses: what a
    // front shows when a hop behind it stalls (nginx on a stalling backend: 44 ms).
    let timer_already_named =
        out.iter().any(|s| s.id == "server-nagle-delayed-ack" || s.id == "delayed-ack-quantized");
    // Across a path, keep-alive responses that end one round trip after their first byte,
    // with a pause inside: the tail a Nagle server holds for the ACK of the head (the doctor
    // proves it by the ACK clock). Measured at 0.5, 10 and 40 ms: 0.89, 10.7 and 42.0 ms from
    // first byte to last, against 0.03, 3.9 and 16.8 ms for the TCP_NODELAY twin.
    let path_rtt = nodelay_tcp::path_rtt_ms(run.path_rtt_ms);
    let reused = run.keep_alive && run.reused_responses * 2 >= run.responses;
    let total_p50 = (run.latency_quantiles_ms.len() == 9).then(|| run.latency_quantiles_ms[4]);
    if let (false, true, Some(rtt), Some(total), Some(first), Some(gap)) =
        (timer_already_named, reused, path_rtt, total_p50, run.first_byte_p50_ms, run.read_gap_p50_ms)
        && run.read_chunks_mean > 1.0
        // A pause inside: on a short path most of the round trip (a fast link's body of
        // several segments ends a round trip in too), on a long one at least 0.5 ms.
        && gap >= (rtt * 0.1).max((rtt * 0.5).min(0.5))
        && ((total - first) - rtt).abs() <= crate::tail::round_trip_slack_ms(rtt)
    {
        out.push(Suggestion {
            id: "server-nagle-round-trip".into(),
            why: format!(
                "half or more of the keep-alive responses end {:.2} ms after their first byte, about the path's \
                 {rtt:.2} ms round trip, with a pause inside: a tail Nagle on the server holds for the ACK of the \
                 head suspected",
                total - first
            ),
            prove: format!("nodelay doctor {url}"),
        });
    }
    if let (Some(p50), Some(p90)) = (run.first_byte_p50_ms, run.first_byte_p90_ms) {
        let beyond_path = (p50 - path_rtt.unwrap_or(0.0)).max(0.0);
        let steady = p90 - p50 <= STEADY_FIRST_BYTE_SPREAD_MS;
        if let (false, true, Some(timer)) = (timer_already_named, steady, hop_stall_timer(beyond_path)) {
            out.push(Suggestion {
                id: "slow-first-byte".into(),
                why: format!(
                    "first bytes wait a steady {beyond_path:.0} ms, like {}: the server may be waiting on a stalled \
                     hop of its own (an upstream service)",
                    timer.describe()
                ),
                prove: format!("nodelay doctor {url}"),
            });
        }
    }
}

/// HTTP/2 requests queued behind the server's stream limit.
fn stream_limit(run: &RunShape, url: &str, out: &mut Vec<Suggestion>) {
    if let (Some(asked), Some(limit), Some(queued)) =
        (run.h2_streams_asked, run.h2_stream_limit, run.h2_queued_p50_ms)
        && asked > limit as usize
        && queued >= crate::phase::QUEUED_MS
    {
        out.push(Suggestion {
            id: "h2-stream-limit-queueing".into(),
            why: format!(
                "{asked} streams asked of each connection, and the server allows {limit} at once: requests queue \
                 {queued:.2} ms (median) before they are sent"
            ),
            prove: format!("nodelay doctor {url}"),
        });
    }
}

/// Keep-alive asked for, and every connection closed by the server.
fn closed_keep_alive(run: &RunShape, url: &str, out: &mut Vec<Suggestion>) {
    // No more requests than connections: none had a second request to reuse it for.
    if run.keep_alive && run.reused_responses == 0 && run.responses > run.connections as u64 {
        out.push(Suggestion {
            id: "connection-per-request".into(),
            why:
                "keep-alive was asked, but the server closed every connection: each request paid a handshake"
                    .into(),
            prove: format!("nodelay doctor {url}"),
        });
    }
}

/// Error pages (or failed gRPC calls) among the responses.
fn error_responses(run: &RunShape, url: &str, out: &mut Vec<Suggestion>) {
    if let (true, Some(method)) = (run.non_success > 0 && !run.grpc_failures.is_empty(), &run.grpc_method) {
        // A failed call is HTTP 200: curl would show nothing; the doctor names the status.
        let share = run.non_success as f64 / run.responses as f64 * 100.0;
        out.push(Suggestion {
            id: "error-responses".into(),
            why: format!(
                "{share:.0} % of the calls failed ({}): their latency is not the method's",
                run.grpc_failures
            ),
            prove: if run.nodelay_request_words.is_empty() {
                format!("nodelay doctor {Grpc} {} {url}", shell_word(method))
            } else {
                format!("nodelay doctor {url}")
            },
        });
    } else if run.non_success > 0 {
        let share = run.non_success as f64 / run.responses as f64 * 100.0;
        out.push(Suggestion {
            id: "error-responses".into(),
            why: format!("{share:.0} % of the responses are error pages: their latency is not the page's"),
            prove: ["curl -i".to_string()]
                .into_iter()
                .chain(run.request_words.iter().cloned())
                .chain([target(run, crate::curl_words::curl_tls_option)])
                .collect::<Vec<_>>()
                .join(" "),
        });
    }
}

/// Connects that found no free local port.
fn ports_exhausted(run: &RunShape, out: &mut Vec<Suggestion>) {
    if run.ports_exhausted > 0 {
        let held = run
            .local_ports
            .map(|p| {
                format!(
                    "; {} sockets are in TIME-WAIT to the target, and net.ipv4.ip_local_port_range {}-{} has {} ports",
                    p.time_wait_to_target,
                    p.range_low,
                    p.range_high,
                    p.ports()
                )
            })
            .unwrap_or_default();
        out.push(Suggestion {
            id: "ephemeral-port-exhaustion".into(),
            why: format!(
                "{} connects found no free local port (EADDRNOTAVAIL){held}: the side that closes first keeps each \
                 port 60 s in TIME-WAIT",
                run.ports_exhausted
            ),
            prove: "ss -Htan state time-wait | wc -l; sysctl net.ipv4.ip_local_port_range net.ipv4.tcp_tw_reuse".into(),
        });
    }
}

/// The generator's own CPU was the limit.
fn generator_saturated(run: &RunShape, out: &mut Vec<Suggestion>) {
    let saturated =
        run.generator_cpu_share.filter(|cpu| *cpu >= GENERATOR_SATURATED_SHARE && !run.generator_spins);
    if let Some(cpu) = saturated {
        let threads = run.threads.max(1);
        let plural = if threads == 1 { "" } else { "s" };
        out.push(Suggestion {
            id: "generator-saturated".into(),
            why: format!(
                "nodelay kept its {threads} thread{plural} {:.0} % busy: these numbers measure the generator as much \
                 as the server",
                cpu * 100.0
            ),
            prove: format!("nodelay bench -t {} ... (more threads), or load from another machine", threads * 2),
        });
    }
}

/// "40, 80 and 120 ms" when most quantiles sit just above multiples of 40 ms, with at least
/// two different multiples: the signature of delayed ACKs stacking up.
fn quantized_at_40ms(quantiles: &[f64]) -> Option<String> {
    const STEP_MS: f64 = 40.0;
    let multiple = |ms: f64| {
        let k = (ms / STEP_MS).floor();
        (k >= 1.0 && ms - k * STEP_MS <= 8.0).then_some(k as u32)
    };
    let multiples: Vec<u32> = quantiles.iter().filter_map(|&ms| multiple(ms)).collect();
    if quantiles.len() < 5 || multiples.len() * 10 < quantiles.len() * 8 {
        return None;
    }
    let mut distinct = multiples.clone();
    distinct.dedup();
    if distinct.len() < 2 {
        return None;
    }
    let shown: Vec<String> = distinct.iter().take(4).map(|k| format!("{} ms", k * 40)).collect();
    Some(shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> RunShape {
        RunShape {
            url: "http://127.0.0.1:8000/".into(),
            connections: 1,
            threads: 1,
            keep_alive: true,
            responses: 100,
            reused_responses: 99,
            read_chunks_mean: 1.0,
            read_gap_p50_ms: Some(0.0),
            read_gap_p90_ms: Some(0.1),
            latency_quantiles_ms: vec![0.2; 9],
            ..RunShape::default()
        }
    }

    fn ids(run: &RunShape) -> Vec<String> {
        suggest(run).into_iter().map(|s| s.id.into_owned()).collect()
    }

    #[test]
    fn a_healthy_run_suggests_nothing() {
        assert!(suggest(&run()).is_empty());
    }

    #[test]
    fn read_gaps_at_the_delayed_ack_timer_suggest_server_nagle() {
        let stall = RunShape {
            read_chunks_mean: 2.0,
            read_gap_p50_ms: Some(43.4),
            read_gap_p90_ms: Some(43.6),
            ..run()
        };
        let found = suggest(&stall);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].id, "server-nagle-delayed-ack");
        assert!(found[0].why.contains("half or more") && found[0].why.contains("43 ms"), "{}", found[0].why);
        assert_eq!(found[0].prove, "nodelay doctor http://127.0.0.1:8000/");
        // A 10 ms pause is no timer.
        let slow = RunShape {
            read_chunks_mean: 2.0,
            read_gap_p50_ms: Some(10.0),
            read_gap_p90_ms: Some(12.0),
            ..run()
        };
        assert!(suggest(&slow).is_empty());
    }

    #[test]
    fn across_a_path_an_end_one_round_trip_after_the_first_byte_suggests_a_held_tail() {
        // The 25 KB two-write response across 10 ms (measured): 21.8 ms total, the first
        // byte at 11.0 ms, a 1.4 ms pause inside; its TCP_NODELAY twin ends 3.9 ms after it.
        let deciles = |p50: f64| (1..=9).map(|d| p50 + f64::from(d - 5) * 0.05).collect::<Vec<f64>>();
        let held = RunShape {
            path_rtt_ms: Some(10.3),
            read_chunks_mean: 9.0,
            first_byte_p50_ms: Some(11.0),
            read_gap_p50_ms: Some(1.4),
            latency_quantiles_ms: deciles(21.8),
            ..run()
        };
        assert_eq!(ids(&held), ["server-nagle-round-trip"]);
        let twin =
            RunShape { read_gap_p50_ms: Some(0.8), latency_quantiles_ms: deciles(14.7), ..held.clone() };
        assert!(ids(&twin).is_empty());
        // On loopback (min_rtt 0.02 ms) there is no path to hold for.
        assert!(ids(&RunShape { path_rtt_ms: Some(0.02), ..held.clone() }).is_empty());
        // A connection per request: its second flight keeps the same time.
        assert!(
            !ids(&RunShape { reused_responses: 0, ..held }).contains(&"server-nagle-round-trip".to_string())
        );
    }

    #[test]
    fn only_connects_unanswered_well_past_the_others_count() {
        assert_eq!(unanswered_connects([5.0, 25.0, 480.0], Some(0.1)), (2, Some(480.0)));
        // Across a 40 ms path a handshake takes 40 ms: one unanswered for 100 ms is not late.
        assert_eq!(unanswered_connects([100.0, 300.0], Some(41.0)), (0, None));
        // Once SYNs are dropped the p99 is the retry's second: the median still sets the bar.
        assert_eq!(unanswered_connects([1800.0], Some(0.1)), (1, Some(1800.0)));
        assert_eq!(unanswered_connects([], None), (0, None));
    }

    #[test]
    fn connects_at_one_or_three_seconds_suggest_a_listen_queue_overflow() {
        let overflow = RunShape { connect_p90_ms: Some(1003.0), connect_p99_ms: Some(3010.0), ..run() };
        let found = suggest(&overflow);
        assert_eq!(found[0].id, "listen-backlog-overflow");
        assert!(found[0].why.contains("at 3 s"), "the highest cluster is named: {}", found[0].why);
        let dropped_ack = RunShape { first_byte_p50_ms: Some(0.3), first_byte_p99_ms: Some(1030.0), ..run() };
        assert_eq!(ids(&dropped_ack), ["listen-backlog-overflow"]);
        let slow_server = RunShape { connect_p99_ms: Some(500.0), first_byte_p99_ms: Some(2000.0), ..run() };
        assert!(suggest(&slow_server).is_empty());
        // A handler that sleeps one second: its median is there too.
        let one_second =
            RunShape { first_byte_p50_ms: Some(1001.0), first_byte_p99_ms: Some(1003.0), ..run() };
        assert!(suggest(&one_second).is_empty());
        // Dropped twice: the 3 s retry falls past the connect timeout.
        let timed_out = RunShape { connect_p50_ms: Some(0.1), connect_timeouts: 7, ..run() };
        let found = suggest(&timed_out);
        assert_eq!(found[0].id, "listen-backlog-overflow");
        assert!(
            found[0].why.starts_with("7 connects timed out while the median one took 0.10 ms"),
            "{found:?}"
        );
        let few = RunShape { connect_p50_ms: Some(0.1), connects_at_syn_retry: 3, ..run() };
        assert!(
            suggest(&few)[0].why.starts_with("3 connects took as long as a SYN retransmission"),
            "{:?}",
            suggest(&few)
        );
        // A run shorter than the SYN's retry: connects the run ended before any answer came to.
        let unanswered = RunShape {
            connect_p50_ms: Some(0.1),
            connects_unanswered_at_end: 17,
            connect_unanswered_longest_ms: Some(480.0),
            ..run()
        };
        assert!(
            suggest(&unanswered)[0].why.starts_with(
                "17 connects were still unanswered when the run ended, the longest after 480 ms"
            ),
            "{:?}",
            suggest(&unanswered)
        );
        let one_long = RunShape {
            connect_p50_ms: Some(0.1),
            connects_unanswered_at_end: 1,
            connect_unanswered_longest_ms: Some(1800.0),
            ..run()
        };
        let why = &suggest(&one_long)[0].why;
        assert!(
            why.starts_with("1 connect was still unanswered") && !why.contains("retried at 1 s"),
            "{why}"
        );
        let over_a_path = RunShape { connect_p50_ms: Some(400.0), ..unanswered };
        assert!(suggest(&over_a_path).is_empty(), "a slow network is not an overflow");
        let unreachable = RunShape { connect_p50_ms: Some(900.0), connect_timeouts: 7, ..run() };
        assert!(suggest(&unreachable).is_empty(), "a slow network is not an overflow");
    }

    #[test]
    fn latencies_on_multiples_of_40_ms_are_quantized() {
        let quantized = RunShape {
            latency_quantiles_ms: vec![40.5, 41.0, 42.0, 44.0, 80.3, 81.0, 84.0, 120.2, 121.0],
            ..run()
        };
        let found = suggest(&quantized);
        assert_eq!(found[0].id, "delayed-ack-quantized");
        assert!(found[0].why.contains("40 ms, 80 ms, 120 ms"), "{}", found[0].why);
        let one_mode = RunShape { latency_quantiles_ms: vec![44.0; 9], ..run() };
        assert!(suggest(&one_mode).is_empty(), "one cluster is not quantization");
    }

    #[test]
    fn the_commands_carry_the_options_that_reached_the_target() {
        let over_tls = RunShape {
            url: "https://h:8443/a?b=1".into(),
            tls_options: vec![
                (Flag::Cacert, Some("my ca.pem".into())),
                (Flag::Sni, Some("api".into())),
                (Flag::NoTlsResume, None),
            ],
            non_success: 5,
            read_chunks_mean: 2.0,
            read_gap_p50_ms: Some(43.0),
            ..run()
        };
        let found = suggest(&over_tls);
        assert_eq!(
            found[0].prove,
            "nodelay doctor --cacert 'my ca.pem' --sni api --no-tls-resume https://h:8443/a?b=1"
        );
        assert_eq!(
            found[1].prove, "curl -i --cacert 'my ca.pem' https://h:8443/a?b=1",
            "only what curl takes"
        );
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }

    #[test]
    fn a_steady_first_byte_at_a_timer_and_queueing_behind_a_stream_limit_are_said() {
        // nginx in front of a backend that stalls: every first byte 44 ms, no pause inside.
        let behind_a_hop = RunShape { first_byte_p50_ms: Some(44.1), first_byte_p90_ms: Some(44.6), ..run() };
        let found = suggest(&behind_a_hop);
        assert_eq!(ids(&behind_a_hop), ["slow-first-byte"]);
        assert!(found[0].why.contains("steady 44 ms") && found[0].why.contains("stalled hop"), "{found:?}");
        // The same 44 ms across a 40 ms path is the path's, and a spread one a busy server's.
        let across = RunShape { path_rtt_ms: Some(40.2), ..behind_a_hop.clone() };
        assert!(suggest(&across).is_empty());
        let busy = RunShape { first_byte_p90_ms: Some(90.0), ..behind_a_hop };
        assert!(suggest(&busy).is_empty());
        // Four streams asked, one allowed: each request waits for the ones before it.
        let queued = RunShape {
            h2_streams_asked: Some(4),
            h2_stream_limit: Some(1),
            h2_queued_p50_ms: Some(20.4),
            nodelay_request_words: vec!["--h2".into(), "--streams".into(), "4".into()],
            ..run()
        };
        let found = suggest(&queued);
        assert_eq!(found[0].id, "h2-stream-limit-queueing");
        assert!(
            found[0].why.starts_with("4 streams asked of each connection, and the server allows 1"),
            "{found:?}"
        );
        assert_eq!(found[0].prove, format!("nodelay doctor --h2 --streams 4 {}", run().url));
        assert!(suggest(&RunShape { h2_stream_limit: Some(8), ..queued }).is_empty());
    }

    #[test]
    fn closed_connections_error_pages_and_a_busy_generator_are_said() {
        let closing = RunShape { reused_responses: 0, ..run() };
        assert_eq!(ids(&closing), ["connection-per-request"]);
        // -c 10 -n 5: no connection had a second request to carry.
        let one_each = RunShape { reused_responses: 0, connections: 10, responses: 5, ..run() };
        assert!(suggest(&one_each).is_empty());
        let not_asked = RunShape { keep_alive: false, reused_responses: 0, ..run() };
        assert!(suggest(&not_asked).is_empty());
        let errors = RunShape { non_success: 25, ..run() };
        assert!(suggest(&errors)[0].why.starts_with("25 % of the responses"));
        // A failed gRPC call is HTTP 200: the doctor, not curl, shows its grpc-status.
        let failed_calls = RunShape {
            non_success: 100,
            grpc_method: Some("/helloworld.Greeter/NoSuchMethod".into()),
            grpc_failures: "grpc-status 12 ×100".into(),
            ..run()
        };
        let found = suggest(&failed_calls);
        assert_eq!(
            found[0].why,
            "100 % of the calls failed (grpc-status 12 ×100): their latency is not the method's"
        );
        assert_eq!(
            found[0].prove,
            format!("nodelay doctor --grpc /helloworld.Greeter/NoSuchMethod {}", run().url)
        );
        let busy = RunShape { threads: 2, generator_cpu_share: Some(0.97), ..run() };
        let found = suggest(&busy);
        assert_eq!(found[0].id, "generator-saturated");
        assert!(found[0].why.contains("2 threads 97 % busy") && found[0].prove.contains("-t 4"), "{found:?}");
        assert!(suggest(&RunShape { generator_cpu_share: Some(0.5), ..run() }).is_empty());
        // A busy-polling generator is at 100 % by design.
        assert!(
            suggest(&RunShape { generator_cpu_share: Some(0.99), generator_spins: true, ..run() }).is_empty()
        );
    }
}
