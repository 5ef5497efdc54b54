//! The signature of a webhook delivery (docs/events.md, "Verifying a delivery"):
//! `Tvbo-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>." + body)>`. The
//! timestamp is signed with the body so that a captured delivery cannot be replayed later
//! than the receiver's tolerance.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The header's name.
pub const SIGNATURE_HEADER: &str = "Tvbo-Signature";

/// The `Tvbo-Signature` value of `body` signed with `secret` at `timestamp`.
pub fn signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any size");
    mac.update(format!("{timestamp}.").as_bytes());
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    format!("t={timestamp},v1={}", hex::encode(digest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;

    /// HMAC by its definition (RFC 2104), from SHA-256 alone: H((K ^ opad) || H((K ^ ipad) || m)).
    fn brute_hmac(key: &[u8], message: &[u8]) -> Vec<u8> {
        let mut block = [0u8; 64];
        if key.len() > 64 {
            block[..32].copy_from_slice(&Sha256::digest(key));
        } else {
            block[..key.len()].copy_from_slice(key);
        }
        let pad = |byte: u8| block.iter().map(|k| k ^ byte).collect::<Vec<u8>>();
        let inner = Sha256::digest([pad(0x36), message.to_vec()].concat());
        Sha256::digest([pad(0x5c), inner.to_vec()].concat()).to_vec()
    }

    #[test]
    fn the_signature_is_hmac_sha256_of_the_timestamp_and_the_body() {
        let body = br#"{"id":1}"#;
        for secret in ["whsec_test_secret_0123", &"k".repeat(100)] {
            let header = signature(secret, 1_700_000_000, body);
            let expected = hex::encode(brute_hmac(secret.as_bytes(), b"1700000000.{\"id\":1}"));
            assert_eq!(header, format!("t=1700000000,v1={expected}"));
        }
        // The vector the Python client's verifier is tested with
        // (clients/python/tests/test_signature.py): the two sides agree.
        assert_eq!(
            signature("whsec_test_secret_0123", 1_700_000_000, body),
            "t=1700000000,v1=b359aca471a76d908e046c23b6367555fdb372fb6e4cbf8d14568613b79a2c89"
        );
        assert_ne!(
            signature("a-secret-of-16-chars", 1, body),
            signature("a-secret-of-16-chars", 2, body)
        );
    }
}
