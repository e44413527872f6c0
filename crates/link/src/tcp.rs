//! TCP streams as a [`Transport`].

use std::io::{self, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use crate::sockdiag::loopback_peer_uid;
use crate::transport::{recv_polling, wait_fd_readable, write_all_parts, Transport};

impl Transport for TcpStream {
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
        match self.peer_addr() {
            Ok(addr) => format!("tcp {addr}"),
            Err(_) => String::from("tcp ?"),
        }
    }

    fn peer_uid(&self) -> Option<u32> {
        loopback_peer_uid(self)
    }
}
