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

/// Most times the port is asked, one per tick, while nothing has succeeded.
const MAX_ASKS: u32 = 3;

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
        let mut checking = Checking { inner: observer, load: self, first: &first, asks: 0, hint: None };
        let request_kinds = self.config.requests.len();
        let sink = |_| (Stats::with_requests(request_kinds), Watch(&first));
        let finished = run_engine(&self.config, sink, &mut checking)?;
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
    /// Times the port was asked whether it speaks TLS.
    asks: u32,
    /// Set when the port speaks TLS: the run's error.
    hint: Option<String>,
}

impl RunObserver for Checking<'_> {
    fn tick(&mut self, progress: RunProgress) {
        // Asked at the first suspect answer, and again at the next ticks while nothing has
        // succeeded: the port's answer can be lost in the run's own flood of reconnects (a
        // Python TLS server, busy failing thousands of plain connections, let the one-second
        // handshake of the first ask time out, 1 run in 3).
        let may_ask = self.asks == 0 || (self.asks < MAX_ASKS && progress.completed == progress.errors);
        if self.hint.is_none() && may_ask && self.first.0.get() == Some(&true) {
            self.asks += 1;
            self.hint = tls_hint(&self.load.workload, true);
        }
        if self.hint.is_some() {
            // The run ends now; its progress (thousands of failed connects) would only mislead.
            return;
        }
        self.inner.tick(progress);
    }

    fn stopping(&mut self) {
        self.inner.stopping();
    }

    /// The port speaks TLS: this run ends at its next tick, and nothing else is stopped.
    fn ends_run(&self) -> bool {
        self.hint.is_some()
    }
}
