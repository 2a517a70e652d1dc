//! Presentation: builds report models from measurements and renders them, one renderer per
//! format behind the [`Render`] trait. Nothing here measures anything.
//!
//! - `model`: what each command found, as plain data whose serde form is its JSON contract.
//! - `text`: the human-readable renderers ([`Text`], [`FittedText`]) and their layout.
//! - [`html`]: one self-contained page drawn from runs in their JSON form.
//! - `saved`: runs saved with `--json`, read back (for the page, and for their text).
//! - [`Json`]: the JSON contract itself.
//! - `hdr_log`: HdrHistogram interval logs, written from a run ([`interval_log`]) and merged
//!   ([`merge_logs`]).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod format;
pub mod gate;
mod hdr_log;
pub mod html;
mod json;
pub mod markdown;
mod model;
mod render;
mod saved;
mod text;

pub use format::{
    DurationScale, display_width, format_bytes, format_duration_ms, format_seconds, format_status_counts,
    plural,
};
pub use hdr_log::merge::merge_logs;
pub use hdr_log::write::interval_log;
pub use json::Json;
pub use model::bench::{
    BenchReport, BenchSettings, ConnectionReport, HISTOGRAM_BUCKETS, HistogramBucket, RequestReport, RunEnd,
    histogram_buckets,
};
pub use model::cgroup_fix::{
    CgroupFixAttached, CgroupFixDetached, CgroupFixPersisted, CgroupFixUndone, Detached,
};
pub use model::compare::{
    COMPARE_SCHEMA_ID, COMPARED, CompareReport, CompareTarget, Comparison, RoundFigures, SavedTarget,
    confidence, format_p, target_verdicts,
};
pub use model::doctor::{
    DOCTOR_SCENARIO_SCHEMA_ID, DOCTOR_SCHEMA_ID, DoctorReport, DoctorScenarioReport, HopReport,
    NamedDoctorReport, PhaseReport, TryFixReport, baseline_shape,
};
pub use model::http2::{Http2Report, Http2RunSettings};
pub use model::merge::{MERGE_SCHEMA_ID, MergeReport, MergedLog};
pub use model::pcap::{FlowReport, PCAP_SCHEMA_ID, PcapReport, StallReport};
pub use model::percentiles::Percentiles;
pub use model::probes::{ExpectContinueReport, IdleKeepAliveReport};
pub use model::proxy::{
    ConnectionsReport, ExchangeParts, IncompleteReport, LegReport, PROXY_SCHEMA_ID, Pauses, ProxyReport,
    StallExampleReport, UpstreamFailures,
};
pub use model::series::{IntervalPoint, Machine, SpectrumPoint, spectrum_ms};
pub use model::server_view::{ServerViewReport, ThreadReport, UpstreamReport};
pub use model::sockets::{CgroupPrograms, FIX_SCHEMA_ID, FixReport, INSPECT_SCHEMA_ID, InspectReport};
pub use model::status::SuccessStatuses;
pub use model::tls::{TlsNegotiated, TlsReport, TlsSettings};
pub use render::Render;
pub use saved::{load_differences, saved_target};
pub use text::compare::compare_header;
pub use text::saved::text_of_saved_run;
pub use text::wrap::wrap_words;
pub use text::{DEFAULT_WIDTH, FittedText, MIN_WIDTH, Text};
