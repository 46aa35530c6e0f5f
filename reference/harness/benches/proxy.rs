//! What judging costs the proxy: the recorder's work per forwarded write (the write made a TCP
//! segment, reassembled and judged by the checker; no capture file, no sockets) for 128 KiB
//! frames from the node, each answering a small framed request, on one core.
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
    let body = vec![0x5a; FRAME_CONTENT - 9];
    let mut group = c.benchmark_group("proxy");
    group.throughput(Throughput::Bytes(FRAME_CONTENT as u64 + 6 + 4));
    group.sample_size(20);
    // Requests and their answers on 32 streams, made once: the loop measures the recorder.
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = (1..=32)
        .map(|stream| {
            let query = frame(&envelope_bytes(5, 0, stream, Opcode::Query, &[0; 20]));
            let result = frame(&envelope_bytes(0x85, 0, stream, Opcode::Result, &body));
            (query, result)
        })
        .collect();
    group.bench_function("judge 128 KiB frames", |b| {
        let mut r = Recorder::new(16 << 20, 0, None, None, Box::new(|_| {}));
        let id = r.open("bench".into());
        r.forward(
            id,
            Peer::Client,
            &envelope_bytes(5, 0, 0, Opcode::Startup, &startup),
        );
        r.forward(
            id,
            Peer::Server,
            &envelope_bytes(0x85, 0, 0, Opcode::Ready, &[]),
        );
        let mut next = pairs.iter().cycle();
        b.iter(|| {
            let (query, result) = next.next().expect("cycles");
            r.forward(id, Peer::Client, query);
            r.forward(id, Peer::Server, result);
        });
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
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
