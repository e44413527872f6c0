//! Which shared libraries a program links (its ELF `DT_NEEDED` entries), so `nf run`
//! can tell an MPI program — which would become N singleton MPI jobs under it — from a
//! ninefold one.
//!
//! Only what the check needs is read: the ELF header, the program headers, the dynamic
//! segment and its string table, through the `PT_LOAD` segments that map them. Scripts,
//! static binaries and anything unreadable have no needed libraries: the check then
//! stays silent rather than guessing.

use std::io::Read;
use std::path::Path;

/// Program header type of a loadable segment.
const PT_LOAD: u32 = 1;
/// Program header type of the dynamic segment.
const PT_DYNAMIC: u32 = 2;
/// Dynamic tag: the end of the dynamic array.
const DT_NULL: u64 = 0;
/// Dynamic tag: a needed library (an offset into the string table).
const DT_NEEDED: u64 = 1;
/// Dynamic tag: the string table's address.
const DT_STRTAB: u64 = 5;
/// Dynamic entries read at most (real programs have a few dozen).
const MAX_DYNAMIC: usize = 4096;
/// Bytes of a program read to find its needed libraries.
const HEAD_BYTES: u64 = 16 << 20;

/// Reads integers of an ELF file's class (32 / 64 bit) and byte order.
struct Reader<'a> {
    data: &'a [u8],
    wide: bool,
    little: bool,
}

impl Reader<'_> {
    fn uint(&self, off: usize, len: usize) -> Option<u64> {
        let b = self.data.get(off..off.checked_add(len)?)?;
        let mut v = 0u64;
        for i in 0..len {
            let byte = if self.little { b[len - 1 - i] } else { b[i] };
            v = v << 8 | u64::from(byte);
        }
        Some(v)
    }
    fn u16(&self, off: usize) -> Option<u64> {
        self.uint(off, 2)
    }
    fn u32(&self, off: usize) -> Option<u64> {
        self.uint(off, 4)
    }
    /// An address-sized word (`Elf32_Addr` / `Elf64_Addr`).
    fn word(&self, off: usize) -> Option<u64> {
        self.uint(off, if self.wide { 8 } else { 4 })
    }
}

/// A segment: where it lies in the file and where it is mapped.
struct Segment {
    kind: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
}

/// The `DT_NEEDED` entries of the ELF image `data`; empty when it is not a dynamically
/// linked ELF file or is malformed.
pub fn needed_in(data: &[u8]) -> Vec<String> {
    parse(data).unwrap_or_default()
}

fn parse(data: &[u8]) -> Option<Vec<String>> {
    if data.get(..4)? != b"\x7fELF" {
        return None;
    }
    let r = Reader {
        data,
        wide: *data.get(4)? == 2,
        little: *data.get(5)? == 1,
    };
    // Field offsets of Elf32_Ehdr / Elf64_Ehdr and Elf32_Phdr / Elf64_Phdr.
    let (phoff, phentsize, phnum) = if r.wide {
        (r.word(0x20)?, r.u16(0x36)?, r.u16(0x38)?)
    } else {
        (r.word(0x1c)?, r.u16(0x2a)?, r.u16(0x2c)?)
    };
    let segments: Vec<Segment> = (0..phnum)
        .map(|i| {
            let at = usize::try_from(phoff.checked_add(i.checked_mul(phentsize)?)?).ok()?;
            Some(if r.wide {
                Segment {
                    kind: r.u32(at)? as u32,
                    offset: r.word(at + 8)?,
                    vaddr: r.word(at + 16)?,
                    filesz: r.word(at + 32)?,
                }
            } else {
                Segment {
                    kind: r.u32(at)? as u32,
                    offset: r.word(at + 4)?,
                    vaddr: r.word(at + 8)?,
                    filesz: r.word(at + 16)?,
                }
            })
        })
        .collect::<Option<_>>()?;
    let dynamic = segments.iter().find(|s| s.kind == PT_DYNAMIC)?;
    let entry = if r.wide { 16 } else { 8 };
    let mut needed = Vec::new();
    let mut strtab = None;
    for i in 0..(dynamic.filesz as usize / entry).min(MAX_DYNAMIC) {
        let at = usize::try_from(dynamic.offset)
            .ok()?
            .checked_add(i * entry)?;
        let (tag, val) = (r.word(at)?, r.word(at + entry / 2)?);
        match tag {
            DT_NULL => break,
            DT_NEEDED => needed.push(val),
            DT_STRTAB => strtab = Some(val),
            _ => {}
        }
    }
    // DT_STRTAB is an address: find the loaded segment that maps it to a file offset.
    let addr = strtab?;
    let load = segments.iter().find(|s| {
        s.kind == PT_LOAD
            && s.vaddr <= addr
            && s.vaddr.checked_add(s.filesz).is_some_and(|end| addr < end)
    })?;
    let table = usize::try_from((addr - load.vaddr).checked_add(load.offset)?).ok()?;
    needed
        .iter()
        .map(|&off| {
            let start = table.checked_add(usize::try_from(off).ok()?)?;
            let rest = data.get(start..)?;
            let end = rest.iter().position(|&b| b == 0)?;
            Some(String::from_utf8_lossy(&rest[..end]).into_owned())
        })
        .collect()
}

/// Whether the library file name `lib` is an MPI library: Open MPI's `libmpi.so.40`,
/// MPICH's `libmpich.so.12` / `libmpi.so.12`, their C++ and Fortran bindings.
pub fn is_mpi_library(lib: &str) -> bool {
    let stem = lib.split(".so").next().unwrap_or(lib);
    stem == "libmpi" || stem == "libmpich" || stem.starts_with("libmpi_") || stem == "libmpicxx"
}

/// The MPI library `program` links directly, if any. `program` is found as the
/// launcher will start it ([`crate::resolve_program`] over `PATH`).
pub fn mpi_library_of(program: &Path) -> Option<String> {
    let path = crate::resolve_program(program, std::env::var_os("PATH").as_deref()).ok()?;
    // The headers, the dynamic segment and its strings sit at the start of a program
    // (its first loaded segment): reading a bounded head keeps a huge binary cheap; a
    // program whose tables lie beyond it is simply not recognised.
    let mut data = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(HEAD_BYTES)
        .read_to_end(&mut data)
        .ok()?;
    needed_in(&data).into_iter().find(|l| is_mpi_library(l))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpi_library_names() {
        for lib in [
            "libmpi.so.40",
            "libmpich.so.12",
            "libmpi.so",
            "libmpi_mpifh.so.40",
        ] {
            assert!(is_mpi_library(lib), "{lib}");
        }
        for lib in ["libc.so.6", "libmpfr.so.6", "libarmci.so", "libmpix.so"] {
            assert!(!is_mpi_library(lib), "{lib}");
        }
    }

    #[test]
    fn this_test_binary_links_libc_and_no_mpi() {
        let exe = std::env::current_exe().unwrap();
        let needed = needed_in(&std::fs::read(&exe).unwrap());
        assert!(
            needed.iter().any(|l| l.starts_with("libc.so")),
            "{needed:?}"
        );
        assert_eq!(mpi_library_of(&exe), None);
    }

    #[test]
    fn scripts_and_garbage_have_no_needed_libraries() {
        // Headers whose offsets and counts overflow are refused, not a panic.
        let mut huge = vec![0u8; 64];
        huge[..6].copy_from_slice(b"\x7fELF\x02\x01");
        huge[0x20..0x28].copy_from_slice(&u64::MAX.to_le_bytes());
        huge[0x36..0x38].copy_from_slice(&u16::MAX.to_le_bytes());
        huge[0x38..0x3a].copy_from_slice(&u16::MAX.to_le_bytes());
        assert!(needed_in(&huge).is_empty());
        assert!(needed_in(b"#!/bin/sh\necho hi\n").is_empty());
        assert!(needed_in(b"\x7fELF\x02\x01").is_empty());
        assert!(needed_in(&[]).is_empty());
        assert_eq!(mpi_library_of(Path::new("/no/such/program")), None);
    }
}
