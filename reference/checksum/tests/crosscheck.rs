//! Cross-checks against implementations not written here: the `crc` crate (CRC-24 with
//! Cassandra's parameters, CRC-32/ISCSI), `crc32fast` (seeded through `new_with_initial`),
//! `crc32c` and `crc-fast`, on every path this CPU runs.

#[path = "common/cassandra_crc24.rs"]
mod cassandra_crc24;
mod common;

use cassandra_crc24::CASSANDRA_CRC24;
use common::{random_bytes, with};
use cqlframe_checksum::{available_paths, bitwise, crc24, crc32, crc32c, Algorithm};

const ISCSI: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);

fn seeded_crc32fast(payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial(crc32fast::hash(&bitwise::CRC32_SEED));
    h.update(payload);
    h.finalize()
}

fn seeded_crc_fast(payload: &[u8]) -> u32 {
    let mut digest = crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32IsoHdlc);
    digest.update(&bitwise::CRC32_SEED);
    digest.update(payload);
    digest.finalize() as u32
}

/// Sizes from empty to 1 MiB, odd ones included.
fn samples() -> Vec<Vec<u8>> {
    let mut lens: Vec<usize> = (0..70).collect();
    lens.extend([
        127, 128, 129, 255, 511, 1000, 2037, 4093, 7937, 16373, 65_536, 131_071,
    ]);
    lens.push(1 << 20);
    lens.iter()
        .enumerate()
        .map(|(i, &len)| random_bytes(0xC0FFEE + i as u64, len))
        .collect()
}

#[test]
fn crc24_agrees_with_the_crc_crate() {
    assert_eq!(CASSANDRA_CRC24.checksum(b"123456789"), 0x4B_3F02);
    for data in samples().iter().filter(|d| d.len() <= 4096) {
        let expected = CASSANDRA_CRC24.checksum(data);
        assert_eq!(crc24(data), expected, "len {}", data.len());
        for path in available_paths() {
            if let Some(got) = with(Algorithm::Crc24, path, data) {
                assert_eq!(got, expected, "{path:?}, len {}", data.len());
            }
        }
    }
    // Every 3-byte header whose first two bytes vary; the last byte over all values in turn.
    for h in 0..=0xFFFFu32 {
        let header = [h as u8, (h >> 8) as u8, (h.wrapping_mul(31) >> 3) as u8];
        assert_eq!(crc24(&header), CASSANDRA_CRC24.checksum(&header));
        let header5 = [
            header[0],
            header[1],
            header[2],
            (h >> 3) as u8,
            h.wrapping_mul(7) as u8,
        ];
        assert_eq!(crc24(&header5), CASSANDRA_CRC24.checksum(&header5));
    }
}

#[test]
fn crc32_agrees_with_crc32fast_and_crc_fast() {
    for data in samples() {
        let expected = seeded_crc32fast(&data);
        assert_eq!(
            seeded_crc_fast(&data),
            expected,
            "peers disagree, len {}",
            data.len()
        );
        assert_eq!(crc32(&data), expected, "len {}", data.len());
        for path in available_paths() {
            if let Some(got) = with(Algorithm::Crc32, path, &data) {
                assert_eq!(got, expected, "{path:?}, len {}", data.len());
            }
        }
    }
}

#[test]
fn crc32c_agrees_with_crc32c_crc_fast_and_crc() {
    for data in samples() {
        let expected = crc32c::crc32c(&data);
        assert_eq!(
            ISCSI.checksum(&data),
            expected,
            "peers disagree, len {}",
            data.len()
        );
        let crc_fast = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, &data) as u32;
        assert_eq!(crc_fast, expected, "peers disagree, len {}", data.len());
        assert_eq!(crc32c(&data), expected, "len {}", data.len());
        for path in available_paths() {
            if let Some(got) = with(Algorithm::Crc32c, path, &data) {
                assert_eq!(got, expected, "{path:?}, len {}", data.len());
            }
        }
    }
}
