//! The ECMP hash of the reference simulator: MurmurHash3 (x86, 32-bit) over the flow's
//! addresses and ports, seeded with the switch's node id.
//!
//! Every switch hashes the same 12 bytes (source IP, destination IP, `sport | dport << 16`,
//! as three little-endian words) with its own seed and takes the result modulo the number
//! of equal-cost next hops (the reference's `SwitchNode::GetOutDev` and `EcmpHash`). A flow therefore keeps
//! one path, and different switches split flows independently. Using exactly this hash is
//! what lets `rdmalab hpcc` put every flow on the same path as the reference does.
//!
//! Both functions are on the per-packet path: they allocate nothing and branch little.

const C1: u32 = 0xcc9e_2d51;
const C2: u32 = 0x1b87_3593;

/// Mixes one 4-byte block into the state `h` (the body step of MurmurHash3_x86_32).
#[inline(always)]
fn mix_block(h: u32, k: u32) -> u32 {
    let k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    (h ^ k).rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64)
}

/// The final avalanche (`fmix32`) after the length has been folded in.
#[inline(always)]
fn finalize(h: u32, len: u32) -> u32 {
    let mut h = h ^ len;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// MurmurHash3_x86_32 of the 12 bytes formed by `words` in little-endian order.
///
/// This is the fixed-length form the switches use; it equals
/// [`murmur3_32_bytes`] applied to those 12 bytes.
#[inline]
pub fn murmur3_32(words: &[u32; 3], seed: u32) -> u32 {
    let h = words.iter().fold(seed, |h, &k| mix_block(h, k));
    finalize(h, 12)
}

/// MurmurHash3_x86_32 of an arbitrary byte string (the general algorithm, with the tail of
/// 1 to 3 bytes). Provided for other key layouts and to check [`murmur3_32`] against the
/// algorithm's published test vectors.
pub fn murmur3_32_bytes(data: &[u8], seed: u32) -> u32 {
    let mut chunks = data.chunks_exact(4);
    let mut h = seed;
    for c in &mut chunks {
        h = mix_block(h, u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let k = tail.iter().rev().fold(0u32, |k, &b| (k << 8) | u32::from(b));
        h ^= k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    }
    // The algorithm folds in the length modulo 2^32 by definition.
    finalize(h, data.len() as u32)
}

/// The ECMP hash of a packet at a switch whose node id is `seed`: MurmurHash3 of
/// (`sip`, `dip`, `sport | dport << 16`). For an ACK the caller passes the ACK's own fields
/// (addresses swapped, sport = the data's dport), as the reference does.
#[inline]
pub fn ecmp_hash(sip: u32, dip: u32, sport: u16, dport: u16, seed: u32) -> u32 {
    murmur3_32(&[sip, dip, u32::from(sport) | (u32::from(dport) << 16)], seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test vectors published with the algorithm (SMHasher's verification strings, as quoted
    /// on Wikipedia's MurmurHash page and in most ports).
    #[test]
    fn general_form_matches_published_vectors() {
        let cases: [(&[u8], u32, u32); 8] = [
            (b"", 0, 0),
            (b"", 1, 0x514E_28B7),
            (b"", 0xffff_ffff, 0x81F1_6F39),
            (b"\0\0\0\0", 0, 0x2362_F9DE),
            (b"aaaa", 0x9747_b28c, 0x5A97_808A),
            (b"abc", 0, 0xB3DD_93FA),
            (b"Hello, world!", 0x9747_b28c, 0x2488_4CBA),
            (b"The quick brown fox jumps over the lazy dog", 0x9747_b28c, 0x2FA8_26CD),
        ];
        for (data, seed, want) in cases {
            assert_eq!(murmur3_32_bytes(data, seed), want, "{data:?} seed {seed:#x}");
        }
    }

    /// 12-byte inputs. Expected values come from a separate Python implementation of the
    /// general algorithm, itself checked against the published vectors above before use.
    #[test]
    fn twelve_byte_form_matches_independent_implementation() {
        let cases: [([u32; 3], u32, u32); 5] = [
            ([0, 0, 0], 0, 0xd941_144b),
            ([0x0b00_0101, 0x0b00_0201, 10000 | (100 << 16)], 320, 0x6a7b_3f97),
            ([0x0b00_b301, 0x0b00_bc01, 10000 | (100 << 16)], 331, 0x51fa_d3bc),
            ([u32::MAX; 3], u32::MAX, 0x906f_b002),
            ([1, 2, 3], 4, 0x94d6_5d44),
        ];
        for (w, seed, want) in cases {
            assert_eq!(murmur3_32(&w, seed), want, "{w:x?} seed {seed}");
            let bytes: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
            assert_eq!(murmur3_32_bytes(&bytes, seed), want);
        }
        // "Hello, world" is 12 bytes: the word form must agree with the byte form on it.
        let b = b"Hello, world";
        let w = [0, 4, 8].map(|i| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]));
        assert_eq!(murmur3_32(&w, 0x9747_b28c), 0xe583_994d);
    }

    #[test]
    fn ecmp_hash_packs_ports_low_sport_high_dport() {
        let (sip, dip) = (0x0b00_0101, 0x0b00_0201);
        assert_eq!(ecmp_hash(sip, dip, 10000, 100, 320), 0x6a7b_3f97);
        // Swapping the ports changes the third word, hence the hash.
        assert_ne!(ecmp_hash(sip, dip, 100, 10000, 320), ecmp_hash(sip, dip, 10000, 100, 320));
        // The seed is the switch id: another switch hashes the same packet differently.
        assert_ne!(ecmp_hash(sip, dip, 10000, 100, 321), ecmp_hash(sip, dip, 10000, 100, 320));
    }
}
