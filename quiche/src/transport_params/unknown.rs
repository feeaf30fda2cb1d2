//! Transport parameters this library does not understand, kept for the application when it asks
//! for them (`Config::enable_track_unknown_transport_parameters`), within a byte budget: a
//! peer decides how many it sends, so what is kept of them is bounded by the budget, not by the
//! peer (RFC 9000 §7.4.2: unknown parameters are otherwise ignored).

use crate::error::{Error, Result};

/// What one kept parameter costs of the budget besides its value: its ID, as a `u64`. quiche
/// counts the same way, so a budget keeps the same parameters with either library.
const ID_COST: usize = std::mem::size_of::<u64>();

/// A transport parameter whose ID this library does not know: its ID and its value as it came
/// on the wire (`T` is `&[u8]` while decoding, `Vec<u8>` once kept).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownTransportParameter<T> {
    /// The parameter's ID.
    pub id: u64,
    /// The parameter's value, undecoded.
    pub value: T,
}

impl<T> UnknownTransportParameter<T> {
    /// Whether the ID is a reserved one, 31 * N + 27 (RFC 9000 §18.1): what an endpoint sends
    /// to check that its peer ignores parameters it does not know (GREASE).
    pub fn is_reserved(&self) -> bool {
        super::is_reserved_id(self.id)
    }
}

impl From<UnknownTransportParameter<&[u8]>> for UnknownTransportParameter<Vec<u8>> {
    fn from(p: UnknownTransportParameter<&[u8]>) -> Self {
        UnknownTransportParameter {
            id: p.id,
            value: p.value.to_vec(),
        }
    }
}

/// The unknown parameters a peer sent, in the order it sent them, as many as the byte budget
/// held.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnknownTransportParameters {
    /// What is left of the budget, in bytes. Each kept parameter took its value's length plus
    /// 8 (its ID).
    pub capacity: usize,
    /// The parameters kept.
    pub parameters: Vec<UnknownTransportParameter<Vec<u8>>>,
}

impl UnknownTransportParameters {
    /// Keeps a copy of `p` if its cost (its value's length plus 8) is below what is left of
    /// the budget, and takes the cost from it. Fails with [`Error::BufferTooShort`] otherwise,
    /// keeping nothing: a smaller parameter may still fit afterwards.
    pub fn push(&mut self, p: UnknownTransportParameter<&[u8]>) -> Result<()> {
        let cost = p.value.len().saturating_add(ID_COST);
        // Strictly below, as quiche: a parameter never takes the last byte of the budget.
        if cost >= self.capacity {
            return Err(Error::BufferTooShort);
        }
        self.capacity -= cost;
        self.parameters.push(p.into());
        Ok(())
    }
}

/// The kept parameters of [`UnknownTransportParameters`], in the order the peer sent them.
#[derive(Clone, Debug)]
pub struct UnknownTransportParameterIterator<'a> {
    inner: std::slice::Iter<'a, UnknownTransportParameter<Vec<u8>>>,
}

impl<'a> Iterator for UnknownTransportParameterIterator<'a> {
    type Item = &'a UnknownTransportParameter<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<'a> IntoIterator for &'a UnknownTransportParameters {
    type Item = &'a UnknownTransportParameter<Vec<u8>>;
    type IntoIter = UnknownTransportParameterIterator<'a>;

    fn into_iter(self) -> Self::IntoIter {
        UnknownTransportParameterIterator {
            inner: self.parameters.iter(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(id: u64, value: &[u8]) -> UnknownTransportParameter<&[u8]> {
        UnknownTransportParameter { id, value }
    }

    #[test]
    fn push_keeps_what_the_budget_holds_and_skips_what_it_does_not() {
        let mut kept = UnknownTransportParameters {
            capacity: 30,
            parameters: Vec::new(),
        };
        kept.push(param(0x1b, &[1; 10])).unwrap();
        assert_eq!(kept.capacity, 12);
        // 4 + 8 = 12 is not below 12: refused, nothing taken.
        assert_eq!(kept.push(param(0x3a, &[2; 4])), Err(Error::BufferTooShort));
        assert_eq!(kept.capacity, 12);
        // A smaller one still fits.
        kept.push(param(0x3b, &[3; 3])).unwrap();
        assert_eq!(kept.capacity, 1);
        let ids: Vec<u64> = kept.into_iter().map(|p| p.id).collect();
        assert_eq!(ids, [0x1b, 0x3b]);
        assert_eq!(kept.parameters[1].value, vec![3; 3]);
    }

    #[test]
    fn reserved_ids_are_31n_plus_27() {
        assert!(param(27, &[]).is_reserved());
        assert!(param(31 * 1000 + 27, &[]).is_reserved());
        assert!(!param(28, &[]).is_reserved());
        // IDs below 27 are not reserved (and do not underflow).
        assert!(!param(0x12, &[]).is_reserved());
    }
}
