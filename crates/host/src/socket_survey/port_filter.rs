//! A port filter the kernel runs during a sock_diag dump (an `inet_diag_bc_op` program, as
//! `ss sport = :80` sends): a survey of a few ports then costs the dump of those sockets only,
//! not of every socket's TCP_INFO.
//!
//! The kernel runs the program op by op: a test's success jumps `yes` bytes ahead, its
//! failure `no` bytes; landing exactly on the end accepts the socket, past it rejects it.
//! Its audit follows the `yes` jumps, so they step through every op, and each `no` must land
//! on an op. A port is tested as `>= p` then `<= p`; `JMP` always takes its `no` jump.

/// `INET_DIAG_BC_JMP`, `_S_GE`, `_S_LE`, `_D_GE`, `_D_LE` (linux/inet_diag.h).
const JMP: u8 = 1;
const LOCAL_GE: u8 = 2;
const LOCAL_LE: u8 = 3;
const REMOTE_GE: u8 = 4;
const REMOTE_LE: u8 = 5;
/// One port test: `>=` op and its port, `<=` op and its port, the `JMP` to accept.
const TEST_BYTES: usize = 20;
/// Past this many ports the filter is left to user space (the program's jumps are 16-bit).
pub(crate) const PORTS_MAX: usize = 256;

/// The program accepting sockets whose local or remote port is one of `ports`; empty (no
/// filter) for no ports or more than [`PORTS_MAX`].
pub(crate) fn local_or_remote(ports: &[u16]) -> Vec<u8> {
    if ports.is_empty() || ports.len() > PORTS_MAX {
        return Vec::new();
    }
    let tests = ports.len() * 2;
    let length = tests * TEST_BYTES + 4;
    let mut program = Vec::with_capacity(length);
    let mut op = |code: u8, yes: u8, no: usize| {
        program.push(code);
        program.push(yes);
        program.extend_from_slice(&(no as u16).to_ne_bytes());
    };
    for (at, (ge, le, port)) in
        ports.iter().flat_map(|&port| [(LOCAL_GE, LOCAL_LE, port), (REMOTE_GE, REMOTE_LE, port)]).enumerate()
    {
        let start = at * TEST_BYTES;
        op(ge, 8, TEST_BYTES); // fails: the next test
        op(0, 0, usize::from(port));
        op(le, 8, TEST_BYTES - 8);
        op(0, 0, usize::from(port));
        op(JMP, 4, length - (start + 16)); // both held: the end, accepted
    }
    op(JMP, 4, 8); // no test held: past the end, rejected
    program
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sock_diag;
    use std::net::{TcpListener, TcpStream};

    /// The sockets the kernel lists through the program, by (local port, remote port).
    fn listed(program: &[u8]) -> Vec<(u16, u16)> {
        let mut found = Vec::new();
        sock_diag::dump_tcp(sock_diag::ALL_STATES, 0, program, &mut |message| {
            let line = sock_diag::parse_socket(message).unwrap();
            found.push((line.local.port(), line.remote.port()));
            Ok(())
        })
        .expect("the kernel accepts the program");
        found
    }

    #[test]
    fn the_kernel_lists_only_the_sockets_on_the_ports_given() {
        let ours = TcpListener::bind("127.0.0.1:0").unwrap();
        let other = TcpListener::bind("[::1]:0").unwrap();
        let port = ours.local_addr().unwrap().port();
        let other_port = other.local_addr().unwrap().port();
        let _client = TcpStream::connect(ours.local_addr().unwrap()).unwrap();
        let _accepted = ours.accept().unwrap();
        let _other_client = TcpStream::connect(other.local_addr().unwrap()).unwrap();
        let _other_accepted = other.accept().unwrap();

        // TIME-WAIT sockets left on the same port by others may be listed too.
        let found = listed(&local_or_remote(&[port]));
        assert!(found.len() >= 3, "the listener and both ends: {found:?}");
        assert!(found.iter().all(|&(local, remote)| local == port || remote == port), "{found:?}");
        let both = listed(&local_or_remote(&[1, port, other_port]));
        assert!(
            both.iter()
                .all(|&(l, r)| [1, port, other_port].contains(&l) || [1, port, other_port].contains(&r))
        );
        assert!(both.len() >= 6, "{both:?}");
        assert!(listed(&local_or_remote(&[])).len() >= 6, "no program: everything");
    }

    #[test]
    fn too_many_ports_are_left_to_user_space() {
        let many: Vec<u16> = (1..=PORTS_MAX as u16 + 1).collect();
        assert!(local_or_remote(&many).is_empty());
        assert_eq!(local_or_remote(&many[..PORTS_MAX]).len(), PORTS_MAX * 2 * TEST_BYTES + 4);
        let program = local_or_remote(&many[..PORTS_MAX]);
        sock_diag::dump_tcp(sock_diag::ALL_STATES, 0, &program, &mut |_| Ok(())).expect("accepted");
    }
}
