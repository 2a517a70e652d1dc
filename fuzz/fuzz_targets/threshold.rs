//! Fuzzes `--fail-if`'s grammar: any text parses to a threshold or to an error that quotes
//! the text, never a panic; a threshold's limit is finite and not negative, and its own
//! text parses again to the same condition.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nodelay_report::gate::{Condition, Threshold};

fuzz_target!(|text: &str| {
    match text.parse::<Threshold>() {
        Ok(threshold) => {
            if let Condition::Figure { limit, .. } | Condition::Slower { percent: limit, .. } = threshold.condition {
                assert!(limit.is_finite() && limit >= 0.0, "{text:?}: {limit}");
            }
            let again: Threshold = threshold.text.parse().expect("its own text parses");
            assert_eq!(again.condition, threshold.condition, "{text:?}");
        }
        // The CLI prints it on one line, its control characters escaped (the `arguments`
        // target holds that); here it quotes the text as given.
        Err(error) => assert!(error.starts_with(&format!("'{text}': ")), "{error}"),
    }
});
