//! Frame headers of both formats: every field, encoded and decoded bit-exactly.
//!
//! Uncompressed (FMT-2..FMT-6): a 24-bit little-endian word then its CRC24.
//! ```text
//!  bit 0      17 18 19   23 | 24 .. 47
//!  [ length  | sc | ck | rsv ] [ CRC24 of bytes 0-2 ]
//! ```
//! LZ4 (FMT-7..FMT-11): one 64-bit little-endian word.
//! ```text
//!  bit 0         17             34 35 36  39 40 .. 63
//!  [ compressed | uncompressed | sc | ck | rsv ] [ CRC24 of bytes 0-4 ]
//! ```

use crate::checksum::crc24;
use crate::envelope::starts_like_envelope_header;
use crate::error::ErrorKind;
use crate::format::Format;

const LENGTH_MASK: u64 = 0x1_FFFF;

/// Every field of a frame header, as found on the wire or as to be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FrameHeader {
    /// Which layout: 6 bytes uncompressed, 8 LZ4.
    pub format: Format,
    /// Payload bytes on the wire (the compressed length for LZ4).
    pub payload_length: u32,
    /// LZ4 only: length of the content after decompression; 0 means stored (LZ4-2).
    pub uncompressed_length: u32,
    /// Whether the payload holds whole envelopes (FMT-4) or a piece of one, in a sequence.
    pub self_contained: bool,
    /// The CRC32C checksum bit (FMT-5, FMT-9).
    pub checksum_bit: bool,
    /// Value of the reserved bits (19-23 uncompressed, 36-39 LZ4), zero from a conforming sender.
    pub reserved: u8,
    /// The CRC24 stored in the header.
    pub crc24: u32,
}

impl FrameHeader {
    /// Field positions of `format`: (uncompressed-length shift, self-contained bit, checksum bit,
    /// reserved shift, reserved width, checked byte count).
    const fn layout(format: Format) -> (u32, u32, u32, u32, u32, usize) {
        match format {
            Format::Uncompressed => (0, 17, 18, 19, 5, 3),
            Format::Lz4 => (17, 34, 35, 36, 4, 5),
        }
    }

    /// A header for `payload_length` wire bytes with the CRC24 computed.
    pub fn new(
        format: Format,
        payload_length: u32,
        uncompressed_length: u32,
        self_contained: bool,
        checksum_bit: bool,
    ) -> Self {
        let mut header = FrameHeader {
            format,
            payload_length,
            uncompressed_length,
            self_contained,
            checksum_bit,
            reserved: 0,
            crc24: 0,
        };
        header.crc24 = crc24(&header.word().to_le_bytes()[..Self::layout(format).5]);
        header
    }

    /// The checked part of the header (without CRC24) as an integer.
    pub fn word(&self) -> u64 {
        let (ulen_shift, sc_bit, ck_bit, rsv_shift, rsv_width, _) = Self::layout(self.format);
        let mut word = u64::from(self.payload_length) & LENGTH_MASK;
        if self.format == Format::Lz4 {
            word |= (u64::from(self.uncompressed_length) & LENGTH_MASK) << ulen_shift;
        }
        word |= u64::from(self.self_contained) << sc_bit;
        word |= u64::from(self.checksum_bit) << ck_bit;
        word |= (u64::from(self.reserved) & ((1 << rsv_width) - 1)) << rsv_shift;
        word
    }

    /// The header's bytes as sent (with its stored `crc24`, right or wrong): the first
    /// `format.header_len()` of the eight; the rest are zero.
    pub fn to_bytes(&self) -> [u8; 8] {
        let n = Self::layout(self.format).5;
        (self.word() | u64::from(self.crc24 & 0xFF_FFFF) << (8 * n)).to_le_bytes()
    }

    /// Writes the header (with its stored `crc24`, right or wrong) into `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bytes()[..self.format.header_len()]);
    }

    /// Reads a header from the first `format.header_len()` bytes of `bytes`, which must be
    /// that long. The CRC24 is checked before any field is trusted (RECV-1). A header that
    /// fails it is also tried as the other format's, as far as `bytes` reaches: a sender that
    /// frames in the format it was not told to (LIFE-8) is told from one whose CRC24 is wrong.
    #[inline(always)]
    pub fn read(format: Format, bytes: &[u8]) -> Result<FrameHeader, ErrorKind> {
        let (ulen_shift, sc_bit, ck_bit, rsv_shift, rsv_width, n) = Self::layout(format);
        // Fixed-size loads: the header is 6 or 8 bytes, and `bytes` holds at least that many.
        let (word, found) = match format {
            Format::Uncompressed => (
                u64::from(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], 0])),
                u32::from_le_bytes([bytes[3], bytes[4], bytes[5], 0]),
            ),
            Format::Lz4 => {
                let all = u64::from_le_bytes(bytes[..8].try_into().expect("8-byte LZ4 header"));
                (all & 0xFF_FFFF_FFFF, (all >> 40) as u32)
            }
        };
        let computed = crc24(&bytes[..n]);
        if found != computed {
            return Err(ErrorKind::HeaderCrcMismatch {
                found,
                computed,
                unframed_envelope: starts_like_envelope_header(bytes),
                other_format: verifies_as(format.other(), bytes),
            });
        }
        let uncompressed_length = match format {
            Format::Uncompressed => 0,
            Format::Lz4 => ((word >> ulen_shift) & LENGTH_MASK) as u32,
        };
        Ok(FrameHeader {
            format,
            payload_length: (word & LENGTH_MASK) as u32,
            uncompressed_length,
            self_contained: word >> sc_bit & 1 == 1,
            checksum_bit: word >> ck_bit & 1 == 1,
            reserved: ((word >> rsv_shift) & ((1 << rsv_width) - 1)) as u8,
            crc24: found,
        })
    }

    /// Length of the whole frame: header, payload and trailer.
    pub fn frame_len(&self) -> usize {
        self.format.header_len() + self.payload_length as usize + crate::format::TRAILER_LEN
    }

    /// Length of the content once decoded (decompressed, or stored as is).
    pub fn content_len(&self) -> usize {
        match self.format {
            Format::Lz4 if self.uncompressed_length != 0 => self.uncompressed_length as usize,
            _ => self.payload_length as usize,
        }
    }
}

/// Whether `bytes` begin with a header of `format` whose CRC24 verifies; false when they are
/// shorter than that header.
fn verifies_as(format: Format, bytes: &[u8]) -> bool {
    let n = format.header_len();
    bytes.len() >= n
        && crc24(&bytes[..n - 3])
            == u32::from_le_bytes([bytes[n - 3], bytes[n - 2], bytes[n - 1], 0])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(h: &FrameHeader) -> Vec<u8> {
        let mut v = Vec::new();
        h.write(&mut v);
        v
    }

    // FMT-2, FMT-3, FMT-4, CRC-1: the brief's worked headers.
    #[test]
    fn known_uncompressed_headers() {
        let h = FrameHeader::new(Format::Uncompressed, 5, 0, true, false);
        assert_eq!(hex::encode(bytes(&h)), "05000219999a");
        let h = FrameHeader::new(Format::Uncompressed, 0, 0, false, false);
        assert_eq!(hex::encode(bytes(&h)), "00000077e77d");
        let h = FrameHeader::new(Format::Uncompressed, 0, 0, true, false);
        assert_eq!(hex::encode(bytes(&h)), "0000026a36c4");
        let h = FrameHeader::new(Format::Uncompressed, 131071, 0, true, false);
        assert_eq!(hex::encode(bytes(&h)), "ffff03254047");
    }

    // FMT-7, FMT-8, FMT-11.
    #[test]
    fn known_lz4_headers() {
        let h = FrameHeader::new(Format::Lz4, 7, 5, true, false);
        assert_eq!(hex::encode(bytes(&h)), "07000a00047372 37".replace(' ', ""));
        let h = FrameHeader::new(Format::Lz4, 5, 0, true, false);
        assert_eq!(hex::encode(bytes(&h)), "0500000004e4ab8e");
    }

    // FMT-5, FMT-9, FMT-6, FMT-10: the checksum bit and reserved bits sit where the spec says.
    #[test]
    fn checksum_and_reserved_bits() {
        let h = FrameHeader::new(Format::Uncompressed, 0, 0, false, true);
        assert_eq!(h.word(), 1 << 18);
        let h = FrameHeader::new(Format::Lz4, 0, 0, false, true);
        assert_eq!(h.word(), 1 << 35);
        let mut h = FrameHeader::new(Format::Lz4, 0, 0, false, false);
        h.reserved = 0xF;
        assert_eq!(h.word(), 0xF << 36);
        let mut h = FrameHeader::new(Format::Uncompressed, 0, 0, false, false);
        h.reserved = 0x1F;
        assert_eq!(h.word(), 0x1F << 19);
    }

    #[test]
    fn read_round_trips_and_checks_crc() {
        for format in [Format::Uncompressed, Format::Lz4] {
            let mut h = FrameHeader::new(format, 131071, 99, true, true);
            if format == Format::Uncompressed {
                h.uncompressed_length = 0;
            }
            let b = bytes(&h);
            assert_eq!(FrameHeader::read(format, &b), Ok(h));
            for bit in 0..b.len() * 8 {
                let mut c = b.clone();
                c[bit / 8] ^= 1 << (bit % 8);
                assert!(matches!(
                    FrameHeader::read(format, &c),
                    Err(ErrorKind::HeaderCrcMismatch {
                        unframed_envelope: false,
                        ..
                    })
                ));
            }
        }
    }

    // LIFE-8: a header of one format read as the other's fails its CRC24 and says that it
    // verifies as the other format's; a corrupt one does not, nor one cut short.
    #[test]
    fn a_header_of_the_other_format_reads_as_one() {
        for (written, expected) in [
            (Format::Lz4, Format::Uncompressed),
            (Format::Uncompressed, Format::Lz4),
        ] {
            let mut b = bytes(&FrameHeader::new(written, 40, 80, true, false));
            b.resize(8, 0x5a);
            let other = |b: &[u8]| match FrameHeader::read(expected, b) {
                Err(ErrorKind::HeaderCrcMismatch { other_format, .. }) => other_format,
                read => panic!("{written:?} header read as {expected:?}: {read:?}"),
            };
            assert!(other(&b), "{written:?} as {expected:?}");
            if written == Format::Lz4 {
                assert!(!other(&b[..6]), "cut short");
            }
            b[0] ^= 1;
            assert!(!other(&b), "corrupt {written:?} as {expected:?}");
        }
    }

    // LIFE-7, LIFE-4: an envelope header where a frame header should be fails the CRC24, and
    // reads as what it is, so that the sender is charged with not framing rather than with CRC-1.
    #[test]
    fn an_unframed_envelope_reads_as_one() {
        let event = [0x85, 0x00, 0xff, 0xff, 0x0c, 0x00, 0x00, 0x00, 0x24];
        for format in [Format::Uncompressed, Format::Lz4] {
            assert_eq!(
                FrameHeader::read(format, &event),
                Err(ErrorKind::HeaderCrcMismatch {
                    // Bytes 3-5 (uncompressed) or 5-7 (LZ4), little-endian.
                    found: if format == Format::Uncompressed {
                        0x00_0cff
                    } else {
                        0x00_0000
                    },
                    computed: crc24(&event[..format.header_len() - 3]),
                    unframed_envelope: true,
                    other_format: false,
                })
            );
        }
        // Each field that no envelope header of v3 to v6 has: version 2 and 7, an undefined
        // flag, an undefined opcode (0x04), a body length of 256 MiB or more, too few bytes.
        for (at, value) in [(0, 0x02), (0, 0x87), (1, 0x20), (4, 0x04), (5, 0x10)] {
            let mut other = event;
            other[at] = value;
            assert!(
                !starts_like_envelope_header(&other),
                "byte {at} = {value:#04x}"
            );
        }
        assert!(starts_like_envelope_header(&event[..6]));
        assert!(!starts_like_envelope_header(&event[..5]));
    }
}
