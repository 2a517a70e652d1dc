//! Fuzzes what `nodelay exec` reads of a program before it starts: any bytes as an ELF image
//! give a verdict (preload, or why not), never a panic, and the verdict names the file given.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nodelay_launch::{NoPreload, why_no_preload_in_elf};
use std::path::PathBuf;

fuzz_target!(|image: &[u8]| {
    let file = PathBuf::from("fuzzed");
    match why_no_preload_in_elf(image, file.clone()) {
        None => {}
        Some(
            NoPreload::StaticallyLinked { file: named }
            | NoPreload::Go { file: named }
            | NoPreload::OtherArchitecture { file: named },
        ) => assert_eq!(named, file),
        Some(other) => panic!("an image alone cannot say {other:?}"),
    }
});
