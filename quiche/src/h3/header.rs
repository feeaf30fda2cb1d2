//! Header fields as quiche's `h3` module has them: owned [`Header`], borrowed [`HeaderRef`],
//! and the [`NameValue`] trait both implement.

use std::fmt;

/// A name-value pair: what a header list is made of.
pub trait NameValue {
    /// The field name.
    fn name(&self) -> &[u8];
    /// The field value.
    fn value(&self) -> &[u8];
}

impl<N: AsRef<[u8]>, V: AsRef<[u8]>> NameValue for (N, V) {
    fn name(&self) -> &[u8] {
        self.0.as_ref()
    }

    fn value(&self) -> &[u8] {
        self.1.as_ref()
    }
}

/// An owned header field.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Header(Vec<u8>, Vec<u8>);

impl Header {
    /// A header from its name and value bytes.
    pub fn new(name: &[u8], value: &[u8]) -> Self {
        Header(name.to_vec(), value.to_vec())
    }
}

impl NameValue for Header {
    fn name(&self) -> &[u8] {
        &self.0
    }

    fn value(&self) -> &[u8] {
        &self.1
    }
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?}: {:?}",
            String::from_utf8_lossy(&self.0),
            String::from_utf8_lossy(&self.1)
        )
    }
}

/// A borrowed header field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HeaderRef<'a>(&'a [u8], &'a [u8]);

impl<'a> HeaderRef<'a> {
    /// A header borrowing its name and value.
    pub const fn new(name: &'a [u8], value: &'a [u8]) -> Self {
        HeaderRef(name, value)
    }
}

impl NameValue for HeaderRef<'_> {
    fn name(&self) -> &[u8] {
        self.0
    }

    fn value(&self) -> &[u8] {
        self.1
    }
}
