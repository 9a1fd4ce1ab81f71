//! Hash maps keyed by the engine's own small integers (op, class, group indices, byte counts).
//!
//! Each word is mixed in by a rotate, xor and multiply by a 64-bit odd constant (the scheme of
//! rustc's and Firefox's hashers): a few cycles, where std's SipHash spends tens of ns per key
//! on a resistance to chosen keys that nothing here needs. Only lookups change: no result may
//! depend on such a map's iteration order.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A [`HashMap`] with [`IntHasher`].
pub type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

#[derive(Debug, Default, Clone, Copy)]
pub struct IntHasher(u64);

impl IntHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for IntHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }
    fn write_u8(&mut self, x: u8) {
        self.add(x as u64);
    }
    fn write_u16(&mut self, x: u16) {
        self.add(x as u64);
    }
    fn write_u32(&mut self, x: u32) {
        self.add(x as u64);
    }
    fn write_u64(&mut self, x: u64) {
        self.add(x);
    }
    fn write_usize(&mut self, x: usize) {
        self.add(x as u64);
    }
    fn write_i32(&mut self, x: i32) {
        self.add(x as u32 as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_and_told_apart() {
        let mut m: IntMap<(u32, u16, u64), u64> = IntMap::default();
        for a in 0..50u32 {
            for b in 0..20u16 {
                m.insert((a, b, (a as u64) << 40 | b as u64), a as u64 * 100 + b as u64);
            }
        }
        assert_eq!(m.len(), 1000);
        for a in 0..50u32 {
            for b in 0..20u16 {
                assert_eq!(m[&(a, b, (a as u64) << 40 | b as u64)], a as u64 * 100 + b as u64);
            }
        }
        assert!(!m.contains_key(&(50, 0, 50 << 40)));
    }
}
