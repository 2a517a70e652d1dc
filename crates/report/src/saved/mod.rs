//! Runs saved with `--json`, read back into their commands' report models (each model's serde
//! form is its JSON contract, schema/*): for the HTML page, the text of a saved run, and
//! compare's `--baseline`.

mod baseline;
mod read;

pub use baseline::{load_differences, saved_target};
pub use read::{Kind, Reader, Run};
