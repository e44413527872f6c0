//! TCP streams as a [`Transport`].

use std::io::{self, Write};
use std::net::{Shutdown, TcpStream};

use crate::sockdiag::loopback_peer_uid;
use crate::transport::{recv_polling, Transport};

impl Transport for TcpStream {
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        recv_polling(self, buf)
    }

    fn send(&self, bytes: &[u8]) -> io::Result<()> {
        (&*self).write_all(bytes)
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
