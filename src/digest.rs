//! The one spelling of "SHA-256 as lowercase hex" the crate uses: config revisions (docs/config.md), review
//! hashes (docs/review.md), audit argument hashes (docs/host.md "Audit") and the compaction account fingerprint
//! (docs/compaction.md) must all agree on it.

use sha2::{Digest, Sha256};

/// SHA-256 of `bytes`, lowercase hex (64 characters).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_digest() {
        assert_eq!(
            super::sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
