//! A minimal pcap writer, so that datagrams exchanged in memory can be dissected by Wireshark or
//! tshark: an independent check of our wire format.
//!
//! Packets are written with link type RAW (101): an IPv4 or IPv6 header, a UDP header with a
//! zero checksum (legal over IPv4, and accepted by the dissectors over IPv6), then the datagram.

use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

const LINKTYPE_RAW: u32 = 101;

/// Writes UDP datagrams into a pcap stream.
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the pcap global header and returns the writer.
    pub fn new(mut out: W) -> io::Result<Self> {
        out.write_all(&0xa1b2_c3d4u32.to_le_bytes())?; // microsecond timestamps
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?; // GMT offset
        out.write_all(&0u32.to_le_bytes())?; // timestamp accuracy
        out.write_all(&65535u32.to_le_bytes())?; // snapshot length
        out.write_all(&LINKTYPE_RAW.to_le_bytes())?;
        Ok(PcapWriter { out })
    }

    /// Records one datagram sent from `from` to `to`, `at` after the start of the capture.
    /// Datagrams whose addresses are of different families are not representable and fail.
    pub fn write_datagram(
        &mut self,
        at: Duration,
        from: SocketAddr,
        to: SocketAddr,
        payload: &[u8],
    ) -> io::Result<()> {
        let udp_len = 8 + payload.len();
        let ip_header = match (from.ip(), to.ip()) {
            (IpAddr::V4(src), IpAddr::V4(dst)) => {
                let total = 20 + udp_len;
                let mut h = [0u8; 20];
                h[0] = 0x45;
                h[2..4].copy_from_slice(&u16::try_from(total).map_err(too_big)?.to_be_bytes());
                h[6] = 0x40; // don't fragment
                h[8] = 64; // TTL
                h[9] = 17; // UDP
                h[12..16].copy_from_slice(&src.octets());
                h[16..20].copy_from_slice(&dst.octets());
                let checksum = ipv4_checksum(&h);
                h[10..12].copy_from_slice(&checksum.to_be_bytes());
                h.to_vec()
            }
            (IpAddr::V6(src), IpAddr::V6(dst)) => {
                let mut h = vec![0u8; 40];
                h[0] = 0x60;
                h[4..6].copy_from_slice(&u16::try_from(udp_len).map_err(too_big)?.to_be_bytes());
                h[6] = 17;
                h[7] = 64;
                h[8..24].copy_from_slice(&src.octets());
                h[24..40].copy_from_slice(&dst.octets());
                h
            }
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "mixed address families",
                ))
            }
        };
        let mut udp = [0u8; 8];
        udp[0..2].copy_from_slice(&from.port().to_be_bytes());
        udp[2..4].copy_from_slice(&to.port().to_be_bytes());
        udp[4..6].copy_from_slice(&u16::try_from(udp_len).map_err(too_big)?.to_be_bytes());

        let captured = u32::try_from(ip_header.len() + udp_len).map_err(too_big)?;
        let secs = u32::try_from(at.as_secs()).map_err(too_big)?;
        self.out.write_all(&secs.to_le_bytes())?;
        self.out.write_all(&at.subsec_micros().to_le_bytes())?;
        self.out.write_all(&captured.to_le_bytes())?;
        self.out.write_all(&captured.to_le_bytes())?;
        self.out.write_all(&ip_header)?;
        self.out.write_all(&udp)?;
        self.out.write_all(payload)
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

fn too_big<E>(_: E) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "datagram too large for pcap")
}

fn ipv4_checksum(header: &[u8; 20]) -> u16 {
    let mut sum: u32 = header
        .chunks_exact(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_global_header_and_ipv4_record() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let from: SocketAddr = "127.0.0.1:1234".parse().unwrap();
        let to: SocketAddr = "127.0.0.1:443".parse().unwrap();
        w.write_datagram(Duration::from_millis(1500), from, to, b"hello")
            .unwrap();
        let bytes = w.into_inner().unwrap();
        assert_eq!(bytes.len(), 24 + 16 + 20 + 8 + 5);
        assert_eq!(&bytes[20..24], &LINKTYPE_RAW.to_le_bytes());
        // Record header: 1 s, 500000 us, 33 bytes captured.
        assert_eq!(&bytes[24..28], &1u32.to_le_bytes());
        assert_eq!(&bytes[28..32], &500_000u32.to_le_bytes());
        assert_eq!(&bytes[32..36], &33u32.to_le_bytes());
        // The IPv4 header checksums to zero when verified.
        let ip: [u8; 20] = bytes[40..60].try_into().unwrap();
        assert_eq!(ipv4_checksum(&ip), 0);
        assert_eq!(&bytes[60..62], &1234u16.to_be_bytes());
        assert_eq!(&bytes[68..], b"hello");
    }

    #[test]
    fn mixed_families_are_rejected() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let from: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let to: SocketAddr = "[::1]:2".parse().unwrap();
        assert!(w.write_datagram(Duration::ZERO, from, to, b"x").is_err());
    }
}
