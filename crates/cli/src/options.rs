//! The parsed arguments as the libraries' options: clap's structs carry the help and the
//! parsers, the libraries take plain values.

use crate::args::{DoctorArgs, LoadArgs, RequestArgs, ServerViewArgs};
use nodelay_doctor::{DoctorOptions, FixPolicy};
use nodelay_load::{LoadOptions, RequestOptions, ServerViewOptions};

impl RequestArgs {
    pub fn options(&self) -> RequestOptions {
        RequestOptions {
            method: self.method.clone(),
            headers: self.headers.clone(),
            body: self.body.clone(),
            scenario: self.scenario.clone(),
            send: self.send.clone(),
            frame: self.frame.clone(),
            max_response: self.max_response,
            write_split: self.write_split.clone(),
            tls: (&self.tls).into(),
            protocol: (&self.protocol).into(),
        }
    }
}

impl ServerViewArgs {
    pub fn options(&self) -> ServerViewOptions {
        ServerViewOptions { pid: self.pid, no_server_view: self.no_server_view }
    }
}

impl LoadArgs {
    pub fn options(&self) -> LoadOptions {
        LoadOptions {
            connections: self.connections,
            requests: self.requests,
            duration: self.duration,
            threads: self.threads,
            rate: self.rate,
            request: self.request.options(),
            timeout: self.timeout,
            connect_timeout: self.connect_timeout,
            no_keepalive: self.no_keepalive,
            success_status: self.success_status.clone(),
            interval: self.interval,
            busy_poll: self.busy_poll,
            io_uring: self.io_uring,
        }
    }
}

impl DoctorArgs {
    pub fn options(&self) -> DoctorOptions {
        DoctorOptions {
            budget: self.budget,
            timeout: self.timeout,
            connections: self.connections,
            request: self.request.options(),
            server_view: self.server_view.options(),
            fix: if self.try_fix { FixPolicy::Try { keep: self.keep_fix } } else { FixPolicy::Describe },
            idle_probe: self.idle_probe,
        }
    }
}
