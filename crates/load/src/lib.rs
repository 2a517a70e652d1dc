//! What nodelay sends and how it runs a load, for any front end (the CLI, the doctor, a
//! test harness): a target parsed from a URL, the request options turned into a workload
//! (one HTTP request, a scenario, raw TCP bytes), a load plan run through the engine into
//! merged statistics, compare's interleaved rounds, and the server's side read over a run.
//!
//! Nothing here prints or draws: a run tells a [`RunObserver`] how far it is, and stops when
//! [`stop::request`] is called (the CLI calls it at Ctrl-C). Errors are `anyhow` errors with
//! their context; a [`UsageError`] in the chain marks a mistake in what was asked for.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod command_words;
mod compare_targets;
mod curl;
mod gate_args;
mod grpc_message;
pub mod input;
mod outcome;
mod plan;
mod protocol;
mod request;
mod rounds;
mod run;
pub mod scenario;
mod server_view;
pub mod stop;
mod target;
mod tls_port;
mod usage;
pub mod values;
mod workload;

pub use command_words::nodelay_request_words;
pub use compare_targets::{CompareTargets, plan_targets};
pub use curl::{curl_command, curl_request_words};
pub use gate_args::{GateOptions, parse_alpha, parse_threshold};
pub use outcome::why_nothing_succeeded;
pub use plan::{Load, LoadOptions, Measured, plan_load};
pub use protocol::{
    LOAD_WINDOW_BYTES, PROTOCOL_WINDOW_BYTES, ProtocolOptions, parse_grpc_method, parse_window, speak_http2,
};
pub use request::{RequestOptions, TlsChoices, WriteSplit, build_request, parse_write_split};
pub use rounds::{
    Contender, RoundsEnd, comparisons, finish as finish_rounds, labels, run_rounds, test_words,
};
pub use run::{Finished, RunObserver, RunProgress, run_engine};
pub use server_view::{ServerViewOptions, Watching, is_this_machine, pace_for, watch as watch_server};
pub use target::{HttpTarget, Target, no_port_zero, parse_target};
pub use usage::{UsageError, is_usage, usage};
pub use workload::{Workload, WorkloadRequest, build_workload, looks_like_tls_refusal, tls_hint};
