//! curl's words for nodelay's options, where curl has one: the error-page command a report
//! suggests is curl's, so it is spelled as curl spells it, not as nodelay does.

use nodelay_flags::Flag;

/// curl's spelling of a TLS option (it knows `--cacert` and `--insecure` by the same names as
/// nodelay's); `None` for one curl has no word for (it always checks the URL's host, and
/// each curl process starts without a session to resume).
pub(crate) fn curl_tls_option(flag: Flag) -> Option<String> {
    match flag {
        Flag::Cacert => Some("--cacert".to_string()),
        Flag::Insecure => Some("--insecure".to_string()),
        _ => None,
    }
}
