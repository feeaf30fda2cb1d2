//! Transport parameters as qlog's `transport:parameters_set` event: for the connection's own
//! trace, and for applications through quiche's [`TransportParams::to_qlog`].

use ::qlog::events::connectivity::TransportOwner;
use ::qlog::events::quic::{self as q, TransportParametersSet};
use ::qlog::events::EventData;

use super::frame_log::hex;
use super::Owner;
use crate::crypto::Algorithm;
use crate::transport_params::{TransportParams, UnknownTransportParameter};

impl TransportParams {
    /// The parameters as a qlog `transport:parameters_set` event, set by `owner` (quiche:
    /// `TransportInitiator`, the name of qlog 0.18, whose schema stock qvis does not open; this
    /// crate writes qlog 0.16's), with the TLS cipher if known. Parameters newer than the
    /// schema and the peer's unknown ones go in `unknown_parameters`.
    pub fn to_qlog(&self, owner: TransportOwner, cipher: Option<Algorithm>) -> EventData {
        let owner = match owner {
            TransportOwner::Local => Owner::Local,
            TransportOwner::Remote => Owner::Remote,
        };
        let mut event = params_to_qlog(owner, self);
        event.tls_cipher = cipher.map(|c| format!("{c:?}"));
        EventData::TransportParametersSet(event)
    }
}

impl From<UnknownTransportParameter<Vec<u8>>> for q::UnknownTransportParameter {
    fn from(p: UnknownTransportParameter<Vec<u8>>) -> Self {
        q::UnknownTransportParameter {
            id: p.id,
            value: hex(&p.value),
        }
    }
}

pub(super) fn params_to_qlog(owner: Owner, p: &TransportParams) -> TransportParametersSet {
    let cid = |c: &Option<crate::packet::ConnectionId<'static>>| c.as_ref().map(|c| hex(c));
    TransportParametersSet {
        owner: Some(match owner {
            Owner::Local => TransportOwner::Local,
            Owner::Remote => TransportOwner::Remote,
        }),
        original_destination_connection_id: cid(&p.original_destination_connection_id),
        initial_source_connection_id: cid(&p.initial_source_connection_id),
        retry_source_connection_id: cid(&p.retry_source_connection_id),
        stateless_reset_token: p.stateless_reset_token.map(|t| hex(&t.to_be_bytes())),
        disable_active_migration: Some(p.disable_active_migration),
        max_idle_timeout: Some(p.max_idle_timeout),
        max_udp_payload_size: Some(u32::try_from(p.max_udp_payload_size).unwrap_or(u32::MAX)),
        ack_delay_exponent: Some(u16::try_from(p.ack_delay_exponent).unwrap_or(u16::MAX)),
        max_ack_delay: Some(u16::try_from(p.max_ack_delay).unwrap_or(u16::MAX)),
        active_connection_id_limit: Some(u32::try_from(p.active_conn_id_limit).unwrap_or(u32::MAX)),
        initial_max_data: Some(p.initial_max_data),
        initial_max_stream_data_bidi_local: Some(p.initial_max_stream_data_bidi_local),
        initial_max_stream_data_bidi_remote: Some(p.initial_max_stream_data_bidi_remote),
        initial_max_stream_data_uni: Some(p.initial_max_stream_data_uni),
        initial_max_streams_bidi: Some(p.initial_max_streams_bidi),
        initial_max_streams_uni: Some(p.initial_max_streams_uni),
        preferred_address: p.preferred_address.as_ref().map(|a| q::PreferredAddress {
            ip_v4: a.ipv4.map_or_else(String::new, |s| s.ip().to_string()),
            ip_v6: a.ipv6.map_or_else(String::new, |s| s.ip().to_string()),
            port_v4: a.ipv4.map_or(0, |s| s.port()),
            port_v6: a.ipv6.map_or(0, |s| s.port()),
            connection_id: hex(&a.connection_id),
            stateless_reset_token: hex(&a.stateless_reset_token),
        }),
        unknown_parameters: extension_params(p),
        ..Default::default()
    }
}

/// Parameters defined after qlog 0.16's schema, logged as "unknown" ones with their wire IDs.
fn extension_params(p: &TransportParams) -> Vec<q::UnknownTransportParameter> {
    let mut out = Vec::new();
    // Varint values as their encoding: max_datagram_frame_size (RFC 9221 §3) and
    // min_ack_delay (draft-ietf-quic-ack-frequency-12 §3).
    let varint_params = [
        (0x20, p.max_datagram_frame_size),
        (0xff04_de1b, p.min_ack_delay),
    ];
    for (id, value) in varint_params {
        let Some(value) = value else {
            continue;
        };
        let mut b = [0u8; 8];
        let mut o = octets::OctetsMut::with_slice(&mut b);
        let n = o.put_varint(value).map(|w| w.len()).unwrap_or(0);
        out.push(q::UnknownTransportParameter {
            id,
            value: hex(b.get(..n).unwrap_or(&[])),
        });
    }
    if let Some(unknown) = &p.unknown_params {
        out.extend(
            unknown
                .into_iter()
                .cloned()
                .map(q::UnknownTransportParameter::from),
        );
    }
    if p.grease_quic_bit {
        // grease_quic_bit (RFC 9287 §3), a zero-length parameter.
        out.push(q::UnknownTransportParameter {
            id: 0x2ab2,
            value: String::new(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport_params::UnknownTransportParameters;

    #[test]
    fn to_qlog_carries_owner_cipher_and_unknown_parameters() {
        let mut unknown = UnknownTransportParameters {
            capacity: 100,
            parameters: Vec::new(),
        };
        unknown
            .push(UnknownTransportParameter {
                id: 0x1f2e,
                value: &[0xab, 0xcd],
            })
            .unwrap();
        let tp = TransportParams {
            initial_max_data: 1234,
            unknown_params: Some(unknown),
            ..TransportParams::default()
        };
        let EventData::TransportParametersSet(ev) =
            tp.to_qlog(TransportOwner::Remote, Some(Algorithm::ChaCha20Poly1305))
        else {
            panic!("not a parameters_set event");
        };
        assert_eq!(ev.owner, Some(TransportOwner::Remote));
        assert_eq!(ev.tls_cipher.as_deref(), Some("ChaCha20Poly1305"));
        assert_eq!(ev.initial_max_data, Some(1234));
        assert_eq!(
            ev.unknown_parameters,
            vec![q::UnknownTransportParameter {
                id: 0x1f2e,
                value: "abcd".to_string(),
            }]
        );
        let EventData::TransportParametersSet(local) = tp.to_qlog(TransportOwner::Local, None)
        else {
            panic!("not a parameters_set event");
        };
        assert_eq!(local.owner, Some(TransportOwner::Local));
        assert_eq!(local.tls_cipher, None);
    }
}
