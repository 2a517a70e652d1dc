//! Byte strings typed on a command line: `\r`, `\n`, `\t`, `\0`, `\\` and `\xHH` escapes.

/// Decodes escapes; any other byte stands for itself.
pub fn unescape(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(byte) = bytes.next() {
        if byte != b'\\' {
            out.push(byte);
            continue;
        }
        match bytes.next() {
            Some(b'r') => out.push(b'\r'),
            Some(b'n') => out.push(b'\n'),
            Some(b't') => out.push(b'\t'),
            Some(b'0') => out.push(0),
            Some(b'\\') => out.push(b'\\'),
            Some(b'x') => {
                let hex: Vec<u8> = bytes.by_ref().take(2).collect();
                let digits = std::str::from_utf8(&hex).ok().filter(|h| h.len() == 2);
                let value = digits.and_then(|h| u8::from_str_radix(h, 16).ok());
                out.push(value.ok_or_else(|| format!("'\\x' needs two hex digits in '{text}'"))?);
            }
            Some(other) => return Err(format!("unknown escape '\\{}' in '{text}'", other as char)),
            None => return Err(format!("'{text}' ends with a lone backslash")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_common_escapes() {
        assert_eq!(unescape(r"PING\r\n").unwrap(), b"PING\r\n");
        assert_eq!(unescape(r"\x00\x01a\\b\t").unwrap(), b"\x00\x01a\\b\t");
        assert_eq!(unescape("plain").unwrap(), b"plain");
    }

    #[test]
    fn rejects_bad_escapes() {
        assert!(unescape(r"\q").unwrap_err().contains("unknown escape"));
        assert!(unescape(r"\x4").unwrap_err().contains("two hex digits"));
        assert!(unescape(r"\xzz").is_err());
        assert!(unescape("a\\").unwrap_err().contains("lone backslash"));
    }
}
