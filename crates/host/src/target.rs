//! What the user names on the command line: a process (`4242`) or a local port (`:8080`).

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Pid(i32),
    Port(u16),
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
            _ => Err(format!("'{text}' is neither a PID (a positive number) nor a local port (:PORT)")),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Pid(pid) => write!(f, "PID {pid}"),
            Target::Port(port) => write!(f, "port {port}"),
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
    }
}
