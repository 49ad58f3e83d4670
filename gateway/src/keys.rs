//! Gateway keys: kept as SHA-256 digests, never as the keys themselves.

use ring::digest::{SHA256, digest};
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Deserializer};
use std::fmt;

/// The SHA-256 of a gateway key, written in a file as 64 hex digits.
///
/// ```
/// use processors_gateway::KeyHash;
/// let hash = KeyHash::of("pgw-secret");
/// assert_eq!(hash.to_string().len(), 64);
/// assert_eq!(hash.to_string().parse::<KeyHash>().unwrap(), hash);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyHash([u8; 32]);

impl KeyHash {
    /// The hash of `key`.
    pub fn of(key: &str) -> KeyHash {
        let mut out = [0; 32];
        out.copy_from_slice(digest(&SHA256, key.as_bytes()).as_ref());
        KeyHash(out)
    }
}

impl fmt::Display for KeyHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for KeyHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyHash({self})")
    }
}

/// Why a text is not a key's hash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a key's `sha256` is 64 hex digits (`processors-gateway hash-key KEY` prints it), not a text of {len} characters{what}"
)]
pub struct BadKeyHash {
    len: usize,
    what: &'static str,
}

impl std::str::FromStr for KeyHash {
    type Err = BadKeyHash;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |what| BadKeyHash {
            len: s.chars().count(),
            what,
        };
        if s.len() != 64 {
            return Err(bad(""));
        }
        let mut out = [0; 32];
        for (i, pair) in s.as_bytes().chunks(2).enumerate() {
            let digit = |c: u8| (c as char).to_digit(16);
            match (digit(pair[0]), digit(pair[1])) {
                (Some(hi), Some(lo)) => out[i] = (hi * 16 + lo) as u8,
                _ => return Err(bad(" with other characters than hex digits")),
            }
        }
        Ok(KeyHash(out))
    }
}

impl<'de> Deserialize<'de> for KeyHash {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The system's random source failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the system's random source failed")]
pub struct RandomError;

/// A new random key for development, `pgw-dev-` and 32 hex digits (128 bits from the
/// system's random source).
pub fn development_key() -> Result<String, RandomError> {
    let mut bytes = [0u8; 16];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| RandomError)?;
    let mut key = String::from("pgw-dev-");
    for b in bytes {
        key.push_str(&format!("{b:02x}"));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_sha256_in_hex() {
        // FIPS 180-2's example: SHA-256("abc").
        assert_eq!(
            KeyHash::of("abc").to_string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_bad_hash_says_what_a_hash_is() {
        let e = "abc".parse::<KeyHash>().unwrap_err();
        assert!(e.to_string().contains("64 hex digits"), "{e}");
        let e = "g".repeat(64).parse::<KeyHash>().unwrap_err();
        assert!(e.to_string().contains("other characters"), "{e}");
    }

    #[test]
    fn development_keys_differ() {
        let a = development_key().unwrap();
        let b = development_key().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), "pgw-dev-".len() + 32);
    }
}
