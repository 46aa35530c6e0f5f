//! Cassandra's CRC-24 (the frame header check) as parameters of the `crc` crate: the independent
//! implementation the cross-check test and the header benchmark compare ours with.

pub const CASSANDRA_CRC24: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::Algorithm {
    width: 24,
    poly: 0x97_4F0B,
    init: 0x87_5060,
    refin: false,
    refout: false,
    xorout: 0,
    check: 0x4B_3F02,
    residue: 0,
});
