//! `nf cp -r`: a directory tree to, from or between servers.
//!
//! Steps:
//!
//! 1. List the source tree (no link followed): directories, regular files with their
//!    permission bits, symbolic links with their targets; anything else is named and
//!    skipped.
//! 2. Make every directory at the destination, parents first (one that exists is
//!    used).
//! 3. Copy the files with [`THREADS`] threads over the one connection: the client
//!    multiplexes, so several files are in flight and the round trips of small files
//!    overlap (a gateway between adds a hop to each). Links are made as links.
//! 4. Report each file that failed; the copy goes on with the others, and the command
//!    exits 1 if any failed.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::Context;
use nf_ninep::errno::EEXIST;
use nf_ninep::LOpenFlags;
use nf_ninep_client::Root;

/// Files copied at once.
pub const THREADS: usize = 8;

/// One thing in a tree, by its path relative to the tree's top (`""` is the top).
enum Entry {
    Dir(String),
    File(String, u32),
    Link(String, String),
}

fn join(base: &str, rel: &str) -> String {
    if rel.is_empty() {
        base.to_string()
    } else {
        format!("{}/{rel}", base.trim_end_matches('/'))
    }
}

/// Step 1 for a local tree.
fn list_local(top: &Path) -> anyhow::Result<Vec<Entry>> {
    let mut out = vec![Entry::Dir(String::new())];
    let mut dirs = vec![String::new()];
    while let Some(rel) = dirs.pop() {
        let dir = top.join(&rel);
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .with_context(|| format!("listing {}", dir.display()))?
            .collect::<Result<_, _>>()
            .with_context(|| format!("listing {}", dir.display()))?;
        names.sort_by_key(|e| e.file_name());
        for e in names {
            let name = e.file_name().to_string_lossy().into_owned();
            let child = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let meta = e
                .metadata()
                .with_context(|| format!("reading {}", e.path().display()))?;
            if meta.is_dir() {
                out.push(Entry::Dir(child.clone()));
                dirs.push(child);
            } else if meta.is_file() {
                out.push(Entry::File(child, meta.mode() & 0o7777));
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(e.path())?;
                out.push(Entry::Link(child, target.to_string_lossy().into_owned()));
            } else {
                eprintln!(
                    "nf cp: skipping {}: not a file, directory or link",
                    e.path().display()
                );
            }
        }
    }
    Ok(out)
}

/// Step 1 for a remote tree.
fn list_remote(root: &Root, top: &str) -> anyhow::Result<Vec<Entry>> {
    let mut out = vec![Entry::Dir(String::new())];
    let mut dirs = vec![String::new()];
    while let Some(rel) = dirs.pop() {
        let mut entries = root.readdir(&join(top, &rel))?;
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for e in entries
            .into_iter()
            .filter(|e| e.name != "." && e.name != "..")
        {
            let child = if rel.is_empty() {
                e.name.clone()
            } else {
                format!("{rel}/{}", e.name)
            };
            let path = join(top, &child);
            let stat = root.stat(&path)?;
            if stat.is_dir() {
                out.push(Entry::Dir(child.clone()));
                dirs.push(child);
            } else if stat.is_symlink() {
                out.push(Entry::Link(child, root.readlink(&path)?));
            } else {
                out.push(Entry::File(child, stat.permissions()));
            }
        }
    }
    Ok(out)
}

/// Step 3: runs `copy` on every file with [`THREADS`] threads; the failures, named.
fn copy_files(entries: &[Entry], copy: impl Fn(&str, u32) -> anyhow::Result<()> + Sync) -> usize {
    let files: Vec<(&str, u32)> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::File(rel, mode) => Some((rel.as_str(), *mode)),
            _ => None,
        })
        .collect();
    let next = AtomicUsize::new(0);
    let failed = Mutex::new(0);
    std::thread::scope(|s| {
        for _ in 0..THREADS.min(files.len()) {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some((rel, mode)) = files.get(k) else {
                    return;
                };
                if let Err(e) = copy(rel, *mode) {
                    eprintln!("nf cp: {rel}: {e:#}");
                    *failed.lock().unwrap_or_else(|p| p.into_inner()) += 1;
                }
            });
        }
    });
    failed.into_inner().unwrap_or_else(|p| p.into_inner())
}

/// Step 2 on a server: `entries`' directories and links under `to` there.
fn make_remote(root: &Root, to: &str, entries: &[Entry]) -> anyhow::Result<()> {
    for e in entries {
        match e {
            Entry::Dir(rel) => match root.mkdir(&join(to, rel), 0o755) {
                Err(e) if e.errno() == Some(EEXIST) => {}
                other => {
                    other.with_context(|| format!("making {}", join(to, rel)))?;
                }
            },
            Entry::Link(rel, target) => {
                root.symlink(&join(to, rel), target)
                    .with_context(|| format!("making the link {}", join(to, rel)))?;
            }
            Entry::File(..) => {}
        }
    }
    Ok(())
}

/// Opens the file `path` on the server to be written with permission bits `mode`:
/// made if missing, else emptied.
fn create_remote(root: &Root, path: &str, mode: u32) -> anyhow::Result<nf_ninep_client::File> {
    let flags = LOpenFlags::WRONLY | LOpenFlags::TRUNC;
    Ok(match root.create(path, flags, mode) {
        Err(e) if e.errno() == Some(EEXIST) => root.open(path, flags)?,
        other => other?,
    })
}

/// Copies the local tree `from` to `to` on the server (made if missing), each file
/// with up to `depth` writes in flight; returns how many files failed.
pub fn upload(root: &Root, from: &Path, to: &str, depth: usize) -> anyhow::Result<usize> {
    let entries = list_local(from)?;
    make_remote(root, to, &entries)?;
    Ok(copy_files(&entries, |rel, mode| {
        let mut input = std::fs::File::open(from.join(rel))?;
        let mut file = create_remote(root, &join(to, rel), mode)?;
        file.copy_from_behind(&mut input, depth)?;
        file.close()?;
        Ok(())
    }))
}

/// Copies the tree `from` on the server `src` to `to` on the server `dst` (made if
/// missing; the same server or another, directly or through a gateway), each file
/// with up to `depth` reads in flight on the source feeding up to `depth` writes in
/// flight on the destination; returns how many files failed.
pub fn between(
    src: &Root,
    from: &str,
    dst: &Root,
    to: &str,
    depth: usize,
) -> anyhow::Result<usize> {
    let entries = list_remote(src, from)?;
    make_remote(dst, to, &entries)?;
    Ok(copy_files(&entries, |rel, mode| {
        let mut input = src.open(&join(from, rel), LOpenFlags::RDONLY)?;
        let mut file = create_remote(dst, &join(to, rel), mode)?;
        input.copy_to_file(&mut file, depth)?;
        file.close()?;
        Ok(())
    }))
}

/// Copies the tree `from` on the server to the local `to` (made if missing), each file
/// with `depth` reads in flight; returns how many files failed.
pub fn download(root: &Root, from: &str, to: &Path, depth: usize) -> anyhow::Result<usize> {
    let entries = list_remote(root, from)?;
    for e in &entries {
        match e {
            Entry::Dir(rel) => {
                let dir = to.join(rel);
                if !dir.is_dir() {
                    std::fs::create_dir(&dir)
                        .with_context(|| format!("making {}", dir.display()))?;
                }
            }
            Entry::Link(rel, target) => {
                std::os::unix::fs::symlink(target, to.join(rel))
                    .with_context(|| format!("making the link {}", to.join(rel).display()))?;
            }
            Entry::File(..) => {}
        }
    }
    Ok(copy_files(&entries, |rel, mode| {
        let mut file = root.open(&join(from, rel), LOpenFlags::RDONLY)?;
        let path: PathBuf = to.join(rel);
        let mut out = std::fs::File::create(&path)?;
        file.copy_to_ahead(&mut out, depth)?;
        out.set_permissions(std::fs::Permissions::from_mode(mode & 0o777))?;
        Ok(())
    }))
}
