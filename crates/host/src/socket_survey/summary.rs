//! A survey summed per process, and what changed between two surveys: what a caller sampling
//! every second reports ("sockets with TCP_NODELAY off, delayed-ACK timers fired, unacked
//! bytes per process").

use super::{Nodelay, Survey, SurveyedSocket};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// One process's sockets in a survey; `pid: None` gathers the sockets no readable process
/// holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessSockets {
    /// The process; `None` for sockets whose owner could not be read.
    pub pid: Option<u32>,
    /// Its command name.
    pub command: Option<String>,
    /// Its TCP sockets in the survey.
    pub sockets: usize,
    /// Of those, with TCP_NODELAY off.
    pub nodelay_off: usize,
    /// Of those, with TCP_NODELAY unknown.
    pub nodelay_unknown: usize,
    /// Of those, holding a small write back now (see [`SurveyedSocket::nagle_holding`]).
    pub nagle_holding: usize,
    /// Of those, Nagle-prone (see [`SurveyedSocket::nagle_prone`]).
    pub nagle_prone: usize,
    /// Of those, owing their peer a delayed ACK now (peers on this host only).
    pub delayed_ack_pending: usize,
    /// Bytes sent and not yet acknowledged, over its sockets.
    pub unacked_bytes: u64,
    /// Bytes written and not yet sent, over its sockets.
    pub notsent_bytes: u64,
    /// The ports it listens on, in order.
    pub listening_ports: Vec<u16>,
}

impl ProcessSockets {
    fn add(&mut self, socket: &SurveyedSocket) {
        self.sockets += 1;
        self.nodelay_off += usize::from(socket.nodelay == Nodelay::Off);
        self.nodelay_unknown += usize::from(matches!(socket.nodelay, Nodelay::Unknown(_)));
        self.nagle_holding += usize::from(socket.nagle_holding());
        self.nagle_prone += usize::from(socket.nagle_prone());
        self.delayed_ack_pending += usize::from(socket.delayed_ack_pending == Some(true));
        self.unacked_bytes += u64::from(socket.unacked_bytes());
        self.notsent_bytes += u64::from(socket.notsent_bytes());
        if socket.remote.is_none() && !self.listening_ports.contains(&socket.local.port()) {
            self.listening_ports.push(socket.local.port());
            self.listening_ports.sort_unstable();
        }
    }
}

/// One process's traffic between two surveys, over the sockets listed in the second (a
/// socket closed in between took its figures with it; one opened in between counts whole).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessActivity {
    /// The process; `None` for sockets whose owner could not be read.
    pub pid: Option<u32>,
    /// Its command name.
    pub command: Option<String>,
    /// Segments carrying data it sent.
    pub data_segments_out: u64,
    /// Bytes its peers acknowledged.
    pub bytes_acked: u64,
    /// Segments it retransmitted.
    pub retransmitted_segments: u64,
    /// Its Nagle-prone sockets in the second survey.
    pub nagle_prone: usize,
    /// The largest srtt excess over min_rtt among its sockets in the second survey.
    pub max_rtt_inflation_us: u32,
}

/// What changed between two surveys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SurveyChange {
    /// Time between the two surveys.
    pub interval_s: f64,
    /// ACKs the namespace's delayed-ACK timers sent in between (every socket's, not only the
    /// filter's); `None` when /proc/net/netstat could not be read.
    pub delayed_acks: Option<u64>,
    /// Sockets listed in the second survey only.
    pub sockets_opened: usize,
    /// Sockets listed in the first only.
    pub sockets_closed: usize,
    /// Per process, the busiest first.
    pub processes: Vec<ProcessActivity>,
}

impl Survey {
    /// The survey summed per process: Nagle-prone sockets first, then unacknowledged bytes;
    /// the sockets of no readable process last.
    pub fn by_process(&self) -> Vec<ProcessSockets> {
        let mut groups: BTreeMap<Option<u32>, ProcessSockets> = BTreeMap::new();
        for socket in &self.sockets {
            let pid = socket.owner.as_ref().map(|owner| owner.pid);
            let group = groups.entry(pid).or_insert_with(|| ProcessSockets {
                pid,
                command: socket.owner.as_ref().map(|owner| owner.command.clone()),
                ..ProcessSockets::default()
            });
            group.add(socket);
        }
        let mut processes: Vec<ProcessSockets> = groups.into_values().collect();
        processes
            .sort_by_key(|p| (p.pid.is_none(), std::cmp::Reverse((p.nagle_prone, p.unacked_bytes)), p.pid));
        processes
    }

    /// What changed from `before` to `after` (two surveys of the same filter).
    pub fn compare(before: &Survey, after: &Survey) -> SurveyChange {
        let earlier: HashMap<u64, &SurveyedSocket> =
            before.sockets.iter().filter(|s| s.inode != 0).map(|s| (s.inode, s)).collect();
        let mut processes: BTreeMap<Option<u32>, ProcessActivity> = BTreeMap::new();
        let mut sockets_opened = 0;
        let mut still_open = 0;
        for socket in &after.sockets {
            let then = earlier.get(&socket.inode).filter(|_| socket.inode != 0);
            match then {
                Some(_) => still_open += 1,
                None => sockets_opened += 1,
            }
            let pid = socket.owner.as_ref().map(|owner| owner.pid);
            let activity = processes.entry(pid).or_insert_with(|| ProcessActivity {
                pid,
                command: socket.owner.as_ref().map(|owner| owner.command.clone()),
                ..ProcessActivity::default()
            });
            let Some(now) = socket.tcp else { continue };
            let then = then.and_then(|then| then.tcp).unwrap_or_default();
            activity.data_segments_out +=
                u64::from(now.data_segments_out.saturating_sub(then.data_segments_out));
            activity.bytes_acked += now.bytes_acked.saturating_sub(then.bytes_acked);
            activity.retransmitted_segments +=
                u64::from(now.total_retrans_segments.saturating_sub(then.total_retrans_segments));
            activity.nagle_prone += usize::from(socket.nagle_prone());
            activity.max_rtt_inflation_us =
                activity.max_rtt_inflation_us.max(socket.rtt_inflation_us().unwrap_or(0));
        }
        let mut processes: Vec<ProcessActivity> = processes.into_values().collect();
        processes.sort_by_key(|p| (std::cmp::Reverse((p.nagle_prone, p.data_segments_out)), p.pid));
        let delayed_acks = match (before.host, after.host) {
            (Some(before), Some(after)) => Some(after.delayed_acks.saturating_sub(before.delayed_acks)),
            _ => None,
        };
        SurveyChange {
            interval_s: after.taken_at.saturating_duration_since(before.taken_at).as_secs_f64(),
            delayed_acks,
            sockets_opened,
            sockets_closed: earlier.len().saturating_sub(still_open),
            processes,
        }
    }
}
