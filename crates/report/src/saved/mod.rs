//! Runs saved with `--json`, read back: small views of each JSON contract (schema/*) holding
//! the fields the HTML page and the text of a saved run show, and the reader that tells the
//! kinds apart by their `schema` id. The report models cannot be read back (they borrow static
//! text and the diagnosis' types), so the views stand in for them. Every view takes serde's
//! defaults: serde ignores the fields not shown, and a field a run lacks takes its default, so
//! that a run saved by an older nodelay of the same schema still reads.

mod baseline;
mod bench;
mod compare;
mod doctor;
mod finding;
mod read;
mod server_view;
mod traffic;

pub use baseline::{load_differences, saved_target};
pub use bench::{BenchSettingsView, BenchView, BucketView, MachineView, PercentilesView, SuggestionView};
pub use compare::{CompareView, ComparisonView, TargetView};
pub use doctor::{DoctorScenarioView, DoctorView, PhaseView};
pub use finding::{EvidenceView, FindingView, FixView, ProofView};
pub use read::{Kind, ReadError, Reader, Run};
pub use server_view::ServerViewView;
pub use traffic::{LegView, PcapView, ProxyView};
