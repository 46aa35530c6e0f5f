//! What judging costs the proxy: the recorder's work per forwarded write (the write made a TCP
//! segment, reassembled and judged by the checker; no capture file, no sockets), on one core: for
//! 128 KiB frames from the node, each answering a small framed request (throughput), and for a
//! small request and its small answer (the judge's share of the latency the proxy adds). Then
//! the same 128 KiB frames over loopback sockets, from a node to a client, straight and through
//! a running proxy side by side: what relaying and judging cost together (one thread per
//! connection relays both directions, so a connection's rate through the proxy is what one core
//! of it does).
//!
//!     cargo bench -p cqlframe-harness --bench proxy

use cqlframe::checksum::PayloadChecksum;
use cqlframe::encoder::{FrameEncoder, SplitPolicy};
use cqlframe::envelope::{envelope_bytes, Opcode};
use cqlframe::format::{Format, FrameSettings, MAX_PAYLOAD};
use cqlframe_harness::pcap::write::Peer;
use cqlframe_harness::proxy::recorder::Recorder;
use cqlframe_harness::proxy::{Config, Limits, Proxy};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// Content of a full frame (128 KiB less a byte): one RESULT envelope.
const FRAME_CONTENT: usize = MAX_PAYLOAD;

fn string(s: &str) -> Vec<u8> {
    let mut b = (s.len() as u16).to_be_bytes().to_vec();
    b.extend_from_slice(s.as_bytes());
    b
}

/// One write of `from` through the recorder, as the proxy makes it: queued, then judged once
/// written.
fn pass(r: &mut Recorder, id: usize, from: Peer, bytes: &[u8]) {
    r.forward(id, from, bytes);
    r.delivered(id, from);
}

/// A recorder with one connection past its handshake (STARTUP, READY): framing on.
fn framed(startup: &[u8]) -> (Recorder, usize) {
    let mut r = Recorder::new(16 << 20, 0, None, None, Box::new(|_| {}));
    let id = r.open("bench".into());
    pass(
        &mut r,
        id,
        Peer::Client,
        &envelope_bytes(5, 0, 0, Opcode::Startup, startup),
    );
    pass(
        &mut r,
        id,
        Peer::Server,
        &envelope_bytes(0x85, 0, 0, Opcode::Ready, &[]),
    );
    (r, id)
}

/// The bench's traffic broke no rule and was judged as frames.
fn judged_clean(mut r: Recorder) {
    r.finish();
    assert_eq!(
        r.totals_mut().violations,
        0,
        "the bench traffic breaks no rule"
    );
    let judged = &r.closed[0].summary.server_to_client.stats;
    assert!(
        judged.frames > 0 && judged.envelopes == judged.frames,
        "{judged:?}"
    );
}

fn bench(c: &mut Criterion) {
    let settings = FrameSettings::new(Format::Uncompressed, PayloadChecksum::Crc32);
    let frame = |content: &[u8]| {
        let mut out = Vec::new();
        FrameEncoder::new(settings, SplitPolicy::DRIVERS)
            .write_frame(content, true, &mut out)
            .unwrap();
        out
    };
    let mut startup = 1u16.to_be_bytes().to_vec();
    startup.extend(string("CQL_VERSION"));
    startup.extend(string("3.0.0"));
    // Requests and their answers on 32 streams, made once: the loop measures the recorder.
    let pairs =
        |request: Opcode, request_body: &[u8], answer_body: &[u8]| -> Vec<(Vec<u8>, Vec<u8>)> {
            (1..=32)
                .map(|stream| {
                    let query = frame(&envelope_bytes(5, 0, stream, request, request_body));
                    let result = frame(&envelope_bytes(
                        0x85,
                        0,
                        stream,
                        Opcode::Result,
                        answer_body,
                    ));
                    (query, result)
                })
                .collect()
        };
    let large = pairs(Opcode::Query, &[0; 20], &vec![0x5a; FRAME_CONTENT - 9]);
    // A 64-byte answer and its request, as cassandra/bench/e2e/proxy.sh reads them.
    let small = pairs(Opcode::Execute, &[0; 40], &[0x5a; 90]);
    let mut group = c.benchmark_group("proxy");
    group.sample_size(20);
    for (name, throughput, traffic) in [
        (
            "judge 128 KiB frames",
            Throughput::Bytes(FRAME_CONTENT as u64 + 6 + 4),
            &large,
        ),
        (
            "judge a small request and its answer",
            Throughput::Elements(1),
            &small,
        ),
    ] {
        group.throughput(throughput);
        group.bench_function(name, |b| {
            let (mut r, id) = framed(&startup);
            let mut next = traffic.iter().cycle();
            b.iter(|| {
                let (query, result) = next.next().expect("cycles");
                pass(&mut r, id, Peer::Client, query);
                pass(&mut r, id, Peer::Server, result);
            });
            judged_clean(r);
        });
    }
    group.finish();
    sockets(c, &startup, &large);
}

/// A node on loopback: on each connection it reads the `handshake` it is given, answers it,
/// reads the requests, writes `answers` and closes.
fn node(handshake: [Vec<u8>; 2], requests: usize, answers: Vec<u8>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut s = stream.unwrap();
            let mut asked = vec![0u8; handshake[0].len().max(requests)];
            s.read_exact(&mut asked[..handshake[0].len()]).unwrap();
            s.write_all(&handshake[1]).unwrap();
            s.read_exact(&mut asked[..requests]).unwrap();
            s.write_all(&answers).unwrap();
        }
    });
    addr
}

/// 128 KiB frames of the node over sockets, per connection the handshake, then 32 requests and
/// their answers (4 MiB): straight to the node, and through the proxy, which must judge them
/// clean.
fn sockets(c: &mut Criterion, startup: &[u8], large: &[(Vec<u8>, Vec<u8>)]) {
    let handshake = [
        envelope_bytes(5, 0, 0, Opcode::Startup, startup),
        envelope_bytes(0x85, 0, 0, Opcode::Ready, &[]),
    ];
    let (mut requests, mut answers) = (Vec::new(), Vec::new());
    for (query, result) in large {
        requests.extend_from_slice(query);
        answers.extend_from_slice(result);
    }
    let upstream = node(handshake.clone(), requests.len(), answers.clone());
    let proxy = Proxy::start(
        Config {
            listen: "127.0.0.1:0".parse().unwrap(),
            upstream: upstream.to_string(),
            limits: Limits::DEFAULT,
            chop: 0,
            fault: None,
            capture: None,
            spin: Duration::ZERO,
        },
        Box::new(|_| {}),
    )
    .expect("proxy");
    let mut group = c.benchmark_group("proxy, sockets");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(answers.len() as u64));
    let mut got = Vec::with_capacity(answers.len());
    let mut connection = |to: SocketAddr| {
        let mut s = TcpStream::connect(to).unwrap();
        s.write_all(&handshake[0]).unwrap();
        let mut ready = vec![0u8; handshake[1].len()];
        s.read_exact(&mut ready).unwrap();
        s.write_all(&requests).unwrap();
        got.clear();
        s.read_to_end(&mut got).unwrap();
        s.shutdown(Shutdown::Both).ok();
        assert_eq!(got, answers, "the node's answers, as written");
    };
    let ways = [
        ("128 KiB frames straight", upstream),
        ("128 KiB frames through the proxy", proxy.local),
    ];
    for (name, to) in ways {
        group.bench_function(name, |b| b.iter(|| connection(to)));
    }
    group.finish();
    // Per core: the client and the node do the same work either way, so the process's CPU time
    // through the proxy less that straight is the proxy's own (its two sockets included).
    const CONNECTIONS: u32 = 200;
    let [straight, through] = ways.map(|(_, to)| {
        let before = cpu_time();
        for _ in 0..CONNECTIONS {
            connection(to);
        }
        (cpu_time() - before) / CONNECTIONS
    });
    let proxy_cpu = through.saturating_sub(straight);
    println!(
        "proxy, sockets: CPU time per connection (4 MiB of answers): straight {straight:?}, \
         through the proxy {through:?}; the proxy's own {proxy_cpu:?}: {:.2} GiB/s per core",
        answers.len() as f64 / proxy_cpu.as_secs_f64() / f64::from(1 << 30)
    );
    while proxy.open_connections() > 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let outcome = proxy.stop();
    assert!(
        !outcome.broke_must() && outcome.totals.connections > 0,
        "the proxy judged the bench traffic clean: {} connections, {} violations: {:?}",
        outcome.totals.connections,
        outcome.totals.violations,
        outcome.connections.first().map(|c| &c.summary.rules)
    );
    assert!(
        outcome.totals.bytes >= outcome.totals.connections as u64 * answers.len() as u64,
        "every byte judged"
    );
}

/// User and system CPU time of this process so far, all threads.
fn cpu_time() -> Duration {
    // SAFETY: getrusage(2) fills the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

criterion_group!(benches, bench);
criterion_main!(benches);
