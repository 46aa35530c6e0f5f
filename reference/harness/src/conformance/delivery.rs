//! Read boundaries a driver's timing cannot blur.
//!
//! A case that writes its bytes in pieces ("a read ends inside a header") tests what it says
//! only if each of the driver's reads ends where a write ended. On a loaded machine a driver
//! that reads late finds several writes waiting and takes them in one read, and the case turns
//! into a coin flip. So after each write the server waits until the driver's socket has handed
//! every byte written so far to the driver: the kernel counts the bytes the client's socket has
//! received (`tcpi_bytes_received`) and those it holds unread (its receive queue). Both come
//! from the kernel's socket diagnostics (`NETLINK_SOCK_DIAG`, what `ss -ti` reads), since the
//! client's socket belongs to another process. A boundary that is not confirmed within a bound
//! is reported as such, and the case is NOT EXERCISED rather than judged on other reads.

use serde::Serialize;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// How long the server waits for the driver to read one write before it calls the boundary
/// unconfirmed: far above a driver's wake-up time even on a machine loaded twice over.
pub const BOUND: Duration = Duration::from_secs(5);

// Linux uapi constants (linux/netlink.h, linux/sock_diag.h, linux/inet_diag.h).
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const INET_DIAG_INFO: u16 = 2;
/// `tcpi_state` (and `inet_diag_msg` state) of an established connection (linux/tcp_states.h).
pub(super) const TCP_ESTABLISHED: u8 = 1;
/// Offset of `tcpi_bytes_received` in `struct tcp_info` (Linux 4.1 and later).
const BYTES_RECEIVED_AT: usize = 128;
const NLMSG_HDR_LEN: usize = 16;
/// `struct inet_diag_req_v2`: family, protocol, ext, pad, states, then the socket id.
const REQ_LEN: usize = 8 + SOCKID_LEN;
/// `struct inet_diag_sockid`: ports, two 16-byte addresses, interface, cookie.
const SOCKID_LEN: usize = 48;
/// `struct inet_diag_msg` up to its attributes.
const MSG_LEN: usize = 4 + SOCKID_LEN + 20;

/// What the kernel says of the client's socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sample {
    /// Open: bytes it has received in all, bytes of those not yet read by the driver.
    Open { received: u64, unread: u32 },
    /// Closed by the driver, or no longer established.
    Closed,
}

/// The end of one write, as far as the driver's reads go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Boundary {
    /// The driver read every byte written so far before anything more was written.
    Confirmed,
    /// The driver closed its socket: nothing more is delivered, nothing is left to confirm.
    Closed,
    /// Not within the bound: the driver's socket had `received` of `written` bytes and held
    /// `unread` of them.
    Unconfirmed {
        written: u64,
        received: u64,
        unread: u32,
    },
    /// The kernel could not be asked (no socket diagnostics here).
    Unobservable,
}

/// The driver's end of one connection, watched through the kernel's socket diagnostics.
pub struct ClientSocket {
    netlink: OwnedFd,
    request: Vec<u8>,
}

impl ClientSocket {
    /// Watches the peer of `stream` (the server's accepted socket), a socket on this machine.
    pub fn of(stream: &TcpStream) -> io::Result<ClientSocket> {
        let client = stream.peer_addr()?;
        let server = stream.local_addr()?;
        // SAFETY: socket(2) with constant arguments; the descriptor is owned at once.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                libc::NETLINK_SOCK_DIAG,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        let netlink = unsafe { OwnedFd::from_raw_fd(fd) };
        let probe = ClientSocket {
            netlink,
            request: request(client, server),
        };
        probe.sample()?;
        Ok(probe)
    }

    /// One look at the client's socket.
    pub fn sample(&self) -> io::Result<Sample> {
        let fd = self.netlink.as_raw_fd();
        // SAFETY: the buffer is valid for its length; netlink's kernel address is the default.
        let sent = unsafe { libc::send(fd, self.request.as_ptr().cast(), self.request.len(), 0) };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut reply = [0u8; 2048];
        // SAFETY: as above, for the reply buffer.
        let n = unsafe { libc::recv(fd, reply.as_mut_ptr().cast(), reply.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        parse(&reply[..n as usize])
    }

    /// Waits until the driver has read all `written` bytes of the connection, the socket
    /// closed, or `bound` passed.
    pub fn wait_read(&self, written: u64, bound: Duration) -> Boundary {
        let start = Instant::now();
        let mut pause = Pause::default();
        loop {
            if let Some(b) = self.read_by(written, start, bound) {
                return b;
            }
            pause.pause();
        }
    }

    /// One look: whether the driver has read all `written` bytes, the socket closed or
    /// `bound` has passed since `start` (`None`: not yet, wait on).
    pub fn read_by(&self, written: u64, start: Instant, bound: Duration) -> Option<Boundary> {
        match self.sample() {
            Err(_) => Some(Boundary::Unobservable),
            Ok(Sample::Closed) => Some(Boundary::Closed),
            Ok(Sample::Open { received, unread }) if received >= written && unread == 0 => {
                Some(Boundary::Confirmed)
            }
            Ok(Sample::Open { received, unread }) => {
                (start.elapsed() >= bound).then_some(Boundary::Unconfirmed {
                    written,
                    received,
                    unread,
                })
            }
        }
    }
}

/// The wait between two looks at a driver's socket: a driver usually reads within
/// microseconds, so yield first, then sleep longer and longer (up to a millisecond).
#[derive(Default)]
pub struct Pause {
    yields: u32,
    sleep: Duration,
}

/// How many times a [`Pause`] yields before it sleeps.
const YIELDS: u32 = 50;

impl Pause {
    /// A wait that sleeps from the first time: for what a peer's reads end, which takes longer
    /// than a yield (the receiver's window opens as the driver reads).
    pub fn sleeping() -> Pause {
        Pause {
            yields: YIELDS,
            sleep: Duration::ZERO,
        }
    }

    /// Waits once.
    pub fn pause(&mut self) {
        if self.yields < YIELDS {
            self.yields += 1;
            std::thread::yield_now();
        } else {
            self.sleep =
                (self.sleep * 2).clamp(Duration::from_micros(10), Duration::from_millis(1));
            std::thread::sleep(self.sleep);
        }
    }
}

/// The lookup of one socket by its addresses: the client's socket has the client's address as
/// its source.
fn request(client: SocketAddr, server: SocketAddr) -> Vec<u8> {
    let family = match client.ip() {
        IpAddr::V4(_) => libc::AF_INET as u8,
        IpAddr::V6(_) => libc::AF_INET6 as u8,
    };
    let len = NLMSG_HDR_LEN + REQ_LEN;
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&(len as u32).to_ne_bytes());
    m.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    m.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    m.extend_from_slice(&1u32.to_ne_bytes()); // sequence number
    m.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel's
    m.push(family);
    m.push(libc::IPPROTO_TCP as u8);
    m.push(1 << (INET_DIAG_INFO - 1)); // ask for tcp_info
    m.push(0);
    m.extend_from_slice(&u32::MAX.to_ne_bytes()); // any state: a closing socket is reported too
    m.extend_from_slice(&client.port().to_be_bytes());
    m.extend_from_slice(&server.port().to_be_bytes());
    for addr in [client.ip(), server.ip()] {
        let mut field = [0u8; 16];
        match addr {
            IpAddr::V4(a) => field[..4].copy_from_slice(&a.octets()),
            IpAddr::V6(a) => field.copy_from_slice(&a.octets()),
        }
        m.extend_from_slice(&field);
    }
    m.extend_from_slice(&0u32.to_ne_bytes()); // interface: any
    m.extend_from_slice(&u32::MAX.to_ne_bytes()); // cookie: INET_DIAG_NOCOOKIE
    m.extend_from_slice(&u32::MAX.to_ne_bytes());
    m
}

/// The native-endian `u32` at `at` of a kernel structure.
pub(super) fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

/// The kernel's answer: an `inet_diag_msg` with its `tcp_info`, or an error (ENOENT: no such
/// socket any more).
fn parse(reply: &[u8]) -> io::Result<Sample> {
    let short = || io::Error::new(io::ErrorKind::InvalidData, "short sock_diag reply");
    let kind = u16_at(reply, 4).ok_or_else(short)?;
    if kind == NLMSG_ERROR {
        let errno = -(u32_at(reply, NLMSG_HDR_LEN).ok_or_else(short)? as i32);
        return match errno {
            libc::ENOENT => Ok(Sample::Closed),
            e => Err(io::Error::from_raw_os_error(e)),
        };
    }
    let msg = reply.get(NLMSG_HDR_LEN..).ok_or_else(short)?;
    if msg.len() < MSG_LEN {
        return Err(short());
    }
    if msg[1] != TCP_ESTABLISHED {
        return Ok(Sample::Closed);
    }
    let unread = u32_at(msg, 4 + SOCKID_LEN + 4).ok_or_else(short)?;
    let mut at = MSG_LEN;
    while let (Some(len), Some(kind)) = (u16_at(msg, at), u16_at(msg, at + 2)) {
        let len = usize::from(len);
        if len < 4 {
            break;
        }
        if kind == INET_DIAG_INFO {
            let info = msg.get(at + 4..at + len).ok_or_else(short)?;
            let received = info
                .get(BYTES_RECEIVED_AT..BYTES_RECEIVED_AT + 8)
                .ok_or_else(short)?;
            return Ok(Sample::Open {
                received: u64::from_ne_bytes(received.try_into().expect("8 bytes")),
                unread,
            });
        }
        at += (len + 3) & !3;
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        "sock_diag reply without tcp_info",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        (server, client)
    }

    /// The counts are the client's own: bytes written but unread show as unread, and reading
    /// them confirms the boundary.
    #[test]
    fn the_clients_reads_are_seen() {
        let (mut server, mut client) = pair();
        let watch = ClientSocket::of(&server).unwrap();
        assert_eq!(
            watch.sample().unwrap(),
            Sample::Open {
                received: 0,
                unread: 0
            }
        );
        server.write_all(b"hello").unwrap();
        // Delivery on loopback is quick but not instant: wait for the bytes to arrive.
        let start = Instant::now();
        while watch.sample().unwrap()
            != (Sample::Open {
                received: 5,
                unread: 5,
            })
        {
            assert!(start.elapsed() < BOUND, "{:?}", watch.sample());
            std::thread::yield_now();
        }
        let mut buf = [0u8; 3];
        client.read_exact(&mut buf).unwrap();
        assert_eq!(
            watch.sample().unwrap(),
            Sample::Open {
                received: 5,
                unread: 2
            }
        );
        let reader = std::thread::spawn(move || {
            let mut rest = [0u8; 2];
            client.read_exact(&mut rest).unwrap();
            client
        });
        assert_eq!(watch.wait_read(5, BOUND), Boundary::Confirmed);
        let client = reader.join().unwrap();
        drop(client);
        let start = Instant::now();
        while watch.sample().unwrap() != Sample::Closed {
            assert!(start.elapsed() < BOUND);
            std::thread::yield_now();
        }
        assert_eq!(watch.wait_read(5, BOUND), Boundary::Closed);
    }

    /// A driver that never reads leaves the boundary unconfirmed, with what it holds.
    #[test]
    fn a_client_that_does_not_read_is_unconfirmed() {
        let (mut server, _client) = pair();
        let watch = ClientSocket::of(&server).unwrap();
        server.write_all(&[7u8; 100]).unwrap();
        assert_eq!(
            watch.wait_read(100, Duration::from_millis(200)),
            Boundary::Unconfirmed {
                written: 100,
                received: 100,
                unread: 100
            }
        );
    }
}
