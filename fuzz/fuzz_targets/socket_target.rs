//! Fuzzes the PID|:PORT argument of `nodelay inspect` and `nodelay fix`: any text parses to a
//! target or an error naming the text, never a panic, and a target prints back as what it is.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nodelay_host::Target;

fuzz_target!(|text: &str| {
    match text.parse::<Target>() {
        Ok(Target::Pid(pid)) => {
            assert!(pid > 0);
            assert_eq!(Target::Pid(pid).to_string(), format!("PID {pid}"));
        }
        Ok(Target::Port(port)) => {
            assert!(port > 0);
            assert_eq!(text.strip_prefix(':').and_then(|p| p.parse::<u16>().ok()), Some(port));
        }
        Ok(Target::Address(_)) => panic!("no text names an address target"),
        Err(error) => assert!(error.contains(&format!("'{text}'")), "{error}"),
    }
});
