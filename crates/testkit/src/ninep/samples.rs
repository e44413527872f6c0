//! Sample messages: one or more of every 9P2000.L type, and their encoded frames.

use nf_ninep::*;

/// The msize the tests negotiate.
pub const MSIZE: u32 = 8192;

/// A qid with distinct bytes in every field.
pub fn qid(path: u64) -> Qid {
    Qid {
        ty: QidType::DIR,
        version: 0x0102_0304,
        path,
    }
}

fn ts(sec: u64) -> Timespec {
    Timespec { sec, nsec: sec + 1 }
}

/// One sample of every request type.
pub fn requests() -> Vec<Tmessage> {
    vec![
        Tversion {
            msize: MSIZE,
            version: VERSION.into(),
        }
        .into(),
        Tauth {
            afid: 1,
            uname: "glenda".into(),
            aname: "/".into(),
            n_uname: NONUNAME,
        }
        .into(),
        Tattach {
            fid: 0,
            afid: NOFID,
            uname: "".into(),
            aname: "/node".into(),
            n_uname: 500,
        }
        .into(),
        Tflush { oldtag: 17 }.into(),
        Twalk {
            fid: 0,
            newfid: 1,
            wnames: vec!["proc".into(), "1".into(), "status".into()],
        }
        .into(),
        Twalk {
            fid: 0,
            newfid: 2,
            wnames: vec![],
        }
        .into(),
        Treaddir {
            fid: 2,
            offset: 0,
            count: MSIZE - IOHDRSZ,
        }
        .into(),
        Tmkdir {
            dfid: 1,
            name: "newdir".into(),
            mode: 0o40755,
            gid: 500,
        }
        .into(),
        Tmknod {
            dfid: 1,
            name: "fifo".into(),
            mode: 0o10644,
            major: 0,
            minor: 0,
            gid: 500,
        }
        .into(),
        Tsymlink {
            fid: 1,
            name: "link".into(),
            symtgt: "/tmp/target".into(),
            gid: 500,
        }
        .into(),
        Treadlink { fid: 4 }.into(),
        Tlink {
            dfid: 1,
            fid: 3,
            name: "hard".into(),
        }
        .into(),
        Trename {
            fid: 3,
            dfid: 1,
            name: "moved".into(),
        }
        .into(),
        Trenameat {
            olddirfid: 1,
            oldname: "a".into(),
            newdirfid: 2,
            newname: "b".into(),
        }
        .into(),
        Tunlinkat {
            dirfid: 1,
            name: "newdir".into(),
            flags: UnlinkatFlags::REMOVEDIR,
        }
        .into(),
        Tlopen {
            fid: 2,
            flags: LOpenFlags::RDONLY | LOpenFlags::DIRECTORY,
        }
        .into(),
        Tlcreate {
            fid: 2,
            name: "foo".into(),
            flags: LOpenFlags::WRONLY | LOpenFlags::CREATE | LOpenFlags::TRUNC,
            mode: 0o100644,
            gid: 500,
        }
        .into(),
        Tread {
            fid: 5,
            offset: 6,
            count: 32768,
        }
        .into(),
        Twrite {
            fid: 2,
            offset: 0,
            data: Data(b"hello\n".to_vec()),
        }
        .into(),
        Tclunk { fid: 2 }.into(),
        Tremove { fid: 2 }.into(),
        Tfsync {
            fid: 2,
            datasync: 1,
        }
        .into(),
        Tgetattr {
            fid: 0,
            request_mask: GetattrMask::BASIC,
        }
        .into(),
        Tsetattr {
            fid: 2,
            valid: SetattrMask::MODE | SetattrMask::ATIME | SetattrMask::ATIME_SET,
            attr: SetAttr {
                mode: 0o40000,
                uid: 1,
                gid: 2,
                size: 3,
                atime: ts(4),
                mtime: ts(6),
            },
        }
        .into(),
        Tstatfs { fid: 0 }.into(),
        Txattrwalk {
            fid: 0,
            newfid: 7,
            name: "user.comment".into(),
        }
        .into(),
        Txattrcreate {
            fid: 7,
            name: "user.comment".into(),
            attr_size: 12,
            flags: XattrFlags::CREATE,
        }
        .into(),
        Tlock {
            fid: 2,
            lock_type: LockType::WRLCK,
            flags: LockFlags::BLOCK,
            start: 0,
            length: 0,
            proc_id: 4242,
            client_id: "node07".into(),
        }
        .into(),
        Tgetlock {
            fid: 2,
            lock_type: LockType::RDLCK,
            start: 10,
            length: 20,
            proc_id: 4242,
            client_id: "node07".into(),
        }
        .into(),
    ]
}

/// One sample of every reply type.
pub fn replies() -> Vec<Rmessage> {
    let dirents = [
        Dirent {
            qid: qid(1),
            offset: 1,
            dtype: Dirent::DT_DIR,
            name: ".".into(),
        },
        Dirent {
            qid: qid(2),
            offset: 2,
            dtype: Dirent::DT_REG,
            name: "status".into(),
        },
    ];
    let (readdir_data, _) = encode_dirents(&dirents, MSIZE - IOHDRSZ).unwrap();
    vec![
        Rversion {
            msize: MSIZE,
            version: VERSION.into(),
        }
        .into(),
        Rauth { aqid: qid(9) }.into(),
        Rattach { qid: qid(0x2c1fac) }.into(),
        Rflush.into(),
        Rlerror::new(errno::ENOENT).into(),
        Rwalk {
            wqids: vec![qid(1), qid(2), qid(3)],
        }
        .into(),
        Rwalk { wqids: vec![] }.into(),
        Rreaddir { data: readdir_data }.into(),
        Rmkdir { qid: qid(4) }.into(),
        Rmknod { qid: qid(5) }.into(),
        Rsymlink { qid: qid(6) }.into(),
        Rreadlink {
            target: "/tmp/9/newdir".into(),
        }
        .into(),
        Rlink.into(),
        Rrename.into(),
        Rrenameat.into(),
        Runlinkat.into(),
        Rlopen {
            qid: qid(7),
            iounit: 0,
        }
        .into(),
        Rlcreate {
            qid: qid(8),
            iounit: 4096,
        }
        .into(),
        Rread {
            data: Data(b"hello\n".to_vec()),
        }
        .into(),
        Rread { data: Data(vec![]) }.into(),
        Rwrite { count: 6 }.into(),
        Rclunk.into(),
        Rremove.into(),
        Rfsync.into(),
        Rgetattr {
            valid: GetattrMask::ALL,
            qid: qid(10),
            attr: Attr {
                mode: 0o100644,
                uid: 500,
                gid: 501,
                nlink: 1,
                rdev: 2,
                size: 3,
                blksize: 4096,
                blocks: 8,
                atime: ts(10),
                mtime: ts(20),
                ctime: ts(30),
                btime: ts(40),
                gen: 5,
                data_version: 6,
            },
        }
        .into(),
        Rsetattr.into(),
        Rstatfs {
            fs_type: 0x0102_1997,
            bsize: 4096,
            blocks: 1,
            bfree: 2,
            bavail: 3,
            files: 4,
            ffree: 5,
            fsid: 6,
            namelen: 255,
        }
        .into(),
        Rxattrwalk { size: 12 }.into(),
        Rxattrcreate.into(),
        Rlock {
            status: LockStatus::SUCCESS,
        }
        .into(),
        Rgetlock {
            lock_type: LockType::UNLCK,
            start: 10,
            length: 20,
            proc_id: 4242,
            client_id: "node07".into(),
        }
        .into(),
    ]
}

/// Every sample, encoded as a frame with tag `i`.
pub fn encoded_samples() -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    for (i, m) in requests().iter().enumerate() {
        let mut buf = Vec::new();
        encode_frame(i as u16, m, MSIZE, &mut buf).unwrap();
        frames.push(buf);
    }
    for (i, m) in replies().iter().enumerate() {
        let mut buf = Vec::new();
        encode_frame(i as u16, m, MSIZE, &mut buf).unwrap();
        frames.push(buf);
    }
    frames
}
