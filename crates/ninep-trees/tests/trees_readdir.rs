//! Host directories read page by page with the kernel's cookies (`hostdir.rs`): every
//! entry exactly once however small the pages and wherever a client resumes, `.` and
//! `..` as before (first, with the lexical walk's qids), fids that page independently,
//! and offset 0 as a fresh listing.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;

use nf_ninep::readdir::decode_dirents;
use nf_ninep::{Dirent, LOpenFlags, Rmessage, Treaddir};
use nf_ninep_client::{File, Root};
use nf_ninep_server::ServerConfig;
use nf_ninep_trees::PassthroughFs;
use nf_testkit::ninep::{serve, Served, Via};

/// Files in the big directory.
const FILES: usize = 3000;

/// An export holding `big/` with [`FILES`] files of names 1 to 60 bytes long, five
/// subdirectories and one name that is not UTF-8.
fn export() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big");
    fs::create_dir(&big).unwrap();
    for i in 0..FILES {
        let name = format!("{i}-{}", "x".repeat(i % 55));
        fs::write(big.join(name), b"").unwrap();
    }
    for i in 0..5 {
        fs::create_dir(big.join(format!("dir{i}"))).unwrap();
    }
    fs::write(big.join(OsStr::from_bytes(b"bad-\xff-name")), b"").unwrap();
    dir
}

fn served(dir: &tempfile::TempDir) -> (Served<PassthroughFs>, Root) {
    let s = serve(
        PassthroughFs::new(dir.path()).unwrap(),
        ServerConfig::default(),
        Via::Unix,
    );
    let root = s.client().attach("tester", "").unwrap();
    (s, root)
}

/// One `Treaddir` of at most `count` bytes after `offset`.
fn page(dir: &File, offset: u64, count: u32) -> Vec<Dirent> {
    let reply = dir
        .client()
        .call(Treaddir {
            fid: dir.number(),
            offset,
            count,
        })
        .unwrap();
    match reply {
        Rmessage::Rreaddir(r) => decode_dirents(r.data.as_slice()).unwrap(),
        other => panic!("expected Rreaddir, got {other:?}"),
    }
}

/// Every entry after `offset`, in pages of `count` bytes, as a client pages: each
/// next request starts at the last offset received.
fn rest(dir: &File, mut offset: u64, count: u32) -> Vec<Dirent> {
    let mut out = Vec::new();
    for _ in 0..100_000 {
        let got = page(dir, offset, count);
        let Some(last) = got.last() else {
            return out;
        };
        offset = last.offset;
        out.extend(got);
    }
    panic!("the listing never ends");
}

fn names(entries: &[Dirent]) -> Vec<&str> {
    entries.iter().map(|e| e.name.as_str()).collect()
}

#[test]
fn small_pages_list_every_entry_once_with_dot_and_dotdot_first() {
    let dir = export();
    let (_s, root) = served(&dir);
    let big = root.open("/big", LOpenFlags::RDONLY).unwrap();
    let whole = rest(&big, 0, 200);
    let got = names(&whole);
    assert_eq!(&got[..2], [".", ".."], "dots first, as before");
    let unique: HashSet<&str> = got.iter().copied().collect();
    assert_eq!(unique.len(), got.len(), "no entry twice");
    assert_eq!(
        got.len(),
        2 + FILES + 5,
        "every entry; the name that is not UTF-8 skipped"
    );
    for i in [0, 1, 54, 55, FILES - 1] {
        let name = format!("{i}-{}", "x".repeat(i % 55));
        assert!(unique.contains(name.as_str()), "{name} listed");
    }
    // `.` is the directory, `..` its parent: the qids a walk gives.
    assert_eq!(whole[0].qid, root.stat("/big").unwrap().qid);
    assert_eq!(whole[1].qid, root.stat("/").unwrap().qid);
    assert!(whole[..2].iter().all(|e| e.dtype == Dirent::DT_DIR));
    let sub = whole.iter().find(|e| e.name == "dir3").unwrap();
    assert_eq!(
        (sub.qid.path, sub.dtype),
        (root.stat("/big/dir3").unwrap().qid.path, Dirent::DT_DIR)
    );
    // Pages of other sizes (the largest cut to msize) list the same, in the same order.
    // (A page too small for the next record comes back empty, the end for a client,
    // as it always did: a client asks for at least one record of a 255-byte name.)
    for count in [279, 1000, u32::MAX] {
        assert!(
            rest(&big, 0, count) == whole,
            "pages of {count} bytes list differently"
        );
    }
    // `..` of the export root is the root itself, never the host's parent.
    let top = root.open("/", LOpenFlags::RDONLY).unwrap();
    let at_root = rest(&top, 0, 8192);
    let attach = root.stat("/").unwrap().qid;
    assert_eq!((&at_root[0].name[..], at_root[0].qid), (".", attach));
    assert_eq!((&at_root[1].name[..], at_root[1].qid), ("..", attach));
}

#[test]
fn a_client_may_resume_after_any_offset_it_was_given() {
    let dir = export();
    let (_s, root) = served(&dir);
    let big = root.open("/big", LOpenFlags::RDONLY).unwrap();
    let whole = rest(&big, 0, 8192);
    let n = whole.len();
    let mut picks = vec![0, 1, 2, 3, 100, n / 2, n - 2, n - 1];
    // And a spread of others, in no particular order (a fixed linear congruence).
    picks.extend((0..40).map(|k| (k * 7919 + 13) % n));
    for i in picks {
        let after = rest(&big, whole[i].offset, 8192);
        assert!(
            after == whole[i + 1..],
            "resumed after entry {i}: {} entries, not {}",
            after.len(),
            n - i - 1
        );
    }
    // Two fids on one directory page independently, interleaved.
    let other = root.open("/big", LOpenFlags::RDONLY).unwrap();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let (mut at_a, mut at_b) = (0, 0);
    loop {
        let pa = page(&big, at_a, 300);
        let pb = page(&other, at_b, 500);
        if pa.is_empty() && pb.is_empty() {
            break;
        }
        at_a = pa.last().map_or(at_a, |e| e.offset);
        at_b = pb.last().map_or(at_b, |e| e.offset);
        a.extend(pa);
        b.extend(pb);
    }
    assert!(
        a == whole && b == whole,
        "interleaved fids: {} and {} entries of {n}",
        a.len(),
        b.len()
    );
}

#[test]
fn offset_zero_starts_a_fresh_listing() {
    let dir = export();
    let (_s, root) = served(&dir);
    let big = root.open("/big", LOpenFlags::RDONLY).unwrap();
    let first = page(&big, 0, 8192);
    assert!(!first.is_empty());
    fs::write(dir.path().join("big/newcomer"), b"").unwrap();
    let again = rest(&big, 0, 8192);
    assert!(names(&again).contains(&"newcomer"), "seen after a rewind");
    assert_eq!(again.len(), 2 + FILES + 5 + 1);
}
