//! SipHash-2-4, for the short stable tags of [`Redaction::Hash`](super::Redaction::Hash): the
//! same value gives the same tag in every process and release (the standard library's hasher
//! promises neither), and a secret key keeps others from confirming a guess by hashing it.

/// SipHash-2-4 of `data` under `key`.
pub(crate) fn siphash24(key: &[u8; 16], data: &[u8]) -> u64 {
    let k0 = u64::from_le_bytes(word(&key[..8]));
    let k1 = u64::from_le_bytes(word(&key[8..]));
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    let mut blocks = data.chunks_exact(8);
    for block in &mut blocks {
        let m = u64::from_le_bytes(word(block));
        v[3] ^= m;
        rounds(&mut v, 2);
        v[0] ^= m;
    }
    let mut last = [0u8; 8];
    let tail = blocks.remainder();
    last[..tail.len()].copy_from_slice(tail);
    // The length's low byte goes in the last block's top byte.
    last[7] = data.len() as u8;
    let m = u64::from_le_bytes(last);
    v[3] ^= m;
    rounds(&mut v, 2);
    v[0] ^= m;
    v[2] ^= 0xff;
    rounds(&mut v, 4);
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

fn word(bytes: &[u8]) -> [u8; 8] {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[..8]);
    w
}

fn rounds(v: &mut [u64; 4], n: usize) {
    for _ in 0..n {
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13);
        v[1] ^= v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16);
        v[3] ^= v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21);
        v[3] ^= v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17);
        v[1] ^= v[2];
        v[2] = v[2].rotate_left(32);
    }
}

#[cfg(test)]
mod tests {
    use super::siphash24;

    /// The reference vectors of the SipHash paper: key 00..0f, messages 00..(n-1).
    #[test]
    fn matches_the_reference_vectors() {
        let key: [u8; 16] = std::array::from_fn(|i| i as u8);
        let message: Vec<u8> = (0u8..64).collect();
        assert_eq!(siphash24(&key, &message[..0]), 0x726f_db47_dd0e_0e31);
        assert_eq!(siphash24(&key, &message[..15]), 0xa129_ca61_49be_45e5);
    }
}
