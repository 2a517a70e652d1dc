//! Conventions other tools taught their users, each checked on the real binary: a URL typed
//! without its scheme, flags typed from wrk's, ab's and oha's habits, misspellings, and
//! `report` of saved runs without --html.

mod common;

use common::{fails_with, nodelay};

#[test]
fn a_url_without_its_scheme_is_refused_with_the_url_it_means() {
    let local = "missing http:// — did you mean http://127.0.0.1:9200/?";
    for text in ["127.0.0.1:9200/", "localhost:9200", ":9200", "9200"] {
        let expected = if text == "localhost:9200" { "did you mean http://localhost:9200/?" } else { local };
        fails_with(&["bench", "-n", "1", text], 2, &[expected]);
        fails_with(&["doctor", text], 2, &[expected]);
        // compare names the target the text is.
        fails_with(&["compare", "-n", "1", "http://127.0.0.1:9/", text], 2, &["target B", expected]);
    }
}
