//! Whether a running program's sockets want TCP_NODELAY (`nodelay inspect`): the sockets that
//! carry traffic decide. Many servers (Python's `disable_nagle_algorithm`, Go, Node) set it
//! on each connection as they accept it and never on the listener, so a listener without it
//! says nothing while connections exist, and is unknown until one is accepted.

use nodelay_host::{SocketState, SocketView};
use serde::{Deserialize, Serialize};

/// What the sockets say of TCP_NODELAY.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodelayState {
    /// No TCP socket at all.
    NoSockets,
    /// Every connection has it (and the listener, or connections exist): nothing to fix.
    On,
    /// Some connection has it off: Nagle holds that connection's small writes.
    OffOnConnections,
    /// Only listeners, without it: unknown until a connection is accepted, as the server may
    /// set it per connection.
    UnknownUntilAccepted,
}

/// The judgement over one program's sockets, with the counts behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SocketNodelay {
    /// What the sockets say.
    pub state: NodelayState,
    /// Connections (every socket not listening) with TCP_NODELAY off...
    pub connections_off: usize,
    /// ...and with it on.
    pub connections_on: usize,
    /// Listening sockets without it.
    pub listeners_off: usize,
}

impl SocketNodelay {
    /// A fix is worth advising: a connection holds small writes now.
    pub fn fix_advised(&self) -> bool {
        self.state == NodelayState::OffOnConnections
    }
}

/// Judges `sockets` by the ones that carry traffic.
pub fn socket_nodelay(sockets: &[SocketView]) -> SocketNodelay {
    let connections = || sockets.iter().filter(|s| s.state != SocketState::Listen);
    let connections_off = connections().filter(|s| !s.nodelay).count();
    let connections_on = connections().filter(|s| s.nodelay).count();
    let listeners_off = sockets.iter().filter(|s| s.state == SocketState::Listen && !s.nodelay).count();
    let state = if sockets.is_empty() {
        NodelayState::NoSockets
    } else if connections_off > 0 {
        NodelayState::OffOnConnections
    } else if connections_on == 0 && listeners_off > 0 {
        NodelayState::UnknownUntilAccepted
    } else {
        NodelayState::On
    };
    SocketNodelay { state, connections_off, connections_on, listeners_off }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn socket(state: SocketState, nodelay: bool) -> SocketView {
        SocketView {
            pid: 1,
            fd: 3,
            inode: 1,
            state,
            local: "127.0.0.1:8081".parse().unwrap(),
            peer: None,
            nodelay,
            cork: false,
            tcp_info: None,
        }
    }

    #[test]
    fn connections_decide_and_a_lone_listener_is_unknown() {
        use SocketState::{Established, Listen};
        // Python with disable_nagle_algorithm: the listener off, every accepted connection on.
        let per_connection = socket_nodelay(&[socket(Listen, false), socket(Established, true)]);
        assert_eq!(per_connection.state, NodelayState::On);
        assert!(!per_connection.fix_advised());
        let stalling = socket_nodelay(&[socket(Listen, false), socket(Established, false)]);
        assert_eq!((stalling.state, stalling.connections_off), (NodelayState::OffOnConnections, 1));
        assert!(stalling.fix_advised());
        let idle = socket_nodelay(&[socket(Listen, false)]);
        assert_eq!(idle.state, NodelayState::UnknownUntilAccepted);
        assert!(!idle.fix_advised());
        assert_eq!(socket_nodelay(&[socket(Listen, true)]).state, NodelayState::On);
        assert_eq!(socket_nodelay(&[]).state, NodelayState::NoSockets);
    }
}
