//! Who owns the other end of a loopback tcp connection: the kernel's answer through
//! `sock_diag` (`NETLINK_SOCK_DIAG`, `inet_diag`), as `ss -e` shows it.
//!
//! A unix socket carries its peer's credentials (`SO_PEERCRED`); tcp does not. But on
//! loopback both ends live in this host's kernel, which records the uid that created
//! each socket. One exact-match request for the connecting socket — its local address
//! and port are our peer's, its remote ones ours — returns that uid.
//!
//! **Only a live, owned socket names anyone.** A client may close its end before we ask
//! (or while the server is stopped): its socket then lingers in `FIN-WAIT-2` or
//! `TIME-WAIT`, detached from any file (inode 0), and the kernel reports such sockets as
//! owned by uid 0. So the request asks for `ESTABLISHED` sockets only, and a reply is
//! believed only if it says `ESTABLISHED`, names the ports we asked for, and carries a
//! non-zero inode; anything else is "nobody", which the attach check refuses.
//!
//! The messages (`linux/netlink.h`, `linux/inet_diag.h`; integers in host order,
//! ports and addresses in network order):
//!
//! | offset | request (72 bytes) | reply |
//! |---|---|---|
//! | 0 | `nlmsghdr`: length, type `SOCK_DIAG_BY_FAMILY`, flags `NLM_F_REQUEST`, seq, pid | `nlmsghdr` (type `NLMSG_ERROR` on failure, errno after it) |
//! | 16 | family, protocol (tcp), extensions, pad, states (`ESTABLISHED` only) | `inet_diag_msg`: family, state (17), timer, retrans |
//! | 24 | `inet_diag_sockid`: sport, dport, src\[16\], dst\[16\], interface, cookie (none) | sockid (sport at 20, dport at 22), expires, rqueue, wqueue |
//! | 80 | — | `idiag_uid`, then `idiag_inode` (84) |

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use rustix::net::{netlink, AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 1;
const NLMSG_ERROR: u16 = 2;
const IPPROTO_TCP: u8 = 6;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
const REQUEST_LEN: usize = 72;
/// `TCP_ESTABLISHED` in `linux/tcp_states.h`.
const TCP_ESTABLISHED: u8 = 1;
const STATE_AT: usize = 17;
const SPORT_AT: usize = 20;
const DPORT_AT: usize = 22;
const UID_AT: usize = 80;
const INODE_AT: usize = 84;

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
    m[20..24].copy_from_slice(&(1u32 << TCP_ESTABLISHED).to_ne_bytes());
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
/// if this host's kernel has it established and held by a process (a loopback
/// connection's other end, still open); `None` otherwise or on any failure.
pub fn tcp_socket_owner(local: SocketAddr, remote: SocketAddr) -> Option<u32> {
    ask(local, remote).or_else(|| {
        // A dual-stack listener sees an IPv4 client as `::ffff:a.b.c.d`; the client's
        // own socket may be AF_INET.
        let v4 = |a: SocketAddr| match a.ip() {
            IpAddr::V6(v6) => v6
                .to_ipv4_mapped()
                .map(|ip| SocketAddr::new(IpAddr::V4(ip), a.port())),
            IpAddr::V4(_) => None,
        };
        ask(v4(local)?, v4(remote)?)
    })
}

/// One exact-match `sock_diag` request.
fn ask(local: SocketAddr, remote: SocketAddr) -> Option<u32> {
    let req = request(local, remote)?;
    let sock = rustix::net::socket_with(
        AddressFamily::NETLINK,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
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
    parse_reply(&reply[..n.min(reply.len())], local.port(), remote.port())
}

/// The uid in a `sock_diag` reply for the socket with ports `sport` → `dport`, or
/// `None` for an error, a short message, another socket, one not established, or one
/// no process holds (inode 0: its uid is not its owner's).
fn parse_reply(reply: &[u8], sport: u16, dport: u16) -> Option<u32> {
    let u16_at = |at: usize| -> Option<[u8; 2]> { reply.get(at..at + 2)?.try_into().ok() };
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(reply.get(at..at + 4)?.try_into().ok()?))
    };
    let ty = u16::from_ne_bytes(u16_at(4)?);
    if ty == NLMSG_ERROR || ty != SOCK_DIAG_BY_FAMILY {
        return None;
    }
    let state = *reply.get(STATE_AT)?;
    let ports = (
        u16::from_be_bytes(u16_at(SPORT_AT)?),
        u16::from_be_bytes(u16_at(DPORT_AT)?),
    );
    let uid = u32_at(UID_AT)?;
    let inode = u32_at(INODE_AT)?;
    (state == TCP_ESTABLISHED && ports == (sport, dport) && inode != 0).then_some(uid)
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
    fn a_client_that_closed_its_end_names_nobody() {
        // The socket of a client that closed lingers in FIN-WAIT-2, held by no file;
        // the kernel would call it uid 0's.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server_side, _) = listener.accept().unwrap();
        drop(client);
        assert_eq!(loopback_peer_uid(&server_side), None);
    }

    #[test]
    fn a_dual_stack_listener_names_an_ipv4_client() {
        let Ok(listener) = TcpListener::bind("[::]:0") else {
            return; // no IPv6 on this host: nothing dual-stack to check
        };
        let port = listener.local_addr().unwrap().port();
        let _client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (server_side, peer) = listener.accept().unwrap();
        assert!(is_mapped_loopback(peer.ip()), "{peer}");
        let me = rustix::process::geteuid().as_raw();
        assert_eq!(loopback_peer_uid(&server_side), Some(me));
    }

    fn reply(state: u8, ports: (u16, u16), uid: u32, inode: u32) -> [u8; 96] {
        let mut m = [0u8; 96];
        m[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        m[STATE_AT] = state;
        m[SPORT_AT..SPORT_AT + 2].copy_from_slice(&ports.0.to_be_bytes());
        m[DPORT_AT..DPORT_AT + 2].copy_from_slice(&ports.1.to_be_bytes());
        m[UID_AT..UID_AT + 4].copy_from_slice(&uid.to_ne_bytes());
        m[INODE_AT..INODE_AT + 4].copy_from_slice(&inode.to_ne_bytes());
        m
    }

    #[test]
    fn replies_that_are_errors_short_or_not_a_live_socket_give_nothing() {
        let mut err = [0u8; 96];
        err[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        assert_eq!(parse_reply(&err, 1, 2), None);
        let ok = reply(TCP_ESTABLISHED, (1, 2), 1234, 77);
        assert_eq!(parse_reply(&ok, 1, 2), Some(1234));
        assert_eq!(parse_reply(&ok[..86], 1, 2), None, "short");
        assert_eq!(parse_reply(&ok, 1, 3), None, "another socket");
        // FIN-WAIT-2 (5) and TIME-WAIT (6) sockets, and inode 0, name nobody.
        assert_eq!(parse_reply(&reply(5, (1, 2), 1234, 77), 1, 2), None);
        assert_eq!(parse_reply(&reply(6, (1, 2), 0, 0), 1, 2), None);
        assert_eq!(
            parse_reply(&reply(TCP_ESTABLISHED, (1, 2), 0, 0), 1, 2),
            None
        );
    }
}
