//! The kernel's per-namespace counters as /proc/PID/net/snmp and /proc/PID/net/netstat print
//! them: for each section a pair of lines, `Section: NAME NAME ...` then `Section: VALUE ...`.

/// The values of `names` in `section` (`Tcp`, `TcpExt`, ...) of such a text, in their order;
/// `None` when the section, its values line or any of the names is missing.
pub(crate) fn counters<const N: usize>(text: &str, section: &str, names: [&str; N]) -> Option<[u64; N]> {
    let mut lines = text.lines().filter_map(|line| line.strip_prefix(section)?.strip_prefix(':'));
    let (heads, values) = (lines.next()?, lines.next()?);
    let mut found = [0; N];
    for (slot, wanted) in found.iter_mut().zip(names) {
        let column = heads.split_whitespace().position(|name| name == wanted)?;
        *slot = values.split_whitespace().nth(column)?.parse().ok()?;
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_is_told_from_one_whose_name_it_begins() {
        let text = "TcpExt: ActiveOpens\nTcpExt: 9\nTcp: RtoMin ActiveOpens\nTcp: 200 7\n";
        assert_eq!(counters(text, "Tcp", ["ActiveOpens"]), Some([7]));
        assert_eq!(counters(text, "TcpExt", ["ActiveOpens"]), Some([9]));
        assert_eq!(counters(text, "Udp", ["ActiveOpens"]), None);
    }
}
