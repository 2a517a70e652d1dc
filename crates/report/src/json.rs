//! JSON renderer: the serde form of a report model, pretty-printed.

use crate::render::Render;
use serde::Serialize;

/// The JSON contract: a model's serde form, pretty-printed, one trailing newline.
pub struct Json;

impl<T: Serialize> Render<T> for Json {
    fn render(&self, report: &T) -> String {
        // Report models hold only strings, numbers and maps with string keys.
        let mut text = serde_json::to_string_pretty(report).expect("report models always serialize");
        text.push('\n');
        text
    }
}
