//! Errors: the API's [`Error`] and the transport error codes carried on the wire.

use std::fmt;

/// A specialized [`Result`](std::result::Result) type for quiche operations.
pub type Result<T> = std::result::Result<T, Error>;

/// Transport error codes of RFC 9000 §20.1, as carried in CONNECTION_CLOSE frames of type 0x1c.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u64)]
pub enum WireErrorCode {
    /// An endpoint uses this with CONNECTION_CLOSE to signal that the connection is being closed
    /// abruptly in the absence of any error.
    NoError = 0x0,
    /// The endpoint encountered an internal error and cannot continue with the connection.
    InternalError = 0x1,
    /// The server refused to accept a new connection.
    ConnectionRefused = 0x2,
    /// An endpoint received more data than it permitted in its advertised data limits.
    FlowControlError = 0x3,
    /// An endpoint received a frame for a stream identifier that exceeded its advertised stream
    /// limit for the corresponding stream type.
    StreamLimitError = 0x4,
    /// An endpoint received a frame for a stream that was not in a state that permitted that
    /// frame.
    StreamStateError = 0x5,
    /// An endpoint received a STREAM frame or a RESET_STREAM frame containing a final size that
    /// was lower than the size of stream data that was already received, or different from a
    /// final size already established.
    FinalSizeError = 0x6,
    /// An endpoint received a frame that was badly formatted.
    FrameEncodingError = 0x7,
    /// An endpoint received transport parameters that were badly formatted, included an invalid
    /// value, omitted a mandatory parameter, included a forbidden one, or were otherwise in error.
    TransportParameterError = 0x8,
    /// The number of connection IDs provided by the peer exceeds the advertised
    /// active_connection_id_limit.
    ConnectionIdLimitError = 0x9,
    /// An endpoint detected an error with protocol compliance that was not covered by more
    /// specific error codes.
    ProtocolViolation = 0xa,
    /// A server received a client Initial that contained an invalid Token field.
    InvalidToken = 0xb,
    /// The application or application protocol caused the connection to be closed.
    ApplicationError = 0xc,
    /// An endpoint has received more data in CRYPTO frames than it can buffer.
    CryptoBufferExceeded = 0xd,
    /// An endpoint detected errors in performing key updates.
    KeyUpdateError = 0xe,
    /// An endpoint has reached the confidentiality or integrity limit for the AEAD algorithm.
    AeadLimitReached = 0xf,
    /// No viable network path exists.
    NoViablePath = 0x10,
    /// Version negotiation was not genuine: a downgrade or inconsistent Version Information
    /// (RFC 9368 §4, §10.2).
    VersionNegotiationError = 0x11,
}

impl WireErrorCode {
    /// Base of the CRYPTO_ERROR range (0x0100-0x01ff): the TLS alert is added to it.
    pub const CRYPTO_ERROR_BASE: u64 = 0x100;
}

/// A QUIC error.
///
/// `Done` is not an error in the usual sense: it means "nothing more to do right now", as in
/// quiche. Every other variant maps to a transport error code through [`Error::to_wire`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// There is no more work to do.
    Done,
    /// The provided buffer is too short.
    BufferTooShort,
    /// The provided packet cannot be parsed because its version is unknown.
    UnknownVersion,
    /// The provided packet cannot be parsed because it contains an invalid frame
    /// (FRAME_ENCODING_ERROR on the wire).
    InvalidFrame,
    /// The provided packet cannot be parsed.
    InvalidPacket,
    /// The operation cannot be completed because the connection is in an invalid state.
    InvalidState,
    /// The operation cannot be completed because the stream is in an invalid state. The stream
    /// ID is provided as associated data.
    InvalidStreamState(u64),
    /// The peer's transport params cannot be parsed.
    InvalidTransportParam,
    /// A cryptographic operation failed.
    CryptoFail,
    /// The TLS handshake failed.
    TlsFail,
    /// The peer violated the local flow control limits.
    FlowControl,
    /// The peer violated the local stream limits.
    StreamLimit,
    /// The specified stream was stopped by the peer. The error code sent as part of the
    /// STOP_SENDING frame is provided as associated data.
    StreamStopped(u64),
    /// The specified stream was reset by the peer. The error code sent as part of the
    /// RESET_STREAM frame is provided as associated data.
    StreamReset(u64),
    /// The received data exceeds the stream's final size.
    FinalSize,
    /// Error in congestion control.
    CongestionControl,
    /// Too many identifiers were provided.
    IdLimit,
    /// Not enough available identifiers.
    OutOfIdentifiers,
    /// Error in key update.
    KeyUpdate,
    /// The peer sent more data in CRYPTO frames than we can buffer.
    CryptoBufferExceeded,
    /// The peer violated the protocol in a way no more specific variant describes
    /// (PROTOCOL_VIOLATION on the wire), e.g. a frame in a packet type that may not carry it.
    ProtocolViolation,
    /// A client Initial carried an invalid token (INVALID_TOKEN on the wire).
    InvalidToken,
    /// The TLS stack raised the given alert (CRYPTO_ERROR 0x100 + alert on the wire).
    TlsAlert(u8),
    /// The AEAD confidentiality or integrity limit was reached.
    AeadLimitReached,
    /// The peer acknowledged a packet number that was never sent (PROTOCOL_VIOLATION on the
    /// wire, RFC 9000 §13.1).
    InvalidAckRange,
    /// The peer acknowledged a packet number this endpoint skipped on purpose: it acknowledges
    /// what it did not receive, to make the sender go faster (RFC 9000 §21.4; PROTOCOL_VIOLATION
    /// on the wire).
    OptimisticAckDetected,
    /// Declared for compatibility with quiche's `Error`; this library does not return it
    /// (quiche uses it for an unusable connection ID at connection setup).
    InvalidDcidInitialization,
}

impl Error {
    /// The transport error code that a CONNECTION_CLOSE frame carries for this error.
    pub fn to_wire(self) -> u64 {
        let code = match self {
            Error::Done => WireErrorCode::NoError,
            Error::InvalidFrame => WireErrorCode::FrameEncodingError,
            Error::InvalidStreamState(_) => WireErrorCode::StreamStateError,
            Error::InvalidTransportParam => WireErrorCode::TransportParameterError,
            Error::FlowControl => WireErrorCode::FlowControlError,
            Error::StreamLimit => WireErrorCode::StreamLimitError,
            Error::FinalSize => WireErrorCode::FinalSizeError,
            Error::IdLimit => WireErrorCode::ConnectionIdLimitError,
            Error::KeyUpdate => WireErrorCode::KeyUpdateError,
            Error::CryptoBufferExceeded => WireErrorCode::CryptoBufferExceeded,
            Error::ProtocolViolation
            | Error::InvalidPacket
            | Error::InvalidAckRange
            | Error::OptimisticAckDetected => WireErrorCode::ProtocolViolation,
            Error::InvalidToken => WireErrorCode::InvalidToken,
            Error::AeadLimitReached => WireErrorCode::AeadLimitReached,
            // TLS handshake_failure (40) when no more specific alert is known.
            Error::TlsFail => return WireErrorCode::CRYPTO_ERROR_BASE + 40,
            Error::TlsAlert(alert) => return WireErrorCode::CRYPTO_ERROR_BASE + u64::from(alert),
            Error::BufferTooShort
            | Error::UnknownVersion
            | Error::InvalidState
            | Error::CryptoFail
            | Error::StreamStopped(_)
            | Error::StreamReset(_)
            | Error::CongestionControl
            | Error::OutOfIdentifiers
            | Error::InvalidDcidInitialization => WireErrorCode::InternalError,
        };
        code as u64
    }

    /// The negative error code of the C API (`QUICHE_ERR_*`), with quiche's numbering.
    pub fn to_c(self) -> i32 {
        match self {
            Error::Done => -1,
            Error::BufferTooShort => -2,
            Error::UnknownVersion => -3,
            Error::InvalidFrame => -4,
            Error::InvalidPacket | Error::ProtocolViolation | Error::InvalidToken => -5,
            Error::InvalidState => -6,
            Error::InvalidStreamState(_) => -7,
            Error::InvalidTransportParam => -8,
            Error::CryptoFail | Error::AeadLimitReached => -9,
            Error::TlsFail | Error::TlsAlert(_) => -10,
            Error::FlowControl => -11,
            Error::StreamLimit => -12,
            Error::FinalSize => -13,
            Error::CongestionControl => -14,
            Error::StreamStopped(_) => -15,
            Error::StreamReset(_) => -16,
            Error::IdLimit => -17,
            Error::OutOfIdentifiers => -18,
            Error::KeyUpdate => -19,
            Error::CryptoBufferExceeded => -20,
            Error::InvalidAckRange => -21,
            Error::OptimisticAckDetected => -22,
            Error::InvalidDcidInitialization => -23,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for Error {}

impl From<octets::BufferTooShortError> for Error {
    fn from(_: octets::BufferTooShortError) -> Self {
        Error::BufferTooShort
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_codes_follow_rfc9000_section_20() {
        assert_eq!(Error::InvalidFrame.to_wire(), 0x7);
        assert_eq!(Error::FlowControl.to_wire(), 0x3);
        assert_eq!(Error::StreamLimit.to_wire(), 0x4);
        assert_eq!(Error::InvalidStreamState(4).to_wire(), 0x5);
        assert_eq!(Error::FinalSize.to_wire(), 0x6);
        assert_eq!(Error::InvalidTransportParam.to_wire(), 0x8);
        assert_eq!(Error::IdLimit.to_wire(), 0x9);
        assert_eq!(Error::ProtocolViolation.to_wire(), 0xa);
        assert_eq!(Error::CryptoBufferExceeded.to_wire(), 0xd);
        assert_eq!(Error::KeyUpdate.to_wire(), 0xe);
        assert_eq!(Error::TlsAlert(120).to_wire(), 0x178);
    }

    #[test]
    fn c_codes_follow_quiche_numbering() {
        assert_eq!(Error::Done.to_c(), -1);
        assert_eq!(Error::StreamStopped(0).to_c(), -15);
        assert_eq!(Error::StreamReset(0).to_c(), -16);
        assert_eq!(Error::CryptoBufferExceeded.to_c(), -20);
    }
}
