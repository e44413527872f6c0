//! Who owns the other end of a loopback tcp connection: the kernel's answer through
//! `sock_diag` (`NETLINK_SOCK_DIAG`, `inet_diag`), as `ss -e` shows it.
//!
//! A unix socket carries its peer's credentials (`SO_PEERCRED`); tcp does not. But on
//! loopback both ends live in this host's kernel, which records the uid that created
//! each socket. One exact-match request for the connecting socket — its local address
//! and port are our peer's, its remote ones ours — returns that uid.
//!
//! The messages (`linux/netlink.h`, `linux/inet_diag.h`; integers in host order,
//! ports and addresses in network order):
//!
//! | offset | request (72 bytes) | reply |
//! |---|---|---|
//! | 0 | `nlmsghdr`: length, type `SOCK_DIAG_BY_FAMILY`, flags `NLM_F_REQUEST`, seq, pid | `nlmsghdr` (type `NLMSG_ERROR` on failure, errno after it) |
//! | 16 | family, protocol (tcp), extensions, pad, states (all) | `inet_diag_msg`: family, state, timer, retrans |
//! | 24 | `inet_diag_sockid`: sport, dport, src\[16\], dst\[16\], interface, cookie (none) | sockid, expires, rqueue, wqueue |
//! | 80 | — | `idiag_uid` |

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use rustix::net::{netlink, AddressFamily, RecvFlags, SendFlags, SocketType};

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 1;
const NLMSG_ERROR: u16 = 2;
const IPPROTO_TCP: u8 = 6;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
const REQUEST_LEN: usize = 72;
const UID_AT: usize = 80;

/// How long the kernel may take to answer (it answers at once; this only bounds a
/// broken netlink).
const ANSWER_WITHIN: Duration = Duration::from_secs(1);

/// The request for the socket whose local end is `local` and remote end `remote`.
fn request(local: SocketAddr, remote: SocketAddr) -> Option<[u8; REQUEST_LEN]> {
    let family = match (local.ip(), remote.ip()) {
        (IpAddr::V4(_), IpAddr::V4(_)) => AF_INET,
        (IpAddr::V6(_), IpAddr::V6(_)) => AF_INET6,
        _ => return None,
    };
    let mut m = [0u8; REQUEST_LEN];
    m[0..4].copy_from_slice(&(REQUEST_LEN as u32).to_ne_bytes());
    m[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    m[6..8].copy_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    m[8..12].copy_from_slice(&1u32.to_ne_bytes());
    m[16] = family;
    m[17] = IPPROTO_TCP;
    m[20..24].copy_from_slice(&u32::MAX.to_ne_bytes());
    m[24..26].copy_from_slice(&local.port().to_be_bytes());
    m[26..28].copy_from_slice(&remote.port().to_be_bytes());
    let put = |m: &mut [u8], at: usize, ip: IpAddr| match ip {
        IpAddr::V4(v4) => m[at..at + 4].copy_from_slice(&v4.octets()),
        IpAddr::V6(v6) => m[at..at + 16].copy_from_slice(&v6.octets()),
    };
    put(&mut m, 28, local.ip());
    put(&mut m, 44, remote.ip());
    // Interface 0 (any), cookie INET_DIAG_NOCOOKIE.
    m[64..72].copy_from_slice(&[0xff; 8]);
    Some(m)
}

/// The uid owning the tcp socket whose local end is `local` and remote end `remote`,
/// if this host's kernel has it (a loopback connection's other end); `None` otherwise
/// or on any failure.
pub fn tcp_socket_owner(local: SocketAddr, remote: SocketAddr) -> Option<u32> {
    let req = request(local, remote)?;
    let sock = rustix::net::socket(
        AddressFamily::NETLINK,
        SocketType::DGRAM,
        Some(netlink::SOCK_DIAG),
    )
    .ok()?;
    rustix::net::sockopt::set_socket_timeout(
        &sock,
        rustix::net::sockopt::Timeout::Recv,
        Some(ANSWER_WITHIN),
    )
    .ok()?;
    rustix::net::send(&sock, &req, SendFlags::empty()).ok()?;
    let mut reply = [0u8; 512];
    let (n, _) = rustix::net::recv(&sock, &mut reply, RecvFlags::empty()).ok()?;
    parse_reply(&reply[..n])
}

/// The uid in a `sock_diag` reply, or `None` for an error or a short message.
fn parse_reply(reply: &[u8]) -> Option<u32> {
    let ty = u16::from_ne_bytes(reply.get(4..6)?.try_into().ok()?);
    if ty == NLMSG_ERROR || ty != SOCK_DIAG_BY_FAMILY {
        return None;
    }
    Some(u32::from_ne_bytes(
        reply.get(UID_AT..UID_AT + 4)?.try_into().ok()?,
    ))
}

/// The uid owning the other end of `stream`, when that end is on this host's loopback.
pub fn loopback_peer_uid(stream: &std::net::TcpStream) -> Option<u32> {
    let peer = stream.peer_addr().ok()?;
    if !peer.ip().is_loopback() && !is_mapped_loopback(peer.ip()) {
        return None;
    }
    let local = stream.local_addr().ok()?;
    // The socket we look for has our peer's address as its local end.
    tcp_socket_owner(peer, local)
}

/// `::ffff:127.x.y.z`: IPv4 loopback on a dual-stack socket.
fn is_mapped_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
        IpAddr::V4(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn the_kernel_names_the_owner_of_a_loopback_connection() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server_side, _) = listener.accept().unwrap();
        let me = rustix::process::geteuid().as_raw();
        assert_eq!(loopback_peer_uid(&server_side), Some(me));
        // A socket that does not exist is not found.
        let gone = client.local_addr().unwrap();
        drop(client);
        let nobody = SocketAddr::new(gone.ip(), 1);
        assert_eq!(
            tcp_socket_owner(nobody, listener.local_addr().unwrap()),
            None
        );
    }

    #[test]
    fn replies_that_are_errors_or_short_give_nothing() {
        let mut err = [0u8; 96];
        err[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        assert_eq!(parse_reply(&err), None);
        let mut ok = [0u8; 96];
        ok[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        ok[80..84].copy_from_slice(&1234u32.to_ne_bytes());
        assert_eq!(parse_reply(&ok), Some(1234));
        assert_eq!(parse_reply(&ok[..82]), None);
    }
}
