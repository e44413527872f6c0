// Command p9client drives a 9P2000.L server with a third-party client, the Go package
// github.com/hugelgupf/p9 (pinned in go.mod / go.sum), and checks every answer.
//
// The export it is pointed at (the attach root, or -aname inside the server's tree)
// must hold (crates/cli/tests/conform_go.rs prepares it):
//
//	hello.txt      "hello, world\n"
//	sub/leaf.txt   "leaf\n"
//	to-remove.txt  any content (this program removes it)
//
// It prints one "P9CLIENT ok NAME" line per check, leaves go-wrote.txt ("written by
// go\n") and gdir/ (renamed.txt, a symlink and 150 files) behind for the caller to
// check on the host, and ends with "P9CLIENT done N". The first failed check prints
// "P9CLIENT FAIL NAME: WHY" and exits 1; a usage error exits 2.
//
// Usage: p9client -unix PATH [-msize N] [-aname NAME]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"sort"
	"strings"
	"syscall"

	"github.com/hugelgupf/p9/p9"
)

var checks int

func ok(name string) {
	checks++
	fmt.Printf("P9CLIENT ok %s\n", name)
}

func fail(name string, format string, args ...interface{}) {
	fmt.Printf("P9CLIENT FAIL %s: %s\n", name, fmt.Sprintf(format, args...))
	os.Exit(1)
}

// must fails check name when err is not nil.
func must(name string, err error, what string) {
	if err != nil {
		fail(name, "%s: %v", what, err)
	}
}

// errnoOf is the Linux errno inside an error of the client (an internal uintptr type).
func errnoOf(err error) (syscall.Errno, bool) {
	if err == nil {
		return 0, false
	}
	v := reflect.ValueOf(err)
	if v.Kind() == reflect.Uintptr {
		return syscall.Errno(v.Uint()), true
	}
	return 0, false
}

// wantErrno fails check name unless err carries errno want.
func wantErrno(name string, err error, want syscall.Errno) {
	got, isErrno := errnoOf(err)
	if !isErrno || got != want {
		fail(name, "want errno %d (%v), got %v", int(want), want, err)
	}
}

// walk walks from dir to path (slash-separated, relative); a walk that stops part way
// is an error.
func walk(dir p9.File, path string) (p9.File, error) {
	var names []string
	if path != "" {
		names = strings.Split(path, "/")
	}
	qids, f, err := dir.Walk(names)
	if err == nil && len(qids) != len(names) {
		return nil, fmt.Errorf("walk %s stopped after %d of %d names", path, len(qids), len(names))
	}
	return f, err
}

// readAll reads a whole file through a fresh fid.
func readAll(root p9.File, path string) ([]byte, error) {
	f, err := walk(root, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, _, err := f.Open(p9.ReadOnly); err != nil {
		return nil, err
	}
	var out []byte
	buf := make([]byte, 4096)
	for off := int64(0); ; {
		n, err := f.ReadAt(buf, off)
		out = append(out, buf[:n]...)
		off += int64(n)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// listAll reads a directory page by page (following each entry's offset).
func listAll(root p9.File, path string) ([]string, error) {
	d, err := walk(root, path)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if _, _, err := d.Open(p9.ReadOnly); err != nil {
		return nil, err
	}
	var names []string
	off := uint64(0)
	for pages := 0; pages < 10000; pages++ {
		ents, err := d.Readdir(off, 2048)
		if err == io.EOF || (err == nil && len(ents) == 0) {
			sort.Strings(names)
			return names, nil
		}
		if err != nil {
			return names, err
		}
		for _, e := range ents {
			names = append(names, e.Name)
			off = e.Offset
		}
	}
	return names, fmt.Errorf("readdir of %s did not end after 10000 pages", path)
}

func main() {
	sock := flag.String("unix", "", "unix socket of the 9P server")
	msize := flag.Uint("msize", 65536, "msize to ask for")
	aname := flag.String("aname", "", "attach name: where the export is in the server's tree")
	flag.Parse()
	if *sock == "" {
		fmt.Fprintln(os.Stderr, "usage: p9client -unix PATH [-msize N] [-aname NAME]")
		os.Exit(2)
	}

	conn, err := net.Dial("unix", *sock)
	must("connect", err, "dial "+*sock)
	client, err := p9.NewClient(conn, p9.WithMessageSize(uint32(*msize)))
	// The client asks for "9P2000.L.Google.7"; a 9P2000.L server answers "9P2000.L",
	// which this client reads as its version 0.
	must("version", err, "Tversion")
	if v := client.Version(); v != 0 {
		fail("version", "negotiated 9P2000.L.Google.%d, want plain 9P2000.L (0)", v)
	}
	ok("version")
	defer client.Close()

	root, err := client.Attach(*aname)
	must("attach", err, "Tattach")
	qid, _, attr, err := root.GetAttr(p9.AttrMaskAll)
	must("attach", err, "Tgetattr of the root")
	if qid.Type&p9.TypeDir == 0 || !attr.Mode.IsDir() {
		fail("attach", "root is not a directory: qid %v mode %o", qid, attr.Mode)
	}
	ok("attach")

	qids, hello, err := root.Walk([]string{"hello.txt"})
	must("walk", err, "walk hello.txt")
	if len(qids) != 1 {
		fail("walk", "walk of one name gave %d qids", len(qids))
	}
	_, _, attr, err = hello.GetAttr(p9.AttrMaskAll)
	must("getattr", err, "Tgetattr hello.txt")
	if attr.Size != 13 || !attr.Mode.IsRegular() {
		fail("getattr", "hello.txt: size %d mode %o, want 13, regular", attr.Size, attr.Mode)
	}
	ok("walk")
	ok("getattr")

	_, _, err = hello.Open(p9.ReadOnly)
	must("read", err, "Tlopen hello.txt")
	buf := make([]byte, 100)
	n, err := hello.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		fail("read", "Tread: %v", err)
	}
	if string(buf[:n]) != "hello, world\n" {
		fail("read", "hello.txt reads %q", buf[:n])
	}
	n, err = hello.ReadAt(buf, 7)
	if (err != nil && err != io.EOF) || string(buf[:n]) != "world\n" {
		fail("read", "read at offset 7: %q, %v", buf[:n], err)
	}
	must("read", hello.Close(), "Tclunk")
	leaf, err := readAll(root, "sub/leaf.txt")
	must("read", err, "reading sub/leaf.txt")
	if string(leaf) != "leaf\n" {
		fail("read", "sub/leaf.txt reads %q", leaf)
	}
	ok("read")

	_, _, err = root.Walk([]string{"missing"})
	wantErrno("walk_missing", err, syscall.ENOENT)
	// A walk that stops part way is answered with the qids walked so far (walk(5)),
	// and the new fid is not created.
	qids, _, err = root.Walk([]string{"sub", "leaf.txt", "deeper"})
	if err != nil || len(qids) != 2 {
		fail("walk_missing", "walk sub/leaf.txt/deeper: %d qids, %v; want 2 qids", len(qids), err)
	}
	ok("walk_missing")

	long := make([]string, 17)
	for i := range long {
		long[i] = "sub"
	}
	_, _, err = root.Walk(long)
	wantErrno("walk_17_names", err, syscall.E2BIG)
	ok("walk_17_names")

	// Create through a clone: Create turns the fid it is called on into the new file.
	dir, err := walk(root, "")
	must("create_write", err, "cloning the root fid")
	f, _, _, err := dir.Create("go-wrote.txt", p9.ReadWrite, 0o640, p9.NoUID, p9.NoGID)
	must("create_write", err, "Tlcreate go-wrote.txt")
	data := []byte("written by go\n")
	n, err = f.WriteAt(data, 0)
	if err != nil || n != len(data) {
		fail("create_write", "Twrite: %d, %v", n, err)
	}
	must("create_write", f.Close(), "Tclunk")
	got, err := readAll(root, "go-wrote.txt")
	must("create_write", err, "reading go-wrote.txt back")
	if !bytes.Equal(got, data) {
		fail("create_write", "go-wrote.txt reads %q", got)
	}
	ok("create_write")

	_, err = root.Mkdir("gdir", 0o755, p9.NoUID, p9.NoGID)
	must("mkdir", err, "Tmkdir gdir")
	_, err = root.Mkdir("gdir", 0o755, p9.NoUID, p9.NoGID)
	wantErrno("mkdir", err, syscall.EEXIST)
	ok("mkdir")

	// 300000 bytes: several messages at any msize up to 256 KiB, and not a multiple of
	// any of them.
	big := make([]byte, 300000)
	for i := range big {
		big[i] = byte(i*7 + i/251)
	}
	gdir, err := walk(root, "gdir")
	must("write_big", err, "walk gdir")
	bf, _, _, err := gdir.Create("big.bin", p9.WriteOnly, 0o600, p9.NoUID, p9.NoGID)
	must("write_big", err, "Tlcreate gdir/big.bin")
	n, err = bf.WriteAt(big, 0)
	if err != nil || n != len(big) {
		fail("write_big", "WriteAt of %d bytes: %d, %v", len(big), n, err)
	}
	must("write_big", bf.Close(), "Tclunk")
	got, err = readAll(root, "gdir/big.bin")
	must("write_big", err, "reading gdir/big.bin back")
	if !bytes.Equal(got, big) {
		fail("write_big", "gdir/big.bin reads back %d bytes that differ", len(got))
	}
	ok("write_big")

	bigf, err := walk(root, "gdir/big.bin")
	must("setattr", err, "walk gdir/big.bin")
	err = bigf.SetAttr(p9.SetAttrMask{Size: true, Permissions: true},
		p9.SetAttr{Size: 1000, Permissions: 0o604})
	must("setattr", err, "Tsetattr size 1000, mode 0604")
	_, _, attr, err = bigf.GetAttr(p9.AttrMaskAll)
	must("setattr", err, "Tgetattr")
	if attr.Size != 1000 || attr.Mode.Permissions() != 0o604 {
		fail("setattr", "after Tsetattr: size %d mode %o", attr.Size, attr.Mode.Permissions())
	}
	must("setattr", bigf.Close(), "Tclunk")
	ok("setattr")

	// Create turned the gdir fid into big.bin (closed above): walk to gdir again.
	gdir, err = walk(root, "gdir")
	must("readdir", err, "walk gdir")
	for i := 0; i < 150; i++ {
		nf, _, _, err := gdir.Create(fmt.Sprintf("entry-with-a-longish-name-%03d", i),
			p9.WriteOnly, 0o644, p9.NoUID, p9.NoGID)
		must("readdir", err, "Tlcreate")
		must("readdir", nf.Close(), "Tclunk")
		// Create moved gdir's fid to the new file: walk to the directory again.
		gdir, err = walk(root, "gdir")
		must("readdir", err, "walk gdir")
	}
	names, err := listAll(root, "gdir")
	must("readdir", err, "Treaddir gdir")
	// ".", "..", big.bin and 150 entries.
	if len(names) != 153 || names[0] != "." || names[1] != ".." {
		fail("readdir", "gdir lists %d names (%v ...), want 153 with . and ..", len(names), names[:3])
	}
	rootNames, err := listAll(root, "")
	must("readdir", err, "Treaddir /")
	for _, want := range []string{"hello.txt", "sub", "gdir", "go-wrote.txt", "to-remove.txt"} {
		if sort.SearchStrings(rootNames, want) == len(rootNames) ||
			rootNames[sort.SearchStrings(rootNames, want)] != want {
			fail("readdir", "/ lacks %s: %v", want, rootNames)
		}
	}
	ok("readdir")

	must("rename", root.RenameAt("go-wrote.txt", gdir, "renamed.txt"), "Trenameat")
	got, err = readAll(root, "gdir/renamed.txt")
	if err != nil || !bytes.Equal(got, data) {
		fail("rename", "gdir/renamed.txt reads %q, %v", got, err)
	}
	_, _, err = root.Walk([]string{"go-wrote.txt"})
	wantErrno("rename", err, syscall.ENOENT)
	// Put it back for the host-side check.
	must("rename", gdir.RenameAt("renamed.txt", root, "go-wrote.txt"), "Trenameat back")
	ok("rename")

	_, err = gdir.Symlink("../hello.txt", "link", p9.NoUID, p9.NoGID)
	must("symlink", err, "Tsymlink")
	lf, err := walk(root, "gdir/link")
	must("symlink", err, "walk gdir/link")
	target, err := lf.Readlink()
	must("symlink", err, "Treadlink")
	if target != "../hello.txt" {
		fail("symlink", "readlink gives %q", target)
	}
	qid, _, _, err = lf.GetAttr(p9.AttrMaskAll)
	must("symlink", err, "Tgetattr of the link")
	if qid.Type&p9.TypeSymlink == 0 {
		fail("symlink", "the link's qid type is %v", qid.Type)
	}
	must("symlink", lf.Close(), "Tclunk")
	ok("symlink")

	must("remove", root.UnlinkAt("to-remove.txt", 0), "Tunlinkat to-remove.txt")
	_, _, err = root.Walk([]string{"to-remove.txt"})
	wantErrno("remove", err, syscall.ENOENT)
	wantErrno("remove", root.UnlinkAt("to-remove.txt", 0), syscall.ENOENT)
	err = root.UnlinkAt("sub", 0)
	if err == nil {
		fail("remove", "unlinking a non-empty directory without AT_REMOVEDIR succeeded")
	}
	ok("remove")

	sd, err := walk(root, "sub")
	must("open_dir_for_write", err, "walk sub")
	_, _, err = sd.Open(p9.WriteOnly)
	wantErrno("open_dir_for_write", err, syscall.EISDIR)
	must("open_dir_for_write", sd.Close(), "Tclunk")
	ok("open_dir_for_write")

	st, err := root.StatFS()
	must("statfs", err, "Tstatfs")
	if st.BlockSize == 0 || st.NameLength == 0 {
		fail("statfs", "statfs: %+v", st)
	}
	ok("statfs")

	fmt.Printf("P9CLIENT done %d\n", checks)
}
