//! A server on this machine but in another network namespace: a container, or one end of a
//! path between two namespaces. Its address is not one of ours, so the doctor's `--try-fix`
//! found "nothing listens" although the server runs here. The namespace is the one that has
//! the address among its own (the kernel's table of local routes, or IPv6's address list);
//! its listeners and processes are read from there.

use procfs::process::Process;
use std::collections::HashSet;
use std::net::IpAddr;
use std::os::unix::fs::MetadataExt;

/// A network namespace, as (device, inode) of its `ns/net` link.
pub(crate) type Namespace = (u64, u64);

/// The namespace of `/proc/PID/ns/net` (or of `thread-self`); `None` when it cannot be read
/// (another user's process without privilege).
pub(crate) fn namespace_of(process: Option<&Process>) -> Option<Namespace> {
    let path = process.map_or("/proc/thread-self/ns/net".to_string(), |p| format!("/proc/{}/ns/net", p.pid));
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The other namespaces in which `ip` is a local address, each with one of its processes.
/// Several may have it (containers on separate bridges, test paths side by side): the caller
/// takes the one where something listens.
pub(crate) fn holding(ip: IpAddr) -> Vec<(Process, Namespace)> {
    let Some(ours) = namespace_of(None) else { return Vec::new() };
    let Ok(processes) = procfs::process::all_processes() else { return Vec::new() };
    let mut seen = HashSet::from([ours]);
    let mut found = Vec::new();
    for process in processes.filter_map(Result::ok) {
        let Some(namespace) = namespace_of(Some(&process)) else { continue };
        if seen.insert(namespace) && has_address(&process, ip) {
            found.push((process, namespace));
        }
    }
    found
}

/// Whether `ip` is local in `process`'s namespace.
fn has_address(process: &Process, ip: IpAddr) -> bool {
    let read =
        |file: &str| std::fs::read_to_string(format!("/proc/{}/net/{file}", process.pid)).unwrap_or_default();
    match ip {
        IpAddr::V4(v4) => local_ipv4s(&read("fib_trie")).contains(&v4.to_string()),
        IpAddr::V6(v6) => {
            let hex: String = v6.octets().iter().map(|b| format!("{b:02x}")).collect();
            read("if_inet6").lines().any(|line| line.split_whitespace().next() == Some(hex.as_str()))
        }
    }
}

/// The addresses `fib_trie` marks `/32 host LOCAL`: each is the `|-- A.B.C.D` line above it.
fn local_ipv4s(fib_trie: &str) -> HashSet<String> {
    let mut last = None;
    let mut local = HashSet::new();
    for line in fib_trie.lines() {
        let line = line.trim_start();
        if let Some(address) = line.strip_prefix("|-- ") {
            last = Some(address.trim().to_string());
        } else if line.starts_with("/32 host LOCAL")
            && let Some(address) = &last
        {
            local.insert(address.clone());
        }
    }
    local
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_routes_of_fib_trie_are_its_addresses() {
        let trie = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 0.0.0.0\n        /0 universe UNICAST\n     \
                    +-- 10.211.0.0/30 2 0 2\n        |-- 10.211.0.0\n           /30 link UNICAST\n        \
                    |-- 10.211.0.2\n           /32 host LOCAL\nLocal:\n     |-- 127.0.0.1\n        /32 host LOCAL\n";
        let local = local_ipv4s(trie);
        assert_eq!(local, HashSet::from(["10.211.0.2".to_string(), "127.0.0.1".to_string()]));
    }

    #[test]
    fn our_own_namespace_is_never_another() {
        // Loopback is local everywhere; the search skips our own namespace, so a namespace
        // found for it is another one (a test machine may have none).
        for (_, namespace) in holding("127.0.0.1".parse().unwrap()) {
            assert_ne!(Some(namespace), namespace_of(None));
        }
    }
}
