//! The Prometheus side of `nodelay watch --prometheus ADDR`: [`WatchMetrics`], the counters,
//! gauges and histograms the capture thread updates as it goes, and [`serve`], the `/metrics`
//! endpoint that exposes them in the OpenMetrics text format (prometheus-client's encoder,
//! tiny_http on a thread of its own).
//!
//! Every metric is named `nodelay_watch_*` in base units (`_seconds`), counters end in
//! `_total`, and labels stay bounded: at most [`LABEL_SETS_MAX`] distinct (process, port)
//! pairs get labels of their own, later ones are counted under [`OVERFLOW_LABEL`], because
//! watch runs on production hosts whose Prometheus should not pay for a port scan.
//! `docs/kubernetes.md` says what each metric means.

mod labels;
mod metrics;
mod server;
mod stall_histogram;

pub use labels::{FINDINGS_MAX, LABEL_SETS_MAX, OVERFLOW_LABEL, UNKNOWN_PROCESS};
pub use metrics::{Holder, Mode, PATH_RTT_BUCKETS_SECONDS, WatchMetrics};
pub use server::{CONTENT_TYPE, MetricsServer, parse_listen_addr, serve};
pub use stall_histogram::{STALL_BUCKETS, STALL_BUCKETS_SECONDS, StallHistogram, bucket_of};
