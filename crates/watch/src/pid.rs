//! `--pid PID`: the ports to capture for one process. A server's are the ports it listens
//! on; a process that listens on none (a client, a proxy's upstream side) is followed on the
//! ports it is connected to. Its connections are then told apart from others' on the same
//! ports by attribution (only its own stalls are reported).

use nodelay_host::{SocketState, Target};

/// The ports of `pid`'s TCP sockets: listening ones, else the peers' of its connections;
/// empty when it has no TCP socket (then every port is captured and attribution filters).
pub fn ports_of(pid: u32) -> Result<Vec<u16>, String> {
    exists(pid)?;
    let inspection = nodelay_host::inspect(Target::Pid(pid as i32)).map_err(|e| e.to_string())?;
    let listening: Vec<u16> = inspection
        .sockets
        .iter()
        .filter(|socket| socket.state == SocketState::Listen)
        .map(|socket| socket.local.port())
        .collect();
    let mut ports = if listening.is_empty() {
        inspection.sockets.iter().filter_map(|socket| socket.peer.map(|peer| peer.port())).collect()
    } else {
        listening
    };
    ports.sort_unstable();
    ports.dedup();
    Ok(ports)
}

/// The process runs (its /proc directory exists).
pub fn exists(pid: u32) -> Result<(), String> {
    if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
        return Err("no such process".into());
    }
    Ok(())
}
