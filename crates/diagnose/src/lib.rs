//! Diagnosis as pure functions: phases of measured records in, one [`Diagnosis`] out.
//!
//! The doctor measures a baseline, asks [`next_experiment`] which experiment would separate
//! the causes it sees, runs it, and repeats; then [`diagnose`] turns everything into a
//! [`Diagnosis`] (ranked [`Finding`]s, notes, and the verdict they make).
//! [`RelayObservations::diagnose`] does the same for what `nodelay proxy` saw,
//! [`CaptureObservations::diagnose`] for a packet capture, and [`diagnose_load`] for a bench
//! run. The rules behind them are private to this crate. No I/O and no clock here, so every
//! rule is unit-tested on synthetic records. The kernel facts behind the rules are in
//! docs/field-notes.md.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod backlog;
mod capture;
mod capture_observations;
mod closing;
mod curl_words;
mod diagnosis;
mod errors;
mod expect;
mod finding;
mod fixes;
mod hops;
mod http2;
mod idle;
mod phase;
mod rank;
mod relay;
mod relay_observations;
mod rules;
mod server;
mod significance;
mod slow_body;
mod sockets;
mod stage;
mod suggest;
mod symptom;
mod tail;
mod tail_hold;
mod unseen_hops;
mod waiting;
mod window;

pub use capture::{
    CapturePath, CaptureRoundTrips, CaptureStalls, CaptureTime, ClientWait, LateFirstByte,
    NAMED_SHARE_PERCENT, SlowPath, Timeouts, ZeroWindowFacts,
};
pub use capture_observations::{CaptureObservations, capture_time};
pub use closing::closes_after_each_response;
pub use diagnosis::{Diagnosis, ServerSeen, Verdict, diagnose_load};
pub use errors::{MAX_ERROR_SHARE, grpc_code_name};
pub use finding::{Confidence, Evidence, Finding, FindingId, Fix, Note, Proof, ProofKind};
pub use nodelay_tcp::timers::{DelayedAckTimer, match_delayed_ack_timer};
pub use phase::{
    ErrorSummary, Experiment, FixTrial, HopDiagnosis, LATE_FIRST_BYTE_MS, MAX_FAILED_SHARE, Observations,
    Phase, PhaseSummary, RequestShape, STALL_GAP_MS, SYN_RETRY_WINDOWS_MS, percentile,
};
pub use relay::{LegPauses, RelayObservations};
pub use rules::next_experiment;
pub use server::{
    CONNECTIONS_PER_REQUEST, CPU_BOUND_SHARE, MIN_REQUESTS, ServerLoad, ThreadShare,
    runs_one_thread_at_a_time, server_load, server_warnings,
};
pub use significance::{
    ALPHA, Difference, SMALLEST_DIFFERENCE, compare_rounds, compare_rounds_at, least_p_value,
};
pub use sockets::{NodelayState, SocketNodelay, socket_nodelay};
pub use stage::diagnose;
pub use suggest::{
    GENERATOR_SATURATED_SHARE, RunShape, Suggestion, UNANSWERED_CONNECT_MIN_MS, shell_word,
    unanswered_connects,
};
