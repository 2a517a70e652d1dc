//! A plain http:// run against a port that speaks TLS, told at its first answer instead of
//! after a report full of failures. The first answer a TLS server gives a plain-HTTP client
//! (a close, a reset, a TLS alert, which is no HTTP, or the 400 page nginx and Go send, "The
//! plain HTTP request was sent to HTTPS port") makes the run ask the port once whether it
//! speaks TLS; if it does, the run stops there and its error says to use https://.

use crate::plan::{Load, Measured};
use crate::run::{RunObserver, RunProgress, run_engine};
use crate::workload::{looks_like_tls_refusal, tls_hint};
use anyhow::{Result, bail};
use nodelay_engine::{ConnectionRecord, ErrorRecord, RecordSink, ResponseRecord, Stats};
use std::sync::OnceLock;

/// A suspect first answer, an unanswered ask, and nothing succeeded in this many attempts or
/// this long: the run ends so that the port can be asked again without the run's load.
const QUIET_ASK_AFTER_ERRORS: u64 = 100;
const QUIET_ASK_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// The status nginx and Go answer a plain-HTTP request on their TLS port with.
const BAD_REQUEST: u16 = 400;

impl Load {
    /// [`Load::measure`], for a plain http:// target also watching the run's first answer:
    /// when the port turns out to speak TLS, the run is stopped at once and the error says
    /// "the server speaks TLS on this port: use https://...". Other targets run as
    /// [`Load::measure`] runs them.
    pub fn measure_checked(&self, observer: &mut dyn RunObserver) -> Result<Measured> {
        if !plain_http(self) {
            return self.measure(observer);
        }
        let first = FirstAnswer::default();
        let mut checking = Checking {
            inner: observer,
            load: self,
            first: &first,
            asked: false,
            quiet_ask: false,
            hint: None,
        };
        let request_kinds = self.config.requests.len();
        let sink = |_| (Stats::with_requests(request_kinds), Watch(&first));
        let finished = run_engine(&self.config, sink, &mut checking)?;
        if checking.quiet_ask && checking.hint.is_none() {
            // The run was ended to ask again with the port quiet.
            checking.hint = tls_hint(&self.workload, true);
        }
        if let Some(hint) = checking.hint {
            bail!(hint);
        }
        if let Some(why) = &finished.unreachable {
            bail!("cannot connect to {}: {why}", self.workload.address);
        }
        Ok(Measured::of(&finished, request_kinds, |(stats, _)| stats))
    }
}

/// Whether the target is one a TLS port can be mistaken for: plain http://.
fn plain_http(load: &Load) -> bool {
    load.workload.tls.is_none() && load.workload.url.starts_with("http://")
}

/// Whether the run's first answer, whichever thread had it, looked like a TLS server's
/// answer to plain HTTP; unset until there is one.
#[derive(Default)]
struct FirstAnswer(OnceLock<bool>);

/// A thread's view of [`FirstAnswer`]: only the first answer of the run counts.
struct Watch<'a>(&'a FirstAnswer);

impl RecordSink for Watch<'_> {
    fn response(&mut self, record: &ResponseRecord) {
        self.0.0.get_or_init(|| record.status == BAD_REQUEST);
    }

    fn error(&mut self, record: &ErrorRecord) {
        self.0.0.get_or_init(|| looks_like_tls_refusal(record.kind));
    }

    fn connection(&mut self, _record: &ConnectionRecord) {}
}

/// The caller's observer, with the question asked once, from the calling thread, when the
/// first answer is a suspect.
struct Checking<'a> {
    inner: &'a mut dyn RunObserver,
    load: &'a Load,
    first: &'a FirstAnswer,
    /// The port was asked, while the run went on, whether it speaks TLS.
    asked: bool,
    /// That went unanswered while nothing succeeded: the run is ended, and the port asked again
    /// once it is quiet.
    quiet_ask: bool,
    /// Set when the port speaks TLS: the run's error.
    hint: Option<String>,
}

impl RunObserver for Checking<'_> {
    fn tick(&mut self, progress: RunProgress) {
        let suspect = self.first.0.get() == Some(&true);
        if self.hint.is_none() && suspect && !self.asked {
            self.asked = true;
            self.hint = tls_hint(&self.load.workload, true);
        }
        // The ask can go unanswered in the run's own flood of failing reconnects (a Python TLS
        // server, busy failing thousands of plain connections, let its one-second handshake
        // time out 1 run in 3). Nothing succeeding for a second, or for a hundred attempts:
        // the run ends, and the port is asked again once quiet.
        let nothing_succeeded = progress.completed == 0;
        let long_enough = progress.errors >= QUIET_ASK_AFTER_ERRORS || progress.elapsed >= QUIET_ASK_AFTER;
        if self.hint.is_none() && suspect && self.asked && nothing_succeeded && long_enough {
            self.quiet_ask = true;
        }
        if self.hint.is_some() || self.quiet_ask {
            // The run ends now; its progress (thousands of failed connects) would only mislead.
            return;
        }
        self.inner.tick(progress);
    }

    fn stopping(&mut self) {
        self.inner.stopping();
    }

    /// The port speaks TLS, or is to be asked again once quiet: this run ends at its next
    /// tick, and nothing else is stopped.
    fn ends_run(&self) -> bool {
        self.hint.is_some() || self.quiet_ask
    }
}
