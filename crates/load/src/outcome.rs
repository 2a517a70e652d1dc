//! A run's report completed and judged: the server's side read over it, the local ports when
//! connects found none, the suggestions, and why nothing succeeded when nothing did. The
//! rules run here, on the report's figures; the report only carries what they said.

use crate::plan::{Load, Measured};
use crate::server_view::Watching;
use crate::workload::{looks_like_tls_refusal, tls_hint};
use nodelay_diagnose::{ServerSeen, diagnose_load};
use nodelay_engine::{ErrorKind, Stats};
use nodelay_flags::Flag::{self, SuccessStatus};
use nodelay_report::{BenchReport, format_status_counts};

impl Load {
    /// The report of `measured`, with the server's side that `watching` read over it and the
    /// suggestions; `tls_options` are the TLS options given, for the commands it suggests.
    pub fn full_report(
        &self,
        measured: &Measured,
        watching: Watching,
        tls_options: Vec<(Flag, Option<String>)>,
    ) -> BenchReport {
        let stats = &measured.stats;
        // The workers' CPU as a share of their time: near 1, nodelay measured itself. Only the
        // workers': the server view's sampler is not the generator.
        let thread_seconds = measured.end.elapsed.as_secs_f64() * self.config.threads.max(1) as f64;
        let cpu_share = (thread_seconds > 0.0).then(|| measured.worker_cpu.as_secs_f64() / thread_seconds);
        let mut report = self.report(stats, measured.end);
        // One connection in a closed loop sends one request at a time: the server's CPU per
        // request can be set against the time each took.
        let sequential_p50_ms = (self.config.connections == 1 && self.config.rate_per_second.is_none())
            .then(|| report.latency_ms.as_ref().map(|latency| latency.p50))
            .flatten();
        // Each socket that sent a SYN left a connection record, a refused or timed-out one too.
        let mut server_view = None;
        if let (Some(view_report), view) = watching.finish(stats.completed, stats.connections_closed) {
            report = report.with_server_view(view_report);
            server_view = view;
        }
        // Connects that found no local port: how many TIME-WAIT sockets hold them, in which range.
        if stats.errors(ErrorKind::PortsExhausted) > 0 {
            report = report.with_local_ports(nodelay_host::local_ports(self.workload.address));
        }
        let report = report.with_generator_share(cpu_share);
        let shape =
            report.suggestion_shape(tls_options, self.curl_request.clone(), self.nodelay_request.clone());
        let server = server_view.as_ref().map(|view| ServerSeen {
            view,
            requests: stats.completed,
            sequential_p50_ms,
        });
        report.with_diagnosis(diagnose_load(server, &shape))
    }

    /// Why no request of the run succeeded, in one line (a TLS port answered in plain HTTP, the
    /// most common failure, every status outside the successes); `None` when one did.
    pub fn nothing_succeeded(&self, report: &BenchReport, stats: &Stats) -> Option<String> {
        if report.requests_completed == 0 {
            let suspect =
                ErrorKind::ALL.into_iter().any(|kind| looks_like_tls_refusal(kind) && stats.errors(kind) > 0);
            return Some(tls_hint(&self.workload, suspect).unwrap_or_else(|| why_nothing_succeeded(report)));
        }
        if report.non_success_responses < report.requests_completed {
            return None;
        }
        // A gRPC call fails under HTTP 200: its grpc-status says why.
        let grpc_failures = report.http2.as_ref().map(|h2| h2.grpc_failures()).unwrap_or_default();
        if !grpc_failures.is_empty() {
            return Some(format!("every call failed ({grpc_failures})"));
        }
        // nginx and Go answer a plain request on their TLS port with a 400 page.
        let all_400 = stats.status_counts().all(|(code, _)| code == 400);
        Some(tls_hint(&self.workload, all_400).unwrap_or_else(|| {
            format!(
                "every response was outside {} ({}); {SuccessStatus} changes what counts",
                report.settings.success_status,
                format_status_counts(&report.status_counts)
            )
        }))
    }
}

/// The most common failure and its first message, or why nothing was counted at all.
pub fn why_nothing_succeeded(report: &BenchReport) -> String {
    let worst = report.errors.iter().filter(|(_, n)| **n > 0).max_by_key(|(_, n)| **n);
    match worst {
        Some((kind, n)) => {
            let example = report.error_examples.get(kind).map(|m| format!(": {m}")).unwrap_or_default();
            format!("{kind} ×{n}{example}")
        }
        None if report.requests_unfinished > 0 => format!(
            "{} still waiting for a response when the run ended (server never answered?)",
            report.requests_unfinished
        ),
        None => "the run ended before any request was sent".into(),
    }
}
