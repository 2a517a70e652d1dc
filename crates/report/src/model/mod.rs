//! The report models: what each command found, as plain data. Their serde forms are the JSON
//! contracts under `schema/` (rename nothing, only add); the renderers in [`crate::text`],
//! [`crate::json`] and [`crate::html`] only read them.

pub(crate) mod bench;
pub(crate) mod cgroup_fix;
pub(crate) mod compare;
pub(crate) mod doctor;
pub(crate) mod http2;
pub(crate) mod merge;
pub(crate) mod pcap;
pub(crate) mod percentiles;
pub(crate) mod probes;
pub(crate) mod proxy;
pub(crate) mod series;
pub(crate) mod server_view;
pub(crate) mod sockets;
pub(crate) mod status;
pub(crate) mod tls;
