//! Unix-socket streams as a [`Transport`].

use std::io::{self, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::transport::{recv_polling, unix_peer, wait_fd_readable, write_all_parts, Transport};

impl Transport for UnixStream {
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        recv_polling(self, buf)
    }

    fn can_wait_readable(&self) -> bool {
        true
    }

    fn wait_readable(&self, timeout: Option<Duration>) -> io::Result<bool> {
        wait_fd_readable(self, timeout)
    }

    fn send(&self, bytes: &[u8]) -> io::Result<()> {
        (&*self).write_all(bytes)
    }

    fn send_parts(&self, parts: &[&[u8]]) -> io::Result<()> {
        write_all_parts(self, parts)
    }

    fn close(&self) {
        let _ = self.shutdown(Shutdown::Both);
    }

    fn peer(&self) -> String {
        match unix_peer(self) {
            Some((pid, uid)) => format!("unix pid {pid} uid {uid}"),
            None => String::from("unix"),
        }
    }

    fn peer_uid(&self) -> Option<u32> {
        unix_peer(self).map(|(_, uid)| uid)
    }
}
