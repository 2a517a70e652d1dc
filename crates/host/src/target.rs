//! Which sockets to read or change: a process's (`4242`), a local port's (`:8080`), or those
//! of the server behind one address (the doctor's target).

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

/// Which sockets to read or change, parsed from `4242` (a PID) or `:8080` (a local port).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Every TCP socket of the process.
    Pid(i32),
    /// The sockets listening on this port (any address) and the connections they accepted.
    Port(u16),
    /// The listening sockets that accept connections to this address: what every new
    /// connection to it inherits (the doctor's `--try-fix`, which needs no more than that).
    Address(SocketAddr),
}

impl FromStr for Target {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if let Some(port) = text.strip_prefix(':') {
            return match port.parse::<u16>() {
                Ok(0) | Err(_) => Err(format!("'{text}' is not a port: expected :1 to :65535")),
                Ok(port) => Ok(Target::Port(port)),
            };
        }
        match text.parse::<i32>() {
            Ok(pid) if pid > 0 => Ok(Target::Pid(pid)),
            // A positive number past what a PID can be is no PID either, and is said so.
            _ if !text.is_empty()
                && text.bytes().all(|b| b.is_ascii_digit())
                && !text.trim_start_matches('0').is_empty() =>
            {
                Err(format!("'{text}' is too large for a PID (at most {})", i32::MAX))
            }
            _ => Err(format!("'{text}' is neither a PID (a positive number) nor a local port (:PORT)")),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Pid(pid) => write!(f, "PID {pid}"),
            Target::Port(port) => write!(f, "port {port}"),
            Target::Address(address) => write!(f, "address {address}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pids_and_ports_parse_and_nonsense_is_refused() {
        assert_eq!("4242".parse(), Ok(Target::Pid(4242)));
        assert_eq!(":8080".parse(), Ok(Target::Port(8080)));
        for bad in ["0", "-1", ":0", ":65536", ":", "", "abc", "4242:", "99999999999"] {
            let error = bad.parse::<Target>().unwrap_err();
            assert!(error.contains(&format!("'{bad}'")), "{error}");
        }
        assert_eq!(
            "4294967296".parse::<Target>().unwrap_err(),
            "'4294967296' is too large for a PID (at most 2147483647)"
        );
        assert!("0".parse::<Target>().unwrap_err().contains("neither a PID"));
    }
}
