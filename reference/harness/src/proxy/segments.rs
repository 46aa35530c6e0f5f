//! Writes whose TCP segments never end inside a frame header.
//!
//! A driver reads what has arrived, so where its reads end depends on where the segments that
//! carried the bytes ended; a driver that mishandles a read ending inside a frame header
//! (PYTHON-1337) then fails by chance on a clean run. The kernel cuts a write into segments
//! every MSS counted from the write's start when nothing of the connection waits unsent, and
//! sends them at once when the peer's receive window holds them all; a write that outgrows the
//! window is sent in pieces as the window opens, ending wherever the window did. So the proxy
//! writes only when nothing waits unsent (`TCP_NOTSENT_LOWAT` of one byte makes poll(2) say
//! when), no more than the window holds, and only a length that puts no segment's end inside a
//! header: the reads a driver makes of a clean run then end where they would on any run, and
//! only a fault (`chop=N`) cuts a header.

use std::io;
use std::net::TcpStream;
use std::ops::Range;
use std::os::fd::AsRawFd;

// Offsets in Linux's `struct tcp_info` (linux/tcp.h): `tcpi_snd_wnd` came last, in Linux 6.2.
const SND_MSS_AT: usize = 16;
const NOTSENT_AT: usize = 144;
const SND_WND_AT: usize = 228;
const TCP_INFO_LEN: usize = 232;

/// What the kernel would do with a write on a socket now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// Nothing waits unsent: a write of up to `room` bytes goes out at once, cut every `mss`.
    Open { mss: usize, room: usize },
    /// Bytes written earlier wait unsent: a write now would join them.
    Queued,
    /// The kernel does not tell (before Linux 6.2).
    Unknown,
}

/// Makes poll(2) report `socket` writable only once nothing written waits unsent.
pub fn writable_when_sent(socket: &TcpStream) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: setsockopt(2) on an open socket with a pointer to an int of the size given.
    let r = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NOTSENT_LOWAT,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// What the kernel would do with a write on `socket` now.
pub fn window(socket: &TcpStream) -> Window {
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
    if r < 0 || (len as usize) < TCP_INFO_LEN {
        return Window::Unknown;
    }
    let field = |at: usize| u32::from_ne_bytes(info[at..at + 4].try_into().expect("4 bytes"));
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
pub fn safe_len<'a>(
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
}
