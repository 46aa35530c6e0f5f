//! Writes whose TCP segments never end inside a frame header.
//!
//! A driver reads what has arrived, so where its reads end depends on where the segments that
//! carried the bytes ended; a driver that mishandles a read ending inside a frame header
//! (PYTHON-1337) then fails by chance where nothing cuts a header on purpose. The kernel cuts a
//! write into segments every MSS counted from the write's start when nothing of the connection
//! waits unsent, and sends them at once when the peer's receive window holds them all; a write
//! that outgrows the window is sent in pieces as the window opens, ending wherever the window
//! did. So the conformance server (unless a case chops its bytes, [`super::delivery`]) and the
//! proxy (unless `chop=N`) write only when nothing waits unsent (`TCP_NOTSENT_LOWAT` of one byte
//! makes poll(2) say when), no more than the window holds, and only lengths that put no
//! segment's end inside a header: a driver's reads then end where they would on any run.

use super::delivery::{u32_at, Pause, TCP_ESTABLISHED};
use cqlframe::format::Format;
use cqlframe::header::FrameHeader;
use std::collections::VecDeque;
use std::io::{self, Write};
use std::net::TcpStream;
use std::ops::Range;
use std::os::fd::AsRawFd;

// Offsets in Linux's `struct tcp_info` (linux/tcp.h): `tcpi_snd_wnd` came last, in Linux 6.2.
const STATE_AT: usize = 0;
const SND_MSS_AT: usize = 16;
const NOTSENT_AT: usize = 144;
const SND_WND_AT: usize = 228;
const TCP_INFO_LEN: usize = 232;
/// `tcpi_state` of a connection the peer closed, on which this side still sends
/// (linux/tcp_states.h).
const TCP_CLOSE_WAIT: u8 = 8;

/// What the kernel would do with a write on a socket now.
enum Window {
    /// Nothing waits unsent: a write of up to `room` bytes goes out at once, cut every `mss`.
    Open { mss: usize, room: usize },
    /// Bytes written earlier wait unsent: a write now would join them.
    Queued,
    /// The kernel does not tell (before Linux 6.2), or the connection is no longer one a write
    /// goes out on (the peer reset it): a write says what became of it.
    Unknown,
}

/// What may be written next, as [`Guard::next`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// This many bytes, in one write.
    Write(usize),
    /// Nothing before the bytes written earlier are sent: poll(2) says when
    /// ([`writable_when_sent`]).
    Unsent,
    /// The bytes begin with a frame header not all there: more bytes complete it.
    Incomplete,
    /// The receiver's window cannot take the header the bytes begin with yet.
    Window,
    /// The kernel does not tell: the bytes go as they come.
    Unknown,
}

/// One socket's writes, kept from ending a segment inside a frame header. It remembers the
/// receiver's window as last asked of the kernel (its right edge, as a stream offset, and the
/// MSS): the edge only moves on, so until the bytes reach it the kernel need not be asked again.
#[derive(Default)]
pub struct Guard {
    edge: Option<(u64, usize)>,
}

impl Guard {
    /// What one write on `socket` may take of the next `len` bytes, the first of them at stream
    /// offset `at`, given the frame `headers` (stream offsets, in order).
    pub fn next(
        &mut self,
        socket: &TcpStream,
        at: u64,
        len: usize,
        headers: &VecDeque<Range<u64>>,
    ) -> Next {
        match unsent(socket) {
            Some(0) => {}
            Some(_) => return Next::Unsent,
            None => return Next::Unknown,
        }
        let (edge, mss) = match self.edge {
            Some((edge, mss)) if edge >= at + len as u64 => (edge, mss),
            _ => match window(socket) {
                Window::Open { mss, room } => *self.edge.insert((at + room as u64, mss)),
                Window::Queued => return Next::Unsent,
                Window::Unknown => return Next::Unknown,
            },
        };
        let room = edge.saturating_sub(at) as usize;
        match safe_len(at, len, mss, room, headers) {
            0 if safe_len(at, len, mss, usize::MAX, headers) == 0 => Next::Incomplete,
            0 => Next::Window,
            n => Next::Write(n),
        }
    }
}

/// Makes poll(2) report `socket` writable only once nothing written waits unsent.
pub fn writable_when_sent(socket: &TcpStream) -> io::Result<()> {
    set_option(socket, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, 1)
}

/// Sets an int socket option of `socket`.
fn set_option(
    socket: &TcpStream,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: setsockopt(2) on an open socket with a pointer to an int of the size given.
    let r = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Bytes written to `socket` that wait unsent (`None`: the kernel does not say). Unlike
/// [`window`], it does not take the socket's lock: asked before every write of the proxy polling
/// its sockets (`--spin 300`), `TCP_INFO` made the Java driver's requests through it slower by
/// about as much as a wake-up.
fn unsent(socket: &TcpStream) -> Option<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: SIOCOUTQNSD writes one int: the bytes written and not yet sent.
    let r = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCOUTQNSD, &mut n) };
    (r == 0).then_some(n.max(0) as usize)
}

/// What the kernel would do with a write on `socket` now.
fn window(socket: &TcpStream) -> Window {
    let fd = socket.as_raw_fd();
    let mut info = [0u8; TCP_INFO_LEN];
    let mut len = TCP_INFO_LEN as libc::socklen_t;
    // SAFETY: getsockopt(2) writes at most `len` bytes into `info`, which is that long.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    let open = matches!(info[STATE_AT], TCP_ESTABLISHED | TCP_CLOSE_WAIT);
    if r < 0 || (len as usize) < TCP_INFO_LEN || !open {
        return Window::Unknown;
    }
    let field = |at: usize| u32_at(&info, at).unwrap_or_default();
    if field(NOTSENT_AT) > 0 {
        return Window::Queued;
    }
    let mut unacked: libc::c_int = 0;
    // SAFETY: SIOCOUTQ writes one int: the bytes written and not yet acknowledged.
    if unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut unacked) } < 0 {
        return Window::Unknown;
    }
    let mss = field(SND_MSS_AT) as usize;
    if mss < 64 {
        return Window::Unknown;
    }
    let room = (field(SND_WND_AT) as usize).saturating_sub(unacked.max(0) as usize);
    Window::Open { mss, room }
}

/// How many of `len` bytes, the next of them at stream offset `at`, one write can take so that
/// the segments it makes (ending every `mss` bytes from `at`, and at the write's end) end
/// outside each of `headers` (stream offsets, in order), in a window of `room` bytes. Zero when
/// the write would begin with a header that it cannot hold whole.
fn safe_len<'a>(
    at: u64,
    len: usize,
    mss: usize,
    room: usize,
    headers: impl IntoIterator<Item = &'a Range<u64>>,
) -> usize {
    let mut end = at + len.min(room) as u64;
    for h in headers {
        if h.start >= end {
            break;
        }
        if h.end <= at || h.start < at {
            // Behind the write, or cut before it: nothing left to keep.
            continue;
        }
        let cut_at_end = end < h.end;
        let next_cut = at + ((h.start - at) / mss as u64 + 1) * mss as u64;
        if cut_at_end || next_cut < h.end {
            end = h.start;
            break;
        }
    }
    (end - at) as usize
}

/// Where the frame headers lie in one direction's bytes from the switch on: each header's CRC24
/// is checked (RECV-1), and after one that fails, where frames lie is not known and not followed.
pub struct FrameHeaders {
    format: Format,
    /// Bytes fed so far, as a stream offset.
    fed: u64,
    /// Where the next frame header begins.
    next: u64,
    lost: bool,
    /// The bytes of the header at `next` fed so far.
    head: Vec<u8>,
    /// The headers that end after the bytes written, in order.
    spans: VecDeque<Range<u64>>,
}

impl FrameHeaders {
    /// Frames of `format` from stream offset `at` on.
    pub fn new(format: Format, at: u64) -> FrameHeaders {
        FrameHeaders {
            format,
            fed: at,
            next: at,
            lost: false,
            head: Vec::new(),
            spans: VecDeque::new(),
        }
    }

    /// The next bytes of the stream.
    pub fn feed(&mut self, bytes: &[u8]) {
        let start = self.fed;
        let end = start + bytes.len() as u64;
        self.fed = end;
        let header = self.format.header_len();
        while !self.lost && self.next + (self.head.len() as u64) < end {
            if self.head.is_empty() {
                self.spans.push_back(self.next..self.next + header as u64);
            }
            let at = (self.next + self.head.len() as u64 - start) as usize;
            let take = (header - self.head.len()).min(bytes.len() - at);
            self.head.extend_from_slice(&bytes[at..at + take]);
            if self.head.len() < header {
                break;
            }
            match FrameHeader::read(self.format, &self.head) {
                Ok(h) => self.next += h.frame_len() as u64,
                Err(_) => self.lost = true,
            }
            self.head.clear();
        }
    }

    /// The headers that end after stream offset `written` (those before are forgotten).
    pub fn after(&mut self, written: u64) -> &VecDeque<Range<u64>> {
        while self.spans.front().is_some_and(|s| s.end <= written) {
            self.spans.pop_front();
        }
        &self.spans
    }
}

/// Writes all of `bytes`, the next of them at stream offset `at`, to the blocking `socket` (made
/// [`writable_when_sent`]) in writes whose segments end outside `headers`; where the kernel does
/// not tell its window, as they come. Bytes that end inside a header go as they are: nothing
/// completes it.
pub fn write_all(
    socket: &mut TcpStream,
    guard: &mut Guard,
    at: u64,
    bytes: &[u8],
    headers: &VecDeque<Range<u64>>,
) -> io::Result<()> {
    let mut done = 0;
    let mut pause = Pause::sleeping();
    while done < bytes.len() {
        let rest = &bytes[done..];
        let n = match guard.next(socket, at + done as u64, rest.len(), headers) {
            Next::Write(n) => n,
            Next::Unknown | Next::Incomplete => rest.len(),
            Next::Unsent => {
                let mut fd = libc::pollfd {
                    fd: socket.as_raw_fd(),
                    events: libc::POLLOUT,
                    revents: 0,
                };
                // SAFETY: one valid pollfd; waits at most 100 ms.
                unsafe { libc::poll(&mut fd, 1, 100) };
                continue;
            }
            Next::Window => {
                pause.pause();
                continue;
            }
        };
        socket.write_all(&rest[..n])?;
        done += n;
        pause = Pause::sleeping();
    }
    Ok(())
}

/// What the tests of writes that keep from cutting headers share: frames of every size, and a
/// slow client that reads all that has arrived each time.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use cqlframe::format::{MAX_PAYLOAD, TRAILER_LEN};
    use std::io::{ErrorKind, Read};
    use std::time::{Duration, Instant};

    /// `count` frames of `format`, most of a few hundred bytes (headers close together), one in
    /// a thousand or so up to the largest payload: the bytes, and where each header lies.
    pub fn frames(format: Format, count: usize) -> (Vec<u8>, Vec<Range<u64>>) {
        let mut bytes = Vec::new();
        let mut headers = Vec::new();
        let mut seed = 0x2545_f491_u64;
        for _ in 0..count {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let payload = match seed >> 54 {
                0 => (seed >> 20) as usize % (MAX_PAYLOAD + 1),
                _ => (seed >> 20) as usize % 300,
            };
            let at = bytes.len() as u64;
            headers.push(at..at + format.header_len() as u64);
            FrameHeader::new(format, payload as u32, 0, true, false).write(&mut bytes);
            bytes.resize(bytes.len() + payload + TRAILER_LEN, 0x33);
        }
        (bytes, headers)
    }

    /// Reads `socket` to its end as a slow client with a 16 KiB receive buffer does: all that
    /// has arrived, then a pause of up to a quarter of a millisecond. The bytes, and where each
    /// read ended.
    pub fn read_slowly(socket: &mut TcpStream) -> (Vec<u8>, Vec<u64>) {
        set_option(socket, libc::SOL_SOCKET, libc::SO_RCVBUF, 16 << 10).unwrap();
        socket.set_nonblocking(true).unwrap();
        let mut got = Vec::new();
        let mut ends = Vec::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut seed = 0x9e37_79b9_u64;
        let deadline = Instant::now() + Duration::from_secs(60);
        'reading: while Instant::now() < deadline {
            loop {
                match socket.read(&mut buf) {
                    Ok(0) => break 'reading,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => panic!("{e}"),
                }
            }
            ends.push(got.len() as u64);
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            std::thread::sleep(Duration::from_micros(seed >> 56));
        }
        (got, ends)
    }

    /// The read ends of `ends` (stream offsets less `from`) strictly inside one of `headers`.
    pub fn inside(ends: &[u64], from: u64, headers: &[Range<u64>]) -> Vec<u64> {
        ends.iter()
            .filter_map(|&e| e.checked_sub(from))
            .filter(|e| headers.iter().any(|h| h.start < *e && *e < h.end))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Every length `safe_len` gives puts no segment end strictly inside a header, and it is the
    // longest such length within the bytes and the window.
    #[test]
    fn the_safe_length_is_the_longest_that_cuts_no_header() {
        let headers: Vec<Range<u64>> = [(100, 6), (110, 6), (250, 8), (400, 6)]
            .iter()
            .map(|&(s, l)| s..s + l)
            .collect();
        let cuts = |at: u64, n: usize, mss: usize| {
            (1..)
                .map(move |k| at + (k * mss) as u64)
                .take_while(move |&c| c < at + n as u64)
                .chain(std::iter::once(at + n as u64))
        };
        let clean = |at, n, mss| {
            n == 0 || cuts(at, n, mss).all(|c| !headers.iter().any(|h| h.start < c && c < h.end))
        };
        for at in [0u64, 100, 103, 110, 250] {
            for len in [0usize, 1, 3, 6, 7, 12, 200, 500] {
                for mss in [64usize, 100, 148, 1000] {
                    for room in [0usize, 5, 6, 150, 10_000] {
                        let n = safe_len(at, len, mss, room, &headers);
                        let most = len.min(room);
                        assert!(n <= most, "{at} {len} {mss} {room}: {n}");
                        // A write that starts inside a header (cut before it) leaves that one be.
                        if headers.iter().all(|h| !(h.start < at && at < h.end)) {
                            assert!(clean(at, n, mss), "{at} {len} {mss} {room}: {n} cuts");
                            let longer = (n + 1..=most).find(|&m| clean(at, m, mss));
                            assert_eq!(longer, None, "{at} {len} {mss} {room}: {n}");
                        }
                    }
                }
            }
        }
    }

    fn frame(format: Format, payload: usize) -> Vec<u8> {
        let mut out = Vec::new();
        FrameHeader::new(format, payload as u32, 0, true, false).write(&mut out);
        out.resize(out.len() + payload + 4, 0xab);
        out
    }

    // The headers are found wherever the reads that bring them end, and a header that fails its
    // CRC24 stops the following.
    #[test]
    fn headers_are_found_across_any_split_and_a_broken_one_ends_the_following() {
        for format in [Format::Uncompressed, Format::Lz4] {
            let mut stream = Vec::new();
            let mut starts = Vec::new();
            for payload in [0, 1, 300, 70_000, 5] {
                starts.push(100 + stream.len() as u64);
                stream.extend(frame(format, payload));
            }
            let len = format.header_len() as u64;
            let expected: Vec<Range<u64>> = starts.iter().map(|&s| s..s + len).collect();
            for piece in [1, 2, 5, 7, 4096, stream.len()] {
                let mut headers = FrameHeaders::new(format, 100);
                for chunk in stream.chunks(piece) {
                    headers.feed(chunk);
                }
                assert_eq!(
                    Vec::from(headers.spans.clone()),
                    expected,
                    "pieces of {piece}"
                );
                assert!(!headers.lost);
                assert_eq!(
                    Vec::from(headers.after(starts[2] + 1).clone()),
                    expected[2..]
                );
            }
            let mut broken = stream.clone();
            broken[(starts[2] - 100) as usize] ^= 1;
            let mut headers = FrameHeaders::new(format, 100);
            headers.feed(&broken);
            assert!(headers.lost);
            assert_eq!(Vec::from(headers.spans), expected[..3].to_vec());
        }
    }

    // RECV-4 (reproducibly): a blocking writer, as the conformance server writes, gives a slow
    // client with a small receive buffer no read that ends inside a frame header, uncompressed
    // and LZ4, three connections each. (Whole pieces written as the socket takes them gave one
    // such read in each of three runs.)
    #[test]
    fn blocking_writes_give_a_slow_reader_no_read_that_ends_inside_a_header() {
        for format in [Format::Uncompressed, Format::Lz4] {
            for _ in 0..3 {
                let (bytes, spans) = testing::frames(format, 20_000);
                let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
                let (mut server, _) = listener.accept().unwrap();
                let written = bytes.clone();
                // Whole frames in each write, as a server writes them: 500 at a time.
                let ends: Vec<u64> = (spans.iter().skip(500).step_by(500))
                    .map(|h| h.start)
                    .chain([bytes.len() as u64])
                    .collect();
                let writer = std::thread::spawn(move || {
                    writable_when_sent(&server).unwrap();
                    let mut headers = FrameHeaders::new(format, 0);
                    let mut guard = Guard::default();
                    let mut at = 0;
                    for end in ends {
                        let piece = &written[at as usize..end as usize];
                        headers.feed(piece);
                        write_all(&mut server, &mut guard, at, piece, headers.after(at)).unwrap();
                        at = end;
                    }
                });
                let (got, ends) = testing::read_slowly(&mut client);
                writer.join().unwrap();
                assert_eq!(got, bytes, "{format:?}");
                let inside = testing::inside(&ends, 0, &spans);
                assert!(
                    inside.is_empty(),
                    "{format:?}: {} of {} reads",
                    inside.len(),
                    ends.len()
                );
            }
        }
    }

    // A reader that closes before it read all ends the writer's wait for its window: the write
    // fails, as a write to a reset connection does, instead of waiting without end.
    #[test]
    fn a_reader_that_closes_ends_the_write() {
        let (bytes, _) = testing::frames(Format::Uncompressed, 20_000);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            writable_when_sent(&server).unwrap();
            let mut headers = FrameHeaders::new(Format::Uncompressed, 0);
            headers.feed(&bytes);
            let mut guard = Guard::default();
            let _ = tx.send(write_all(
                &mut server,
                &mut guard,
                0,
                &bytes,
                headers.after(0),
            ));
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        drop(client);
        let r = rx.recv_timeout(std::time::Duration::from_secs(10));
        assert!(matches!(r, Ok(Err(_))), "{r:?}");
    }
}
