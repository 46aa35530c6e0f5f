//! What judging costs the proxy: the recorder's work per forwarded write (the write made a TCP
//! segment, reassembled and judged by the checker; no capture file, no sockets), on one core: for
//! 128 KiB frames from the node, each answering a small framed request (throughput), and for a
//! small request and its small answer (the judge's share of the latency the proxy adds).
//!
//!     cargo bench -p cqlframe-harness --bench proxy

use cqlframe::checksum::PayloadChecksum;
use cqlframe::encoder::{FrameEncoder, SplitPolicy};
use cqlframe::envelope::{envelope_bytes, Opcode};
use cqlframe::format::{Format, FrameSettings, MAX_PAYLOAD};
use cqlframe_harness::pcap::write::Peer;
use cqlframe_harness::proxy::recorder::Recorder;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

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
}

criterion_group!(benches, bench);
criterion_main!(benches);
