//! Digests as proem prints them: lowercase hex.

use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of bytes (or of a text's UTF-8).
pub fn sha256_hex(bytes: impl AsRef<[u8]>) -> String {
    hex(&Sha256::digest(bytes.as_ref()))
}

/// Lowercase hex SHA-256 of everything `reader` gives, streamed through a
/// small buffer (an 18 MB plugin is hashed without holding it), with the
/// number of bytes read; at most `max_bytes + 1` are read, so a caller can
/// refuse a source over its limit.
pub fn sha256_hex_of_reader(reader: impl std::io::Read, max_bytes: u64) -> std::io::Result<(String, u64)> {
    use std::io::Read;
    let mut reader = reader.take(max_bytes.saturating_add(1));
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buffer[..n]);
        total += n as u64;
    }
    Ok((hex(&hasher.finalize()), total))
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Streamed or whole, the same digest, and the count is what was read.
        #[test]
        fn a_streamed_digest_equals_the_whole_one(bytes in proptest::collection::vec(any::<u8>(), 0..600_000)) {
            let (streamed, read) = sha256_hex_of_reader(&bytes[..], u64::MAX - 1).unwrap();
            prop_assert_eq!(streamed, sha256_hex(&bytes));
            prop_assert_eq!(read, bytes.len() as u64);
        }
    }
}
