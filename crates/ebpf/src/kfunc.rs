//! Kernel functions (kfuncs) called by the programs, linked here: aya links no kfunc calls, so
//! a program writes the call as its raw instruction (BPF_CALL, src_reg 2: a function in
//! vmlinux) with a marker for its immediate, and [`link`] writes the kernel's BTF id of the
//! function there before the object is loaded. Without the function (an older kernel), the
//! object is left as it is and the programs that call it are refused by the verifier; each
//! has a twin that does without.

use aya::Btf;
use aya_obj::btf::BtfKind;

/// `bpf_rdonly_cast(obj, btf_id)` (Linux 6.2 and later): `obj` as the kernel type `btf_id`,
/// read-only, with no call at run time. watch_holds.bpf.c marks its calls with this immediate.
pub(crate) const RDONLY_CAST: (&str, u32) = ("bpf_rdonly_cast", 0x6e6f_646c);

/// An ELF object in a buffer whose bytes start at an 8-byte boundary, as aya's parser needs.
pub(crate) struct AlignedObject {
    buffer: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedObject {
    fn copy_of(object: &[u8]) -> AlignedObject {
        let mut buffer = vec![0u8; object.len() + 7];
        let start = buffer.as_ptr().align_offset(8);
        buffer[start..start + object.len()].copy_from_slice(object);
        AlignedObject { buffer, start, len: object.len() }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buffer[self.start..self.start + self.len]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buffer[self.start..self.start + self.len]
    }
}

/// The kernel's BTF id of function `name`, if it has one.
pub(crate) fn function_id(btf: &Btf, name: &str) -> Option<u32> {
    btf.id_by_type_name_kind(name, BtfKind::Func).ok()
}

/// A copy of `object` whose kfunc calls marked `marker` call BTF id `id`, and how many there
/// were. Instructions are 8 bytes at 8-byte offsets of the file (ELF code sections are
/// 8-aligned), so only those offsets are looked at.
pub(crate) fn with_calls_to(object: &[u8], marker: u32, id: u32) -> (AlignedObject, usize) {
    // code BPF_JMP | BPF_CALL, registers: dst 0, src 2 (BPF_PSEUDO_KFUNC_CALL), offset 0
    // (vmlinux's BTF), then the immediate, all little-endian as clang writes them on x86.
    let mut marked = [0x85, 0x20, 0, 0, 0, 0, 0, 0];
    marked[4..].copy_from_slice(&marker.to_le_bytes());
    let mut linked = AlignedObject::copy_of(object);
    let mut calls = 0;
    for instruction in linked.bytes_mut().chunks_exact_mut(8) {
        if *instruction == marked {
            instruction[4..].copy_from_slice(&id.to_le_bytes());
            calls += 1;
        }
    }
    (linked, calls)
}

/// `object` with the calls of `function` (marked `marker`) linked to the running kernel's, and
/// whether the kernel has it.
pub(crate) fn link(object: &[u8], (function, marker): (&str, u32), btf: &Btf) -> (AlignedObject, bool) {
    match function_id(btf, function) {
        Some(id) => {
            let (linked, calls) = with_calls_to(object, marker, id);
            (linked, calls > 0)
        }
        None => (AlignedObject::copy_of(object), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_marked_call_and_nothing_else_gets_the_id() {
        let call = |imm: u32| {
            let mut instruction = vec![0x85, 0x20, 0, 0];
            instruction.extend(imm.to_le_bytes());
            instruction
        };
        let mut object = vec![0xb7, 0, 0, 0, 0, 0, 0, 0]; // r0 = 0
        object.extend(call(RDONLY_CAST.1));
        // The marker as a helper call (src_reg 0), and off the 8-byte grid: left alone.
        object.extend([0x85, 0x00, 0, 0]);
        object.extend(RDONLY_CAST.1.to_le_bytes());
        object.extend([1, 2, 3, 4]);
        object.extend(call(RDONLY_CAST.1));
        object.extend([5, 6, 7, 8]);
        object.extend(call(RDONLY_CAST.1));
        let (linked, calls) = with_calls_to(&object, RDONLY_CAST.1, 65_504);
        assert_eq!(calls, 2);
        assert_eq!(linked.bytes().as_ptr().align_offset(8), 0);
        let mut expected = object.clone();
        expected[12..16].copy_from_slice(&65_504u32.to_le_bytes());
        expected[44..48].copy_from_slice(&65_504u32.to_le_bytes());
        assert_eq!(linked.bytes(), &expected[..]);
    }

    #[cfg(nodelay_bpf)]
    #[test]
    fn the_watch_object_marks_one_cast_in_each_of_its_two_hot_programs() {
        let object = crate::holds::OBJECT.unwrap();
        let (_, calls) = with_calls_to(object, RDONLY_CAST.1, 1);
        assert_eq!(calls, 2, "nodelay_send and nodelay_ack each call bpf_rdonly_cast once");
    }
}
