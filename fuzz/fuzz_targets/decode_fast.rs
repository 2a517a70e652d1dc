//! Differential fuzzing of the capture decoder: for any frame of any supported link type, the
//! hand-written fast path must give what etherparse gives, or leave the frame to it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nodelay_capture::decode::fast::{Fast, decode};
use nodelay_capture::decode::{LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2, LINKTYPE_NULL, LINKTYPE_RAW, decode_with_etherparse};

fuzz_target!(|data: &[u8]| {
    let Some((&choice, frame)) = data.split_first() else { return };
    let links = [LINKTYPE_ETHERNET, LINKTYPE_RAW, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2, LINKTYPE_NULL];
    let link_type = links[usize::from(choice) % links.len()];
    match decode(link_type, frame) {
        Fast::Segment(segment) => assert_eq!(Some(segment), decode_with_etherparse(link_type, frame)),
        Fast::NotTcp => assert_eq!(None, decode_with_etherparse(link_type, frame)),
        Fast::Unsure => {}
    }
});
