//! HTTP/3 errors: quiche's `h3::Error` variants and the RFC 9114 §8.1 codes they carry.

use std::fmt;

/// An HTTP/3 error. `Done` means "nothing to do now", as in the transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// There is no error or no work to do.
    Done,
    /// The provided buffer is too short.
    BufferTooShort,
    /// Internal error in the HTTP/3 stack.
    InternalError,
    /// The peer's behaviour would make us use too many resources.
    ExcessiveLoad,
    /// A stream ID or push ID was used wrongly.
    IdError,
    /// The peer opened a stream it may not open.
    StreamCreationError,
    /// A critical (control or QPACK) stream was closed.
    ClosedCriticalStream,
    /// The control stream did not start with SETTINGS.
    MissingSettings,
    /// A frame arrived where it is not allowed.
    FrameUnexpected,
    /// A frame was malformed.
    FrameError,
    /// QPACK could not decode a header section.
    QpackDecompressionFailed,
    /// An error of the QUIC transport.
    TransportError(crate::Error),
    /// The stream has no room for the data now: try again when it is writable.
    StreamBlocked,
    /// A setting was invalid.
    SettingsError,
    /// The server rejected the request.
    RequestRejected,
    /// The request or response was cancelled.
    RequestCancelled,
    /// The stream ended before the request was complete.
    RequestIncomplete,
    /// A malformed HTTP message.
    MessageError,
    /// The TCP connection of a CONNECT request failed.
    ConnectError,
    /// The request should be retried over HTTP/1.1.
    VersionFallback,
}

/// The HTTP/3 error codes of RFC 9114 §8.1, as quiche names them: `code as u64` is the value
/// sent in CONNECTION_CLOSE, RESET_STREAM and STOP_SENDING. QPACK's codes (RFC 9204 §6) are in
/// [`wire`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireErrorCode {
    /// H3_NO_ERROR: the stream or connection ends without an error.
    NoError = 0x100,
    /// H3_GENERAL_PROTOCOL_ERROR: a protocol violation no more precise code describes.
    GeneralProtocolError = 0x101,
    /// H3_INTERNAL_ERROR: a failure of the HTTP/3 stack itself.
    InternalError = 0x102,
    /// H3_STREAM_CREATION_ERROR: the peer opened a stream it may not open.
    StreamCreationError = 0x103,
    /// H3_CLOSED_CRITICAL_STREAM: a stream the connection needs was closed or reset.
    ClosedCriticalStream = 0x104,
    /// H3_FRAME_UNEXPECTED: a frame not allowed where it arrived.
    FrameUnexpected = 0x105,
    /// H3_FRAME_ERROR: a frame whose layout or size is wrong.
    FrameError = 0x106,
    /// H3_EXCESSIVE_LOAD: the peer makes the endpoint spend too much.
    ExcessiveLoad = 0x107,
    /// H3_ID_ERROR: a stream or push ID used wrongly.
    IdError = 0x108,
    /// H3_SETTINGS_ERROR: a SETTINGS frame's content is invalid.
    SettingsError = 0x109,
    /// H3_MISSING_SETTINGS: the control stream did not begin with SETTINGS.
    MissingSettings = 0x10a,
    /// H3_REQUEST_REJECTED: the server refused the request without processing it.
    RequestRejected = 0x10b,
    /// H3_REQUEST_CANCELLED: the request or its response is no longer wanted.
    RequestCancelled = 0x10c,
    /// H3_REQUEST_INCOMPLETE: the request stream ended before the request was complete.
    RequestIncomplete = 0x10d,
    /// H3_MESSAGE_ERROR: a malformed HTTP message.
    MessageError = 0x10e,
    /// H3_CONNECT_ERROR: the connection of a CONNECT request failed.
    ConnectError = 0x10f,
    /// H3_VERSION_FALLBACK: the request should be retried over HTTP/1.1.
    VersionFallback = 0x110,
}

/// HTTP/3 error codes (RFC 9114 §8.1) and QPACK's (RFC 9204 §6) as plain integers.
pub mod wire {
    use super::WireErrorCode as W;

    /// H3_NO_ERROR.
    pub const NO_ERROR: u64 = W::NoError as u64;
    /// H3_GENERAL_PROTOCOL_ERROR.
    pub const GENERAL_PROTOCOL_ERROR: u64 = W::GeneralProtocolError as u64;
    /// H3_INTERNAL_ERROR.
    pub const INTERNAL_ERROR: u64 = W::InternalError as u64;
    /// H3_STREAM_CREATION_ERROR.
    pub const STREAM_CREATION_ERROR: u64 = W::StreamCreationError as u64;
    /// H3_CLOSED_CRITICAL_STREAM.
    pub const CLOSED_CRITICAL_STREAM: u64 = W::ClosedCriticalStream as u64;
    /// H3_FRAME_UNEXPECTED.
    pub const FRAME_UNEXPECTED: u64 = W::FrameUnexpected as u64;
    /// H3_FRAME_ERROR.
    pub const FRAME_ERROR: u64 = W::FrameError as u64;
    /// H3_EXCESSIVE_LOAD.
    pub const EXCESSIVE_LOAD: u64 = W::ExcessiveLoad as u64;
    /// H3_ID_ERROR.
    pub const ID_ERROR: u64 = W::IdError as u64;
    /// H3_SETTINGS_ERROR.
    pub const SETTINGS_ERROR: u64 = W::SettingsError as u64;
    /// H3_MISSING_SETTINGS.
    pub const MISSING_SETTINGS: u64 = W::MissingSettings as u64;
    /// H3_REQUEST_REJECTED.
    pub const REQUEST_REJECTED: u64 = W::RequestRejected as u64;
    /// H3_REQUEST_CANCELLED.
    pub const REQUEST_CANCELLED: u64 = W::RequestCancelled as u64;
    /// H3_REQUEST_INCOMPLETE.
    pub const REQUEST_INCOMPLETE: u64 = W::RequestIncomplete as u64;
    /// H3_MESSAGE_ERROR.
    pub const MESSAGE_ERROR: u64 = W::MessageError as u64;
    /// H3_CONNECT_ERROR.
    pub const CONNECT_ERROR: u64 = W::ConnectError as u64;
    /// H3_VERSION_FALLBACK.
    pub const VERSION_FALLBACK: u64 = W::VersionFallback as u64;
    /// QPACK_DECOMPRESSION_FAILED (RFC 9204 §6).
    pub const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;
    /// QPACK_ENCODER_STREAM_ERROR (RFC 9204 §6).
    pub const QPACK_ENCODER_STREAM_ERROR: u64 = 0x201;
    /// QPACK_DECODER_STREAM_ERROR (RFC 9204 §6).
    pub const QPACK_DECODER_STREAM_ERROR: u64 = 0x202;
}

impl Error {
    /// The error code sent in CONNECTION_CLOSE or RESET_STREAM for this error.
    pub fn to_wire(self) -> u64 {
        match self {
            Error::Done => wire::NO_ERROR,
            Error::InternalError | Error::BufferTooShort | Error::StreamBlocked => {
                wire::INTERNAL_ERROR
            }
            Error::ExcessiveLoad => wire::EXCESSIVE_LOAD,
            Error::IdError => wire::ID_ERROR,
            Error::StreamCreationError => wire::STREAM_CREATION_ERROR,
            Error::ClosedCriticalStream => wire::CLOSED_CRITICAL_STREAM,
            Error::MissingSettings => wire::MISSING_SETTINGS,
            Error::FrameUnexpected => wire::FRAME_UNEXPECTED,
            Error::FrameError => wire::FRAME_ERROR,
            Error::QpackDecompressionFailed => wire::QPACK_DECOMPRESSION_FAILED,
            Error::TransportError(_) => wire::GENERAL_PROTOCOL_ERROR,
            Error::SettingsError => wire::SETTINGS_ERROR,
            Error::RequestRejected => wire::REQUEST_REJECTED,
            Error::RequestCancelled => wire::REQUEST_CANCELLED,
            Error::RequestIncomplete => wire::REQUEST_INCOMPLETE,
            Error::MessageError => wire::MESSAGE_ERROR,
            Error::ConnectError => wire::CONNECT_ERROR,
            Error::VersionFallback => wire::VERSION_FALLBACK,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for Error {}

impl From<crate::Error> for Error {
    fn from(e: crate::Error) -> Self {
        match e {
            crate::Error::Done => Error::Done,
            e => Error::TransportError(e),
        }
    }
}

impl From<octets::BufferTooShortError> for Error {
    fn from(_: octets::BufferTooShortError) -> Self {
        Error::BufferTooShort
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_error_codes_are_rfc_9114s_and_errors_send_them() {
        // RFC 9114 §8.1, in the table's order.
        let codes = [
            WireErrorCode::NoError,
            WireErrorCode::GeneralProtocolError,
            WireErrorCode::InternalError,
            WireErrorCode::StreamCreationError,
            WireErrorCode::ClosedCriticalStream,
            WireErrorCode::FrameUnexpected,
            WireErrorCode::FrameError,
            WireErrorCode::ExcessiveLoad,
            WireErrorCode::IdError,
            WireErrorCode::SettingsError,
            WireErrorCode::MissingSettings,
            WireErrorCode::RequestRejected,
            WireErrorCode::RequestCancelled,
            WireErrorCode::RequestIncomplete,
            WireErrorCode::MessageError,
            WireErrorCode::ConnectError,
            WireErrorCode::VersionFallback,
        ];
        for (i, code) in codes.into_iter().enumerate() {
            assert_eq!(code as u64, 0x100 + i as u64, "{code:?}");
        }
        assert_eq!(
            Error::RequestCancelled.to_wire(),
            WireErrorCode::RequestCancelled as u64
        );
        assert_eq!(Error::Done.to_wire(), WireErrorCode::NoError as u64);
        assert_eq!(
            Error::TransportError(crate::Error::Done).to_wire(),
            WireErrorCode::GeneralProtocolError as u64
        );
    }
}
