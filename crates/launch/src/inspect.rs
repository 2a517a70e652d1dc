//! Whether a preload can work for a program, decided before it starts from its file: the mode
//! bits and capabilities (secure-execution mode), then its ELF headers, read on demand (a
//! program can be hundreds of megabytes). A `#!` script is judged by its interpreter, through
//! `env` too. Anything that cannot be read or is not ELF gets the benefit of the doubt: the
//! preload is tried.

use crate::NoPreload;
use object::read::elf::{FileHeader, ProgramHeader, SectionTable};
use object::{Endian, Endianness, FileKind, ReadCache, ReadRef, elf};
use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// `#!` lines followed, at most: a script whose interpreter is a script, and so on.
const MAX_INTERPRETER_DEPTH: u32 = 4;

/// The Go toolchain's ELF note holding the build ID: name "Go", type 4 (`ELF_NOTE_GOBUILDID_TAG`).
const GO_BUILD_ID_NOTE: u32 = 4;

pub fn why_no_preload(program: &Path) -> Option<NoPreload> {
    inspect(program, 0)
}

/// The verdict on an ELF image already in memory, named `file` in the reason: the parser of
/// untrusted bytes behind [`prepare`](crate::prepare)'s, without the file system (the fuzz
/// target's entry). Not ELF, or not an executable: `None`, the preload is tried.
pub fn why_no_preload_in_elf(image: &[u8], file: PathBuf) -> Option<NoPreload> {
    match FileKind::parse(image) {
        Ok(FileKind::Elf32) => inspect_elf::<elf::FileHeader32<Endianness>, _>(image, file),
        Ok(FileKind::Elf64) => inspect_elf::<elf::FileHeader64<Endianness>, _>(image, file),
        _ => None,
    }
}

fn inspect(path: &Path, depth: u32) -> Option<NoPreload> {
    let metadata = std::fs::metadata(path).ok()?;
    let file = path.to_path_buf();
    // SAFETY: getuid and getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // The kernel runs a program in secure-execution mode (AT_SECURE) when exec changes its
    // user or group: set-ID to someone else, or file capabilities gained by a non-root user.
    let mode = metadata.mode();
    if (mode & libc::S_ISUID != 0 && metadata.uid() != uid)
        || (mode & libc::S_ISGID != 0 && metadata.gid() != gid)
    {
        return Some(NoPreload::SetId { file });
    }
    if uid != 0 && has_file_capabilities(path) {
        return Some(NoPreload::Capabilities { file });
    }
    // Execute-only files (mode 0711) cannot be read: nothing more can be told.
    let mut opened = File::open(path).ok()?;
    let mut head = [0u8; 512];
    let length = read_head(&mut opened, &mut head);
    if head[..length].starts_with(b"#!") {
        if depth >= MAX_INTERPRETER_DEPTH {
            return None;
        }
        let interpreter = script_interpreter(&head[..length])?;
        return inspect(&interpreter, depth + 1);
    }
    let data = ReadCache::new(opened);
    match FileKind::parse(&data) {
        Ok(FileKind::Elf32) => inspect_elf::<elf::FileHeader32<Endianness>, _>(&data, file),
        Ok(FileKind::Elf64) => inspect_elf::<elf::FileHeader64<Endianness>, _>(&data, file),
        _ => None,
    }
}

fn read_head(file: &mut File, buffer: &mut [u8]) -> usize {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => filled += n,
        }
    }
    filled
}

fn has_file_capabilities(path: &Path) -> bool {
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: both strings are NUL-terminated; a null buffer of size 0 asks only for the size.
    let size =
        unsafe { libc::getxattr(c_path.as_ptr(), c"security.capability".as_ptr(), std::ptr::null_mut(), 0) };
    size > 0
}

/// The program a `#!` line runs: its interpreter, or with `env` (`#!/usr/bin/env [-S] NAME`)
/// the NAME that env will find in PATH.
fn script_interpreter(head: &[u8]) -> Option<PathBuf> {
    let line = head[2..].split(|&b| b == b'\n').next()?;
    let mut words = line.split(|b| b.is_ascii_whitespace()).filter(|w| !w.is_empty());
    let interpreter = Path::new(OsStr::from_bytes(words.next()?));
    if interpreter.file_name() != Some(OsStr::new("env")) {
        return Some(interpreter.to_path_buf());
    }
    // env's own options (-S, -i, ...) and VAR=value assignments come before the command.
    let name = words.find(|w| !w.starts_with(b"-") && !w.contains(&b'='))?;
    crate::resolve::find_program(OsStr::from_bytes(name), std::env::var_os("PATH").as_deref()).ok()
}

/// The word size, byte order and machine of an ELF file: what must match for a library to
/// load into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    is_64: bool,
    little_endian: bool,
    machine: u16,
}

fn identity<Elf: FileHeader<Endian = Endianness>>(header: &Elf, endian: Endianness) -> Identity {
    Identity {
        is_64: header.is_class_64(),
        little_endian: endian.is_little_endian(),
        machine: header.e_machine(endian),
    }
}

/// This process's own identity, which the embedded shim shares (the build compiles it for the
/// same target).
fn own_identity() -> Option<Identity> {
    let data = ReadCache::new(File::open("/proc/self/exe").ok()?);
    match FileKind::parse(&data).ok()? {
        FileKind::Elf32 => {
            let header = elf::FileHeader32::<Endianness>::parse(&data).ok()?;
            Some(identity(header, header.endian().ok()?))
        }
        FileKind::Elf64 => {
            let header = elf::FileHeader64::<Endianness>::parse(&data).ok()?;
            Some(identity(header, header.endian().ok()?))
        }
        _ => None,
    }
}

fn inspect_elf<'data, Elf: FileHeader<Endian = Endianness>, R: ReadRef<'data>>(
    data: R,
    file: PathBuf,
) -> Option<NoPreload> {
    let header = Elf::parse(data).ok()?;
    let endian = header.endian().ok()?;
    if !matches!(header.e_type(endian), elf::ET_EXEC | elf::ET_DYN) {
        return None;
    }
    if own_identity().is_some_and(|own| own != identity(header, endian)) {
        return Some(NoPreload::OtherArchitecture { file });
    }
    let segments = header.program_headers(endian, data).ok()?;
    if is_go(header, endian, segments, data) {
        return Some(NoPreload::Go { file });
    }
    if !segments.iter().any(|segment| segment.p_type(endian) == elf::PT_INTERP) {
        return Some(NoPreload::StaticallyLinked { file });
    }
    None
}

/// A Go binary: the sections the Go linker writes, or (section headers stripped) its build-ID
/// note in a PT_NOTE segment.
fn is_go<'data, Elf: FileHeader<Endian = Endianness>, R: ReadRef<'data>>(
    header: &Elf,
    endian: Endianness,
    segments: &'data [Elf::ProgramHeader],
    data: R,
) -> bool {
    let sections: Option<SectionTable<'data, Elf, R>> = header.sections(endian, data).ok();
    if sections.is_some_and(|sections| {
        [&b".go.buildinfo"[..], b".note.go.buildid"]
            .iter()
            .any(|name| sections.section_by_name(endian, name).is_some())
    }) {
        return true;
    }
    segments.iter().any(|segment| {
        let Ok(Some(mut notes)) = segment.notes(endian, data) else { return false };
        while let Ok(Some(note)) = notes.next() {
            if note.name() == b"Go" && note.n_type(endian) == GO_BUILD_ID_NOTE {
                return true;
            }
        }
        false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebang_lines_name_their_interpreter() {
        assert_eq!(script_interpreter(b"#!/bin/sh -e\necho hi\n"), Some(PathBuf::from("/bin/sh")));
        assert_eq!(script_interpreter(b"#! /bin/bash\n"), Some(PathBuf::from("/bin/bash")));
        let sh = crate::resolve::find_program(OsStr::new("sh"), std::env::var_os("PATH").as_deref()).ok();
        assert!(sh.is_some());
        assert_eq!(script_interpreter(b"#!/usr/bin/env -S LC_ALL=C sh -e\n"), sh);
        assert_eq!(script_interpreter(b"#!\n"), None);
    }

    #[test]
    fn dynamic_programs_can_be_preloaded() {
        let sh = crate::resolve::find_program(OsStr::new("sh"), Some(OsStr::new("/bin:/usr/bin"))).unwrap();
        assert_eq!(why_no_preload(&sh), None);
        assert_eq!(why_no_preload(Path::new("/proc/self/exe")), None);
    }

    #[test]
    fn an_image_in_memory_is_judged_like_its_file_and_cut_images_do_not_panic() {
        let image = std::fs::read("/proc/self/exe").unwrap();
        assert_eq!(why_no_preload_in_elf(&image, PathBuf::from("self")), None);
        // A static image: the ELF header says "executable" and no program header is PT_INTERP.
        let mut header_only = image[..64].to_vec();
        header_only[16] = elf::ET_EXEC as u8; // e_type, little-endian
        header_only[56] = 0; // e_phnum = 0
        header_only[57] = 0;
        assert_eq!(
            why_no_preload_in_elf(&header_only, PathBuf::from("cut")),
            Some(NoPreload::StaticallyLinked { file: PathBuf::from("cut") })
        );
        for length in [0, 4, 20, 63, 64, 65, 200, 4096] {
            let _ = why_no_preload_in_elf(&image[..length.min(image.len())], PathBuf::from("cut"));
        }
    }

    #[test]
    fn a_file_that_is_not_elf_gets_the_benefit_of_the_doubt() {
        let path = std::env::temp_dir().join(format!("nodelay-inspect-{}", std::process::id()));
        std::fs::write(&path, b"just text").unwrap();
        assert_eq!(why_no_preload(&path), None);
        std::fs::remove_file(&path).unwrap();
    }
}
