//! Golden byte vectors written by hand from the 9P2000.L layouts (diod `protocol.md`,
//! Linux `net/9p` format strings), so a layout mistake is caught, not just
//! self-consistency. Every field has a distinct value where possible.

use nf_ninep::*;

const MSIZE: u32 = 8192;

/// Encodes `msg` and compares with `expected`, then decodes `expected` back.
fn check<M>(tag: u16, msg: M, expected: &[u8])
where
    M: Message + std::fmt::Debug + PartialEq,
{
    let mut buf = Vec::new();
    encode_frame(tag, &msg, MSIZE, &mut buf).unwrap();
    assert_eq!(buf, expected, "encoding of {msg:?}");
    let (frame, used) = FrameDecoder::new(MSIZE)
        .decode::<M>(expected)
        .unwrap()
        .unwrap();
    assert_eq!(used, expected.len());
    assert_eq!(frame, Frame { tag, body: msg });
}

#[test]
fn tversion() {
    #[rustfmt::skip]
    let bytes = [
        21, 0, 0, 0,                                // size[4] = 4+1+2+4+2+8
        100,                                        // type: Tversion
        0xff, 0xff,                                 // tag[2] = NOTAG
        0x00, 0x20, 0, 0,                           // msize[4] = 8192
        8, 0, b'9', b'P', b'2', b'0', b'0', b'0', b'.', b'L', // version[s]
    ];
    let msg = Tversion {
        msize: 8192,
        version: "9P2000.L".into(),
    };
    check(NOTAG, Tmessage::from(msg), &bytes);
}

#[test]
fn tattach() {
    #[rustfmt::skip]
    let bytes = [
        29, 0, 0, 0,                                // size[4] = 7+4+4+2+8+4
        104,                                        // type: Tattach
        1, 0,                                       // tag[2]
        0, 0, 0, 0,                                 // fid[4]
        0xff, 0xff, 0xff, 0xff,                     // afid[4] = NOFID
        0, 0,                                       // uname[s] = ""
        6, 0, b'/', b't', b'm', b'p', b'/', b'9',   // aname[s]
        0xf4, 0x01, 0, 0,                           // n_uname[4] = 500
    ];
    let msg = Tattach {
        fid: 0,
        afid: NOFID,
        uname: String::new(),
        aname: "/tmp/9".into(),
        n_uname: 500,
    };
    check(1, Tmessage::from(msg), &bytes);
}

#[test]
fn rwalk() {
    #[rustfmt::skip]
    let bytes = [
        35, 0, 0, 0,                                // size[4] = 7+2+13+13
        111,                                        // type: Rwalk
        1, 0,                                       // tag[2]
        2, 0,                                       // nwqid[2]
        0x80,                                       // wqid[0].type = DIR
        0, 0, 0, 0,                                 //   .version
        0xac, 0x1f, 0x2c, 0, 0, 0, 0, 0,            //   .path = 0x2c1fac
        0x00,                                       // wqid[1].type = FILE
        7, 0, 0, 0,                                 //   .version = 7
        8, 7, 6, 5, 4, 3, 2, 1,                     //   .path = 0x0102030405060708
    ];
    let msg = Rwalk {
        wqids: vec![
            Qid {
                ty: QidType::DIR,
                version: 0,
                path: 0x2c1fac,
            },
            Qid {
                ty: QidType::FILE,
                version: 7,
                path: 0x0102_0304_0506_0708,
            },
        ],
    };
    check(1, Rmessage::from(msg), &bytes);
}

#[test]
fn rlerror() {
    #[rustfmt::skip]
    let bytes = [
        11, 0, 0, 0,                                // size[4]
        7,                                          // type: Rlerror
        1, 0,                                       // tag[2]
        2, 0, 0, 0,                                 // ecode[4] = ENOENT
    ];
    check(1, Rmessage::from(Rlerror::new(errno::ENOENT)), &bytes);
}

#[test]
fn rgetattr() {
    #[rustfmt::skip]
    let bytes = [
        160, 0, 0, 0,                               // size[4] = 7 + 153
        25,                                         // type: Rgetattr
        0x02, 0x01,                                 // tag[2] = 0x0102
        0xff, 0x3f, 0, 0, 0, 0, 0, 0,               // valid[8] = ALL
        0x00,                                       // qid.type = FILE
        0x44, 0x33, 0x22, 0x11,                     // qid.version
        0xd1, 0x1b, 0x2c, 0, 0, 0, 0, 0,            // qid.path = 0x2c1bd1
        0xa4, 0x81, 0, 0,                           // mode[4] = 0o100644
        0xf4, 0x01, 0, 0,                           // uid[4] = 500
        0xf5, 0x01, 0, 0,                           // gid[4] = 501
        0x21, 0, 0, 0, 0, 0, 0, 0,                  // nlink[8]
        0x22, 0, 0, 0, 0, 0, 0, 0,                  // rdev[8]
        0x23, 0, 0, 0, 0, 0, 0, 0,                  // size[8]
        0x00, 0x10, 0, 0, 0, 0, 0, 0,               // blksize[8] = 4096
        0x25, 0, 0, 0, 0, 0, 0, 0,                  // blocks[8]
        0x31, 0, 0, 0, 0, 0, 0, 0,                  // atime_sec[8]
        0x32, 0, 0, 0, 0, 0, 0, 0,                  // atime_nsec[8]
        0x33, 0, 0, 0, 0, 0, 0, 0,                  // mtime_sec[8]
        0x34, 0, 0, 0, 0, 0, 0, 0,                  // mtime_nsec[8]
        0x35, 0, 0, 0, 0, 0, 0, 0,                  // ctime_sec[8]
        0x36, 0, 0, 0, 0, 0, 0, 0,                  // ctime_nsec[8]
        0x37, 0, 0, 0, 0, 0, 0, 0,                  // btime_sec[8]
        0x38, 0, 0, 0, 0, 0, 0, 0,                  // btime_nsec[8]
        0x39, 0, 0, 0, 0, 0, 0, 0,                  // gen[8]
        0x3a, 0, 0, 0, 0, 0, 0, 0,                  // data_version[8]
    ];
    let t = |sec, nsec| Timespec { sec, nsec };
    let msg = Rgetattr {
        valid: GetattrMask::ALL,
        qid: Qid {
            ty: QidType::FILE,
            version: 0x1122_3344,
            path: 0x2c1bd1,
        },
        attr: Attr {
            mode: 0o100644,
            uid: 500,
            gid: 501,
            nlink: 0x21,
            rdev: 0x22,
            size: 0x23,
            blksize: 4096,
            blocks: 0x25,
            atime: t(0x31, 0x32),
            mtime: t(0x33, 0x34),
            ctime: t(0x35, 0x36),
            btime: t(0x37, 0x38),
            gen: 0x39,
            data_version: 0x3a,
        },
    };
    check(0x0102, Rmessage::from(msg), &bytes);
}

#[test]
fn rreaddir_with_one_entry() {
    #[rustfmt::skip]
    let bytes = [
        36, 0, 0, 0,                                // size[4] = 7+4+25
        41,                                         // type: Rreaddir
        1, 0,                                       // tag[2]
        25, 0, 0, 0,                                // count[4]
        0x80, 0, 0, 0, 0,                           // qid.type, qid.version
        0xac, 0x1f, 0x2c, 0, 0, 0, 0, 0,            // qid.path
        1, 0, 0, 0, 0, 0, 0, 0,                     // offset[8]
        4,                                          // type[1] = DT_DIR
        1, 0, b'.',                                 // name[s]
    ];
    let entry = Dirent {
        qid: Qid {
            ty: QidType::DIR,
            version: 0,
            path: 0x2c1fac,
        },
        offset: 1,
        dtype: Dirent::DT_DIR,
        name: ".".into(),
    };
    let (data, n) = encode_dirents(std::slice::from_ref(&entry), 100).unwrap();
    assert_eq!(n, 1);
    check(1, Rmessage::from(Rreaddir { data }), &bytes);
    assert_eq!(decode_dirents(&bytes[11..]).unwrap(), [entry]);
}

#[test]
fn tlock() {
    #[rustfmt::skip]
    let bytes = [
        40, 0, 0, 0,                                // size[4] = 7+4+1+4+8+8+4+4
        52,                                         // type: Tlock
        1, 0,                                       // tag[2]
        2, 0, 0, 0,                                 // fid[4]
        1,                                          // type[1] = WRLCK
        1, 0, 0, 0,                                 // flags[4] = BLOCK
        3, 0, 0, 0, 0, 0, 0, 0,                     // start[8]
        4, 0, 0, 0, 0, 0, 0, 0,                     // length[8]
        0x92, 0x10, 0, 0,                           // proc_id[4] = 4242
        2, 0, b'n', b'1',                           // client_id[s]
    ];
    let msg = Tlock {
        fid: 2,
        lock_type: LockType::WRLCK,
        flags: LockFlags::BLOCK,
        start: 3,
        length: 4,
        proc_id: 4242,
        client_id: "n1".into(),
    };
    check(1, Tmessage::from(msg), &bytes);
}
