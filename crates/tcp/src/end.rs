//! The two ends of a connection, and what releases data Nagle held: the words every
//! diagnosis of a hold is made of, live or from a capture.

/// Which end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The end that opened the connection (sent the SYN), or sent data first.
    Client,
    /// The other end.
    Server,
}

/// What released a Nagle hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HoldKind {
    /// The peer's delayed ACK (25-500 ms after the segment, net of its side of the round trip).
    #[default]
    DelayedAck,
    /// An ACK the peer sent at once: the hold lasted one round trip.
    RoundTrip,
}
