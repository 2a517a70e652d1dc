//! What the doctor's one-request probes saw, for JSON and text: how the server answers
//! `Expect: 100-continue`, and how long it keeps an idle keep-alive connection.

use crate::format::format_duration_ms;
use nodelay_engine::{ExpectAnswer, ExpectProbe, IdleProbe};
use nodelay_flags::Flag::Budget;
use nodelay_tcp::time::ms;
use serde::{Deserialize, Serialize};

/// How the server answered a head with `Expect: 100-continue`, the body held back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExpectContinueReport {
    /// `continue` (100 Continue), `final-at-once` (a final response before the body), or
    /// `silence` (nothing within `waited_ms`).
    pub answer: String,
    /// When the server answered, from the head's sending; null for silence.
    pub answered_after_ms: Option<f64>,
    /// How long the probe waited in silence; null when the server answered.
    pub waited_ms: Option<f64>,
    /// The final response's status.
    pub final_status: Option<u16>,
    /// From sending the body to the final response's end; null when no body was sent.
    pub body_to_response_ms: Option<f64>,
}

impl ExpectContinueReport {
    /// The report of an `Expect: 100-continue` probe.
    pub fn new(probe: &ExpectProbe) -> Self {
        let (answer, answered_after_ms, waited_ms) = match probe.answer {
            ExpectAnswer::Continue { after } => ("continue", Some(ms(after)), None),
            ExpectAnswer::FinalAtOnce { after, .. } => ("final-at-once", Some(ms(after)), None),
            ExpectAnswer::Silence { waited } => ("silence", None, Some(ms(waited))),
        };
        ExpectContinueReport {
            answer: answer.into(),
            answered_after_ms,
            waited_ms,
            final_status: probe.final_status,
            body_to_response_ms: probe.body_to_response.map(ms),
        }
    }

    /// "answered 100 Continue in 310.0 µs; the body then got 200 in 520.0 µs".
    pub fn describe(&self) -> String {
        let then = match (self.body_to_response_ms, self.final_status) {
            (Some(after), Some(status)) => {
                format!("; the body then got {status} in {}", format_duration_ms(after))
            }
            (Some(_), None) => "; the body then got no complete response".into(),
            (None, _) => String::new(),
        };
        match (self.answer.as_str(), self.answered_after_ms, self.waited_ms) {
            ("continue", Some(after), _) => {
                format!("answered 100 Continue in {}{then}", format_duration_ms(after))
            }
            ("final-at-once", Some(after), _) => format!(
                "answered {} in {}, before the body (clients then send the request again without Expect)",
                self.final_status.map_or("a final response".into(), |s| s.to_string()),
                format_duration_ms(after)
            ),
            (_, _, Some(waited)) => format!(
                "no answer within {} (a client that sent it waits its own timer: curl 1 s){then}",
                format_duration_ms(waited)
            ),
            _ => String::new(),
        }
    }
}

/// How long the server kept an idle keep-alive connection (`doctor --idle-probe`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IdleKeepAliveReport {
    /// The server closed the idle connection this long after the response; null when it was
    /// still open after `waited_s`.
    pub closed_after_s: Option<f64>,
    /// How long the probe watched the idle connection.
    pub waited_s: f64,
    /// `Keep-Alive: timeout=N` of the response, in seconds; null when not announced.
    pub announced_timeout_s: Option<u64>,
    /// The response said `Connection: close`: there was no idle connection to keep.
    pub said_close: bool,
}

impl IdleKeepAliveReport {
    /// The report of an idle keep-alive probe.
    pub fn new(probe: &IdleProbe) -> Self {
        IdleKeepAliveReport {
            closed_after_s: probe.closed_after.map(|d| d.as_secs_f64()),
            waited_s: probe.waited.as_secs_f64(),
            announced_timeout_s: probe.announced_timeout_s,
            said_close: probe.said_close,
        }
    }

    /// "closed by the server after 2.00 s idle; not announced (no Keep-Alive: timeout=)".
    pub fn describe(&self) -> String {
        let announced = match self.announced_timeout_s {
            Some(timeout) => format!("announced Keep-Alive: timeout={timeout}"),
            None => "not announced (no Keep-Alive: timeout=)".into(),
        };
        match self.closed_after_s {
            _ if self.said_close => "the response said Connection: close: no connection was left idle".into(),
            Some(after) => format!("closed by the server after {after:.2} s idle; {announced}"),
            None => format!(
                "still open after {:.2} s idle (all the budget left; raise {Budget} to wait longer); {announced}",
                self.waited_s
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn each_answer_reads_as_a_sentence_with_units() {
        let probe = |answer, final_status, body: Option<u64>| ExpectProbe {
            answer,
            final_status,
            body_to_response: body.map(Duration::from_micros),
        };
        let answered = ExpectContinueReport::new(&probe(
            ExpectAnswer::Continue { after: Duration::from_micros(310) },
            Some(200),
            Some(520),
        ));
        assert_eq!(
            answered.describe(),
            "answered 100 Continue in 310.0 µs; the body then got 200 in 520.0 µs"
        );
        let silent = ExpectContinueReport::new(&probe(
            ExpectAnswer::Silence { waited: Duration::from_millis(1200) },
            Some(200),
            Some(410),
        ));
        assert_eq!(silent.answer, "silence");
        assert!(silent.describe().starts_with("no answer within 1.20 s"), "{}", silent.describe());
        let refused = ExpectContinueReport::new(&probe(
            ExpectAnswer::FinalAtOnce { status: 417, after: Duration::from_micros(200) },
            Some(417),
            None,
        ));
        let idle = IdleKeepAliveReport::new(&IdleProbe {
            status: 200,
            said_close: false,
            announced_timeout_s: Some(2),
            closed_after: Some(Duration::from_millis(3004)),
            waited: Duration::from_millis(3004),
        });
        assert_eq!(
            idle.describe(),
            "closed by the server after 3.00 s idle; announced Keep-Alive: timeout=2"
        );
        assert!(
            refused.describe().starts_with("answered 417 in 200.0 µs, before the body"),
            "{}",
            refused.describe()
        );
    }
}
