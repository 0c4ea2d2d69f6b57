//! The hash for the per-call caches (pipelines by variant, bind groups by buffers, uniform
//! blocks by content). Their keys are the package's own (buffer identities, shapes), never an
//! attacker's, so the DoS-resistant default (SipHash) buys nothing, and a decode-sized call
//! hashes a bind group's key (an identity per binding), where SipHash showed in a profile of
//! the call (docs/performance.md, "The call's own cost"). This is the multiply-rotate hash of
//! rustc's FxHasher.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.add(u64::from_le_bytes(word.try_into().expect("eight bytes")));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(n.into());
    }

    fn write_u32(&mut self, n: u32) {
        self.add(n.into());
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_keys_of_a_bind_group_cache_stay_distinct() {
        // Keys like the bind-group cache's: identities differing in one byte of one slot.
        let mut m: FastMap<[Option<[u8; 32]>; 8], usize> = FastMap::default();
        for slot in 0..8 {
            for byte in 0..32 {
                let mut key = [Some([0u8; 32]); 8];
                key[slot].as_mut().unwrap()[byte] = 1;
                m.insert(key, slot * 32 + byte);
            }
        }
        assert_eq!(m.len(), 256);
        let mut key = [Some([0u8; 32]); 8];
        key[3].as_mut().unwrap()[7] = 1;
        assert_eq!(m.get(&key), Some(&(3 * 32 + 7)));
    }
}
