//! CQL body encodings (native protocol section 3): the primitives ([`Reader`] and the `put_`
//! writers), and what the handshake needs of them: [string map] (STARTUP), [string multimap]
//! (SUPPORTED) and the code and message of ERROR. The CQL messages of the tools around the
//! reference are written with these too.

use thiserror::Error;

/// Why a CQL body could not be read.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum BodyError {
    /// The body ends before a length says it should.
    #[error("malformed CQL body: it ends inside a value")]
    Truncated,
    /// A `[string]` holds bytes that are not UTF-8.
    #[error("malformed CQL body: a string is not UTF-8")]
    NotUtf8,
    /// A `[long string]` with a negative length.
    #[error("malformed CQL body: a long string of negative length")]
    NegativeLength,
}

/// Reads CQL primitives from a body, front to back; every read fails cleanly on a short body.
pub struct Reader<'a>(pub &'a [u8]);

impl<'a> Reader<'a> {
    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], BodyError> {
        if self.0.len() < n {
            return Err(BodyError::Truncated);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    /// A `[short]`.
    pub fn short(&mut self) -> Result<u16, BodyError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// An `[int]`.
    pub fn int(&mut self) -> Result<i32, BodyError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A `[string]`, which must be UTF-8.
    pub fn string(&mut self) -> Result<String, BodyError> {
        let bytes = self.short_bytes()?;
        String::from_utf8(bytes.to_vec()).map_err(|_| BodyError::NotUtf8)
    }

    /// The bytes of a `[long string]` (an `[int]` length, never negative), not yet decoded.
    pub fn long_string_bytes(&mut self) -> Result<&'a [u8], BodyError> {
        let n = usize::try_from(self.int()?).map_err(|_| BodyError::NegativeLength)?;
        self.take(n)
    }

    /// `[short bytes]`; also a `[string]` read without decoding it.
    pub fn short_bytes(&mut self) -> Result<&'a [u8], BodyError> {
        let n = self.short()? as usize;
        self.take(n)
    }

    /// `[bytes]`: `None` for a negative length (null).
    pub fn bytes(&mut self) -> Result<Option<&'a [u8]>, BodyError> {
        let n = self.int()?;
        if n < 0 {
            return Ok(None);
        }
        self.take(n as usize).map(Some)
    }
}

/// Parses a [string map], keeping the order of the body.
pub fn read_string_map(body: &[u8]) -> Result<Vec<(String, String)>, BodyError> {
    let mut r = Reader(body);
    (0..r.short()?)
        .map(|_| Ok((r.string()?, r.string()?)))
        .collect()
}

/// Parses a [string multimap].
pub fn read_string_multimap(body: &[u8]) -> Result<Vec<(String, Vec<String>)>, BodyError> {
    let mut r = Reader(body);
    (0..r.short()?)
        .map(|_| {
            let key = r.string()?;
            let values = (0..r.short()?)
                .map(|_| r.string())
                .collect::<Result<_, _>>()?;
            Ok((key, values))
        })
        .collect()
}

/// Parses the code and message that start an ERROR body.
pub fn read_error(body: &[u8]) -> Result<(i32, String), BodyError> {
    let mut r = Reader(body);
    Ok((r.int()?, r.string()?))
}

/// Parses the code that starts an ERROR body: what a receiver acts on, whatever the message.
pub fn read_error_code(body: &[u8]) -> Result<i32, BodyError> {
    Reader(body).int()
}

/// Appends a `[string]`.
pub fn put_string(out: &mut Vec<u8>, s: &str) {
    put_short_bytes(out, s.as_bytes());
}

/// Appends a `[long string]`.
pub fn put_long_string(out: &mut Vec<u8>, s: &str) {
    put_bytes(out, Some(s.as_bytes()));
}

/// Appends `[short bytes]`.
pub fn put_short_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u16).to_be_bytes());
    out.extend_from_slice(b);
}

/// Appends `[bytes]`; `None` is null (length -1).
pub fn put_bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        Some(b) => {
            out.extend_from_slice(&(b.len() as i32).to_be_bytes());
            out.extend_from_slice(b);
        }
    }
}

/// Encodes a `[string]`.
pub fn string(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    put_string(&mut out, s);
    out
}

/// Encodes a [string map].
pub fn string_map<K: AsRef<str>, V: AsRef<str>>(entries: &[(K, V)]) -> Vec<u8> {
    let mut out = (entries.len() as u16).to_be_bytes().to_vec();
    for (k, v) in entries {
        put_string(&mut out, k.as_ref());
        put_string(&mut out, v.as_ref());
    }
    out
}

/// Encodes a [string multimap].
pub fn string_multimap<K: AsRef<str>, V: AsRef<str>>(entries: &[(K, Vec<V>)]) -> Vec<u8> {
    let mut out = (entries.len() as u16).to_be_bytes().to_vec();
    for (k, values) in entries {
        put_string(&mut out, k.as_ref());
        out.extend_from_slice(&(values.len() as u16).to_be_bytes());
        for v in values {
            put_string(&mut out, v.as_ref());
        }
    }
    out
}

/// Encodes an ERROR body with `code` and `message`.
pub fn error(code: i32, message: &str) -> Vec<u8> {
    let mut out = code.to_be_bytes().to_vec();
    put_string(&mut out, message);
    out
}

/// Encodes a TOPOLOGY_CHANGE EVENT body: the event type, the change, then the node's `[inet]`
/// (a length byte, the address, an `[int]` port).
pub fn topology_change(change: &str, node: std::net::SocketAddrV4) -> Vec<u8> {
    let mut out = string("TOPOLOGY_CHANGE");
    put_string(&mut out, change);
    out.push(4);
    out.extend_from_slice(&node.ip().octets());
    out.extend_from_slice(&i32::from(node.port()).to_be_bytes());
    out
}

/// ERROR code of a protocol violation.
pub const PROTOCOL_ERROR: i32 = 0x000A;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_round_trip() {
        let map = [("CQL_VERSION", "3.0.0"), ("COMPRESSION", "lz4")];
        let parsed = read_string_map(&string_map(&map)).unwrap();
        assert_eq!(parsed, map.map(|(k, v)| (k.to_string(), v.to_string())));
        let multi = [("FRAME_CHECKSUMS", vec!["crc32", "crc32c"])];
        let parsed = read_string_multimap(&string_multimap(&multi)).unwrap();
        assert_eq!(parsed[0].1, ["crc32", "crc32c"]);
        assert_eq!(
            read_error(&error(PROTOCOL_ERROR, "bad")).unwrap(),
            (10, "bad".into())
        );
        assert!(read_string_map(&[0, 1, 0, 5, b'a']).is_err());
        let node = std::net::SocketAddrV4::new([10, 0, 0, 7].into(), 9042);
        assert_eq!(
            hex::encode(topology_change("NEW_NODE", node)),
            "000f544f504f4c4f47595f4348414e47450008\
             4e45575f4e4f4445040a00000700002352"
        );
    }
}
