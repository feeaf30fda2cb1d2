//! The versions this library speaks and what differs between them on the wire: the Long
//! Packet Type bits (RFC 9000 §15, §17.2; RFC 9369 §3.2) and the reserved versions (RFC 9000
//! §15).

use super::Type;

/// QUIC version 1 (RFC 9000).
pub const QUIC_V1: u32 = 0x0000_0001;

/// QUIC version 2 (RFC 9369): version 1 with other constants, to keep middleboxes from
/// ossifying on version 1's.
pub const QUIC_V2: u32 = 0x6b33_43cf;

/// The versions this library speaks, in the default order of preference.
pub const SUPPORTED_VERSIONS: [u32; 2] = [QUIC_V1, QUIC_V2];

/// The packet type that the Long Packet Type bits (`bits`, 0 to 3) stand for in `version`.
/// Version 2 rotates them (RFC 9369 §3.2); every other version reads as version 1 (RFC 9000
/// §17.2), which is all that can be said of one this library does not know.
pub fn long_type_from_bits(version: u32, bits: u8) -> Type {
    let bits = if version == QUIC_V2 {
        bits.wrapping_sub(1) & 3
    } else {
        bits & 3
    };
    match bits {
        0 => Type::Initial,
        1 => Type::ZeroRTT,
        2 => Type::Handshake,
        _ => Type::Retry,
    }
}

/// The type and version of the long-header packet at the start of `b`, read from its first
/// five bytes only (nothing else is checked); `None` for a short header or fewer than five
/// bytes. The type bits read as in [`long_type_from_bits`], so a Version Negotiation packet
/// (version 0) reads as a version 1 type.
pub fn peek_long_header(b: &[u8]) -> Option<(Type, u32)> {
    let first = *b.first()?;
    if first & 0x80 == 0 {
        return None;
    }
    let v = b.get(1..5)?;
    let version = u32::from_be_bytes([v[0], v[1], v[2], v[3]]);
    Some((long_type_from_bits(version, (first & 0x30) >> 4), version))
}

/// The Long Packet Type bits of `ty` in `version` (the inverse of [`long_type_from_bits`]);
/// `None` for types without a long header of their own.
pub fn long_type_bits(version: u32, ty: Type) -> Option<u8> {
    let v1 = match ty {
        Type::Initial => 0,
        Type::ZeroRTT => 1,
        Type::Handshake => 2,
        Type::Retry => 3,
        Type::Short | Type::VersionNegotiation => return None,
    };
    Some(if version == QUIC_V2 { (v1 + 1) & 3 } else { v1 })
}

/// Whether the given QUIC version is supported.
pub fn version_is_supported(version: u32) -> bool {
    SUPPORTED_VERSIONS.contains(&version)
}

/// Whether `version` is one of the reserved versions of the form 0x?a?a?a?a that exist to
/// exercise version negotiation (RFC 9000 §15).
pub fn is_grease_version(version: u32) -> bool {
    version & 0x0f0f_0f0f == 0x0a0a_0a0a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Type;

    #[test]
    fn v1_and_v2_are_supported() {
        assert!(version_is_supported(1));
        assert!(!version_is_supported(0));
        assert!(!version_is_supported(2));
        assert!(version_is_supported(0x6b33_43cf));
        // The draft code point of v2 is not RFC 9369's version.
        assert!(!version_is_supported(0x709a_50c4));
        assert!(!version_is_supported(0xff00_001d));
    }

    #[test]
    fn v2_rotates_the_long_packet_types() {
        use Type::*;
        // RFC 9369 §3.2: Initial 0b01, 0-RTT 0b10, Handshake 0b11, Retry 0b00.
        let v2 = [(1, Initial), (2, ZeroRTT), (3, Handshake), (0, Retry)];
        let v1 = [(0, Initial), (1, ZeroRTT), (2, Handshake), (3, Retry)];
        for (bits, ty) in v2 {
            assert_eq!(long_type_from_bits(QUIC_V2, bits), ty);
            assert_eq!(long_type_bits(QUIC_V2, ty), Some(bits));
        }
        for (bits, ty) in v1 {
            assert_eq!(long_type_from_bits(QUIC_V1, bits), ty);
            assert_eq!(long_type_bits(QUIC_V1, ty), Some(bits));
            // Unknown versions read as v1.
            assert_eq!(long_type_from_bits(0x1a2a_3a4a, bits), ty);
        }
        assert_eq!(long_type_bits(QUIC_V2, Short), None);
    }
}
