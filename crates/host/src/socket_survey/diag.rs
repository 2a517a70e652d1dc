//! One socket of a sock_diag dump with TCP_INFO asked for: the table line, the timer the
//! kernel reports, the queues, and the attributes the survey reads.

use super::tcp_info::{self, DiagTcpInfo};
use crate::sock_diag;
use crate::socket_owner::attribute;
use crate::table_line::TableLine;
use serde::{Deserialize, Serialize};

/// `INET_DIAG_INFO`: the socket's `struct tcp_info`.
const INET_DIAG_INFO: u16 = 2;
/// `INET_DIAG_SKV6ONLY`.
const INET_DIAG_SKV6ONLY: u16 = 11;
/// The `idiag_ext` bit asking for INET_DIAG_INFO.
pub(crate) const WITH_TCP_INFO: u8 = 1 << (INET_DIAG_INFO - 1);

/// The timer sock_diag reports for a socket (`idiag_timer`). The kernel reports one timer,
/// and never the delayed-ACK timer (`ICSK_TIME_DACK`): `ss -o` cannot show it either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SocketTimer {
    /// None of the timers below runs (a delayed-ACK timer may).
    None,
    /// Retransmission, tail-loss probe or reordering timer: data is unacknowledged.
    Retransmit,
    /// Keep-alive timer (also a FIN-WAIT-2 timeout).
    KeepAlive,
    /// TIME-WAIT.
    TimeWait,
    /// Zero-window probe: the peer's receive window is closed.
    ZeroWindowProbe,
    /// A kind this code does not know.
    Other,
}

/// One socket of the dump.
#[derive(Debug, Clone)]
pub(crate) struct DiagSocket {
    pub(crate) line: TableLine,
    pub(crate) timer: SocketTimer,
    /// Time until the timer fires.
    pub(crate) timer_expires_ms: u32,
    /// Retransmissions (or probes) of the running timer.
    pub(crate) timer_retransmits: u8,
    /// `idiag_rqueue`: bytes received and not read; a listener's accept queue.
    pub(crate) rqueue: u32,
    /// `idiag_wqueue`: bytes written and not acknowledged; a listener's backlog.
    pub(crate) wqueue: u32,
    /// An IPv6 listener with IPV6_V6ONLY.
    pub(crate) v6only: bool,
    pub(crate) info: Option<DiagTcpInfo>,
}

/// The socket of one message; `None` for one too short or of an unknown family or state.
pub(crate) fn parse(message: &[u8]) -> Option<DiagSocket> {
    let line = sock_diag::parse_socket(message)?;
    let word = |at: usize| u32::from_ne_bytes(message[at..at + 4].try_into().unwrap());
    let timer = match message[2] {
        0 => SocketTimer::None,
        1 => SocketTimer::Retransmit,
        2 => SocketTimer::KeepAlive,
        3 => SocketTimer::TimeWait,
        4 => SocketTimer::ZeroWindowProbe,
        _ => SocketTimer::Other,
    };
    Some(DiagSocket {
        line,
        timer,
        timer_expires_ms: word(52),
        timer_retransmits: message[3],
        rqueue: word(56),
        wqueue: word(60),
        v6only: attribute(message, INET_DIAG_SKV6ONLY).is_some_and(|value| value.first() == Some(&1)),
        info: attribute(message, INET_DIAG_INFO).and_then(tcp_info::parse),
    })
}
