//! Reading the small files that settings name (`NF_TUNE_FILE`, memory registry
//! entries, host files): whatever a path points at, the read ends quickly and bounded.
//!
//! A setting is a path any user (or a hostile one, for files a daemon reads) can point
//! anywhere: `/dev/zero` would be read until memory runs out, a FIFO would block the
//! open forever, a symlink could lead a root daemon elsewhere. So the file is opened
//! without following a final symlink and without blocking (`O_NOFOLLOW`,
//! `O_NONBLOCK`), must be a regular file, and is read up to a limit; anything else is
//! an error that names the path and says what was wrong.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};

/// The bytes of the regular file at `path`, at most `limit` of them.
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    read_regular_owned(path, limit).map(|(bytes, _)| bytes)
}

/// [`read_regular`], with the uid owning the file that was read (from the open file,
/// so it cannot be another file's).
pub fn read_regular_owned(path: &Path, limit: u64) -> io::Result<(Vec<u8>, u32)> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::empty()).map_err(|e| {
        let e = io::Error::from(e);
        io::Error::new(e.kind(), format!("{}: {e}", path.display()))
    })?;
    let st = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a regular file ({:?}); point the setting at a file",
                path.display(),
                FileType::from_raw_mode(st.st_mode)
            ),
        ));
    }
    let mut bytes = Vec::new();
    File::from(fd).take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is larger than {limit} bytes", path.display()),
        ));
    }
    Ok((bytes, st.st_uid))
}

/// [`read_regular`] as UTF-8 text.
pub fn read_regular_text(path: &Path, limit: u64) -> io::Result<String> {
    text(path, read_regular(path, limit)?)
}

/// [`read_regular_owned`] as UTF-8 text.
pub fn read_regular_text_owned(path: &Path, limit: u64) -> io::Result<(String, u32)> {
    let (bytes, uid) = read_regular_owned(path, limit)?;
    Ok((text(path, bytes)?, uid))
}

fn text(path: &Path, bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not UTF-8 text", path.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_symlinks_and_big_files_are_refused_quickly() {
        let dir = tempfile::tempdir().unwrap();
        let zero = read_regular(Path::new("/dev/zero"), 1024).unwrap_err();
        assert!(zero.to_string().contains("not a regular file"), "{zero}");
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(
            read_regular(&fifo, 1024).is_err(),
            "a FIFO neither blocks nor reads"
        );
        let file = dir.path().join("f");
        std::fs::write(&file, b"0123456789").unwrap();
        assert_eq!(read_regular(&file, 10).unwrap(), b"0123456789");
        assert!(read_regular(&file, 9).is_err());
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(read_regular(&link, 10).is_err());
        assert_eq!(read_regular_text(&file, 64).unwrap(), "0123456789");
    }
}
