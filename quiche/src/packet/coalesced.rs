//! Splitting a UDP datagram into its coalesced packets (RFC 9000 §12.2).

use super::header::HeaderLayout;
use super::MAX_CONN_ID_LEN;
use crate::error::Result;

/// The length of the packet at the start of `buf`, found from its header without decrypting:
/// up to the end of the Length field's range for Initial, 0-RTT and Handshake packets, the
/// whole buffer for short headers, Retry and Version Negotiation packets.
pub fn packet_len(buf: &[u8], dcid_len: usize) -> Result<usize> {
    Ok(HeaderLayout::parse(buf, dcid_len)?.packet_len)
}

/// Iterator over the packets of a datagram, from [`coalesced`].
#[derive(Debug)]
pub struct Coalesced<'a> {
    rest: &'a mut [u8],
    dcid_len: usize,
    first_dcid: Option<([u8; MAX_CONN_ID_LEN], usize)>,
    failed: bool,
}

/// Splits a datagram into its packets, each as a mutable slice that can be decrypted in place.
///
/// A packet whose header cannot be parsed yields its error and ends the iteration, since the
/// packets after it cannot be delimited. Packets whose Destination Connection ID differs from
/// the first packet's are skipped, as RFC 9000 §12.2 recommends.
pub fn coalesced(buf: &mut [u8], dcid_len: usize) -> Coalesced<'_> {
    Coalesced {
        rest: buf,
        dcid_len,
        first_dcid: None,
        failed: false,
    }
}

impl<'a> Iterator for Coalesced<'a> {
    type Item = Result<&'a mut [u8]>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.failed || self.rest.is_empty() {
                return None;
            }

            let hdr = match HeaderLayout::parse(self.rest, self.dcid_len) {
                Ok(hdr) => hdr,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            };

            let rest = std::mem::take(&mut self.rest);
            // Every packet is at least one byte, so the loop makes progress.
            let (pkt, rest) = rest.split_at_mut(hdr.packet_len.clamp(1, rest.len()));
            self.rest = rest;

            let dcid = hdr.dcid.get(pkt);
            match &self.first_dcid {
                None => {
                    let mut first = [0; MAX_CONN_ID_LEN];
                    let len = dcid.len().min(MAX_CONN_ID_LEN);
                    first[..len].copy_from_slice(&dcid[..len]);
                    self.first_dcid = Some((first, len));
                }
                Some((first, len)) if first.get(..*len) != Some(dcid) => continue,
                Some(_) => (),
            }

            return Some(Ok(pkt));
        }
    }
}
