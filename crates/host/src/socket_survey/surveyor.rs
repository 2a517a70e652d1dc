//! Surveys repeated every second: a socket's owner and options are read once and kept while
//! it lives, so a survey of sockets already seen is one sock_diag dump. The walk of /proc
//! (one readlink per descriptor of every process) and the copies for TCP_NODELAY are paid
//! again only when a socket appears, and for every socket each [`FULL_SURVEY_EVERY`]
//! surveys, when what was kept is dropped: an option changed on a live socket, or a socket
//! handed to another process, shows by then.

use super::diag::{self, DiagSocket};
use super::options::{OptionReader, Options, UnknownWhy};
use super::port_filter;
use super::{HostTcpCounters, Survey, SurveyFilter, SurveyedSocket, mark_pending_acks, surveyed};
use crate::sock_diag;
use crate::socket_owner::{HELD_STATES, Indexed, OwnerIndex, SocketOwner};
use std::collections::{HashMap, HashSet};
use std::io;
use std::time::Instant;

/// Every this many surveys, owners and options are read again for every socket.
pub const FULL_SURVEY_EVERY: u64 = 10;

/// What was read of a socket the first time it was surveyed.
#[derive(Debug, Clone)]
struct Known {
    owner: Option<SocketOwner>,
    options: Options,
}

/// Surveys of one filter, repeated; see the module doc for what is kept between them.
#[derive(Debug)]
pub struct Surveyor {
    filter: SurveyFilter,
    known: HashMap<u64, Known>,
    surveys: u64,
    unreadable_processes: usize,
}

impl Surveyor {
    /// A surveyor of the sockets `filter` names; nothing is read before the first survey.
    pub fn new(filter: SurveyFilter) -> Surveyor {
        Surveyor { filter, known: HashMap::new(), surveys: 0, unreadable_processes: 0 }
    }

    /// The sockets now: see [`super::survey`].
    pub fn survey(&mut self) -> io::Result<Survey> {
        let taken_at = Instant::now();
        let found = self.dump()?;
        if self.surveys.is_multiple_of(FULL_SURVEY_EVERY) {
            self.known.clear();
        }
        self.surveys += 1;
        let alive: HashSet<u64> = found.iter().map(|s| s.line.inode).filter(|&inode| inode != 0).collect();
        self.known.retain(|inode, _| alive.contains(inode));
        if alive.iter().any(|inode| !self.known.contains_key(inode)) {
            self.read_new(&found)?;
        }
        let mut sockets: Vec<SurveyedSocket> = found
            .into_iter()
            .filter_map(|socket| {
                let (owner, options) = match self.known.get(&socket.line.inode) {
                    Some(known) => (known.owner.clone(), known.options),
                    None => (None, Options::unknown(UnknownWhy::NotHeld)),
                };
                if self.filter.pid.is_some() && owner.as_ref().map(|o| o.pid) != self.filter.pid {
                    return None;
                }
                Some(surveyed(socket, owner, options))
            })
            .collect();
        mark_pending_acks(&mut sockets);
        Ok(Survey {
            taken_at,
            sockets,
            unreadable_processes: self.unreadable_processes,
            host: HostTcpCounters::read().ok(),
        })
    }

    /// The sockets of the dump the filter's ports name.
    fn dump(&self) -> io::Result<Vec<DiagSocket>> {
        let mut found = Vec::new();
        let program = port_filter::local_or_remote(&self.filter.ports);
        sock_diag::dump_tcp(HELD_STATES, diag::WITH_TCP_INFO, &program, &mut |message| {
            let socket = diag::parse(message).ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidData, "sock_diag: a socket message too short")
            })?;
            // The kernel filtered already, unless there were too many ports.
            if self.filter.port_matches(socket.line.local, socket.line.remote) {
                found.push(socket);
            }
            Ok(())
        })?;
        Ok(found)
    }

    /// Walks /proc for the owners, and reads the options of the sockets not known yet.
    fn read_new(&mut self, found: &[DiagSocket]) -> io::Result<()> {
        let table = found
            .iter()
            .filter(|socket| socket.line.inode != 0)
            .map(|socket| Indexed {
                inode: socket.line.inode,
                local: socket.line.local,
                remote: socket.line.remote,
                state: socket.line.state.clone(),
                v6only: socket.v6only,
            })
            .collect();
        let owners = OwnerIndex::from_table(table, self.filter.pid)?;
        self.unreadable_processes = owners.unreadable_processes();
        let mut reader = OptionReader::default();
        for socket in found {
            let inode = socket.line.inode;
            if inode == 0 || self.known.contains_key(&inode) {
                continue;
            }
            let owner = owners.by_inode(inode).cloned();
            let options = match &owner {
                Some(owner) => reader.read(owner.pid, owner.fd, inode),
                None => Options::unknown(UnknownWhy::OwnerUnreadable),
            };
            self.known.insert(inode, Known { owner, options });
        }
        Ok(())
    }
}
