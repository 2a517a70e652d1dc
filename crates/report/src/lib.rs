//! Presentation: builds report models from measurements and renders them, one renderer per
//! format behind the [`Render`] trait. Nothing here measures anything.

mod bench;
mod compare;
mod compare_text;
mod doctor;
mod doctor_text;
mod format;
mod hdr_log;
pub mod html;
mod json;
mod layout;
mod merge;
mod pcap;
mod pcap_text;
mod probes;
mod proxy;
mod proxy_text;
mod series;
mod server_view;
mod sockets;
mod status;
mod text;
mod tls;

pub use bench::{
    BenchReport, BenchSettings, ConnectionReport, HISTOGRAM_BUCKETS, HistogramBucket, Percentiles,
    RequestReport, RunEnd, histogram_buckets,
};
pub use compare::{
    COMPARE_SCHEMA_ID, COMPARED, CompareReport, CompareTarget, Comparison, RoundFigures, format_p,
};
pub use compare_text::compare_header;
pub use doctor::{
    DOCTOR_SCENARIO_SCHEMA_ID, DOCTOR_SCHEMA_ID, DoctorReport, DoctorScenarioReport, HopReport,
    NamedDoctorReport, PhaseReport, TryFixReport, baseline_shape,
};
pub use format::{
    DurationScale, display_width, format_bytes, format_duration_ms, format_seconds, format_status_counts,
    plural, wrap_words,
};
pub use hdr_log::merge::merge_logs;
pub use hdr_log::write::interval_log;
pub use json::Json;
pub use layout::{DEFAULT_WIDTH, MIN_WIDTH};
pub use merge::{MERGE_SCHEMA_ID, MergeReport, MergedLog};
pub use pcap::{FlowReport, PCAP_SCHEMA_ID, PcapReport, StallReport};
pub use probes::{ExpectContinueReport, IdleKeepAliveReport};
pub use proxy::{
    ConnectionsReport, ExchangeParts, IncompleteReport, LegReport, PROXY_SCHEMA_ID, Pauses, ProxyReport,
    StallExampleReport, UpstreamFailures,
};
pub use series::{IntervalPoint, Machine, SpectrumPoint, spectrum_ms};
pub use server_view::{ServerViewReport, ThreadReport, UpstreamReport};
pub use sockets::{FIX_SCHEMA_ID, FixReport, INSPECT_SCHEMA_ID, InspectReport};
pub use status::SuccessStatuses;
pub use text::{FittedText, Text};
pub use tls::{TlsNegotiated, TlsReport, TlsSettings};

/// A report format.
pub trait Render<Report: ?Sized> {
    fn render(&self, report: &Report) -> String;
}
