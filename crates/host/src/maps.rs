//! The shared libraries a process has mapped (/proc/PID/maps): a C server's stack is named
//! by what it links (libevent's evhttp), not by its command, which is whatever its author
//! called it.

use std::collections::BTreeSet;

/// The file names of the shared libraries `pid` has mapped (`libevent-2.1.so.7`), sorted;
/// empty when its maps cannot be read (another user's process, a process gone, not Linux).
pub fn linked_libraries(pid: i32) -> Vec<String> {
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else { return Vec::new() };
    libraries_in(&maps)
}

/// The `.so` file names in the text of a maps file.
fn libraries_in(maps: &str) -> Vec<String> {
    let names: BTreeSet<String> = maps
        .lines()
        // address perms offset dev inode path: the path is the sixth field, when there is one.
        .filter_map(|line| line.split_whitespace().nth(5))
        .filter_map(|path| path.rsplit('/').next())
        .filter(|name| name.contains(".so"))
        .map(str::to_string)
        .collect();
    names.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_names_come_from_the_path_column() {
        let maps = "55d0-55d1 r--p 00000000 08:01 1 /opt/evhttp_server\n\
                    7f00-7f01 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libevent-2.1.so.7.0.1\n\
                    7f02-7f03 r-xp 00000000 08:01 3 /usr/lib/x86_64-linux-gnu/libc.so.6\n\
                    7f04-7f05 rw-p 00000000 00:00 0 \n\
                    7ffc-7ffd rw-p 00000000 00:00 0 [stack]\n";
        assert_eq!(libraries_in(maps), ["libc.so.6", "libevent-2.1.so.7.0.1"]);
    }

    #[test]
    fn this_process_links_its_c_library() {
        assert!(linked_libraries(std::process::id() as i32).iter().any(|name| name.starts_with("libc")));
    }
}
