//! Copies between a byte ring (`VecDeque<u8>`) and plain slices.
//!
//! A `VecDeque` stores its bytes in at most two contiguous pieces; these helpers copy through
//! those pieces with `copy_from_slice`, so each copy is a `memcpy` (or two), not a byte loop.

use std::collections::VecDeque;

/// Copies `src` into `ring` starting at index `at`. The caller guarantees
/// `at + src.len() <= ring.len()`; otherwise the copy is truncated to what fits.
pub(crate) fn copy_into(ring: &mut VecDeque<u8>, at: usize, src: &[u8]) {
    let (a, b) = ring.as_mut_slices();
    let mut src = src;
    let mut at = at;
    if at < a.len() {
        let n = src.len().min(a.len() - at);
        if let (Some(dst), Some(s)) = (a.get_mut(at..at + n), src.get(..n)) {
            dst.copy_from_slice(s);
        }
        src = src.get(n..).unwrap_or(&[]);
        at = a.len();
    }
    if src.is_empty() {
        return;
    }
    let at_b = at - a.len();
    let n = src.len().min(b.len().saturating_sub(at_b));
    if let (Some(dst), Some(s)) = (b.get_mut(at_b..at_b + n), src.get(..n)) {
        dst.copy_from_slice(s);
    }
}

/// Copies `dst.len()` bytes out of `ring` starting at index `at`. The caller guarantees
/// `at + dst.len() <= ring.len()`; otherwise only what exists is copied. Returns the number of
/// bytes copied.
pub(crate) fn copy_from(ring: &VecDeque<u8>, at: usize, dst: &mut [u8]) -> usize {
    let (a, b) = ring.as_slices();
    let mut done = 0;
    let mut at = at;
    if at < a.len() {
        let n = dst.len().min(a.len() - at);
        if let (Some(d), Some(s)) = (dst.get_mut(..n), a.get(at..at + n)) {
            d.copy_from_slice(s);
            done = n;
        }
        at = a.len();
    }
    let at_b = at - a.len();
    let n = (dst.len() - done).min(b.len().saturating_sub(at_b));
    if let (Some(d), Some(s)) = (dst.get_mut(done..done + n), b.get(at_b..at_b + n)) {
        d.copy_from_slice(s);
        done += n;
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring whose contents wrap around the end of its storage.
    fn wrapped_ring() -> VecDeque<u8> {
        let mut r = VecDeque::with_capacity(16);
        r.extend(std::iter::repeat_n(0u8, 12));
        r.drain(..10);
        r.extend((0u8..12).map(|x| x + 100));
        r
    }

    #[test]
    fn copies_across_the_wrap() {
        let mut r = wrapped_ring();
        assert!(!r.as_slices().1.is_empty(), "test needs a wrapped ring");
        let len = r.len();
        let src: Vec<u8> = (0..len as u8).collect();
        for at in 0..len {
            for n in 0..=(len - at) {
                copy_into(&mut r, at, &src[..n]);
                let mut out = vec![0u8; n];
                assert_eq!(copy_from(&r, at, &mut out), n);
                assert_eq!(out, &src[..n]);
            }
        }
    }

    #[test]
    fn out_of_range_is_truncated_not_a_panic() {
        let mut r = wrapped_ring();
        let len = r.len();
        copy_into(&mut r, len - 1, &[1, 2, 3]);
        assert_eq!(r[len - 1], 1);
        let mut out = [0u8; 4];
        assert_eq!(copy_from(&r, len - 2, &mut out), 2);
        assert_eq!(copy_from(&r, len + 5, &mut out), 0);
    }
}
