//! The receive side of one HTTP/3 stream: what kind of stream it is (RFC 9114 §6) and where
//! the frame parser stands. Frame headers are gathered a byte range at a time from the
//! transport, so a frame split anywhere across packets parses the same.

use super::frame;
use super::qlog::h3_qlog;
use super::{Error, Result};
use crate::Connection;

/// What a stream carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A bidirectional request stream.
    Request,
    /// A unidirectional stream from the peer whose type is not read yet.
    UniUnknown,
    /// The peer's control stream.
    Control,
    /// The peer's QPACK encoder stream.
    QpackEncoder,
    /// The peer's QPACK decoder stream.
    QpackDecoder,
    /// A stream type we ignore (reserved, unknown): read and dropped.
    Ignored,
}

/// Where the parser of a stream stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// A uni stream's type varint.
    StreamType,
    /// A frame header (type, length).
    FrameHeader,
    /// A frame payload that is kept whole (HEADERS, SETTINGS ...).
    Payload { ty: u64, len: usize },
    /// A DATA payload the application reads with `recv_body`.
    Data { remaining: u64 },
    /// The payload of a frame we skip.
    Skip { remaining: u64 },
    /// A HEADERS section waits for QPACK encoder-stream bytes.
    Blocked,
    /// Raw bytes (QPACK streams) or nothing more to parse.
    Raw,
    /// The stream's end was reached.
    Finished,
}

/// How skipping a frame's payload went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skipped {
    /// All of it: the next frame header follows.
    All,
    /// Part of it; the rest has not arrived yet.
    Part,
    /// The stream ended inside the frame.
    EndedInside,
}

/// The receive state of one stream.
#[derive(Debug)]
pub struct RecvStream {
    /// What the stream carries.
    pub kind: Kind,
    /// The parser's state.
    pub state: State,
    hdr: [u8; 16],
    hdr_len: usize,
    /// The payload gathered for [`State::Payload`].
    pub payload: Vec<u8>,
    /// Whether the transport reported the stream's end.
    pub fin: bool,
    /// Header sections received (request/response, interim and trailers).
    pub header_sections: u32,
    /// A final response (2xx-5xx) arrived (clients).
    pub final_response: bool,
    /// Trailers arrived: no more frames may follow but unknown ones.
    pub trailers: bool,
    /// A CONNECT tunnel: after its headers only DATA and unknown frames may come (§4.4).
    pub tunnel: bool,
    /// `content-length` of the message, if given.
    pub content_length: Option<u64>,
    /// DATA payload bytes received.
    pub data_received: u64,
    /// A Data event was returned and the application has not drained the stream since.
    pub data_event_pending: bool,
    /// Finished was queued.
    pub finished_reported: bool,
    /// The request's `priority` header value (servers).
    pub priority: Option<Vec<u8>>,
}

impl RecvStream {
    /// The state of a new stream of `kind`.
    pub fn new(kind: Kind) -> Self {
        RecvStream {
            kind,
            state: if kind == Kind::UniUnknown {
                State::StreamType
            } else {
                State::FrameHeader
            },
            hdr: [0; 16],
            hdr_len: 0,
            payload: Vec::new(),
            fin: false,
            header_sections: 0,
            final_response: false,
            trailers: false,
            tunnel: false,
            content_length: None,
            data_received: 0,
            data_event_pending: false,
            finished_reported: false,
            priority: None,
        }
    }

    /// Reads from the transport into the header buffer up to `need` bytes; whether they are
    /// all there.
    fn fill_hdr<F: crate::BufFactory>(
        &mut self,
        conn: &mut Connection<F>,
        id: u64,
        need: usize,
    ) -> Result<bool> {
        while self.hdr_len < need {
            // Past the end the transport has nothing more (and may have freed the stream).
            if self.fin {
                return Ok(false);
            }
            match conn.stream_recv(id, &mut self.hdr[self.hdr_len..need]) {
                Ok((n, fin)) => {
                    self.hdr_len += n;
                    self.fin |= fin;
                    if n == 0 && !fin {
                        return Ok(false);
                    }
                    if fin && self.hdr_len < need {
                        return Ok(false);
                    }
                }
                Err(crate::Error::Done) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(true)
    }

    /// Reads one varint (a uni stream's type); `None` while incomplete.
    pub fn read_varint<F: crate::BufFactory>(
        &mut self,
        conn: &mut Connection<F>,
        id: u64,
    ) -> Result<Option<u64>> {
        if !self.fill_hdr(conn, id, 1)? {
            return Ok(None);
        }
        let len = octets::varint_parse_len(self.hdr[0]);
        if !self.fill_hdr(conn, id, len)? {
            return Ok(None);
        }
        let v = frame::get_varint(&self.hdr[..len]).map(|(v, _)| v);
        self.hdr_len = 0;
        v.map(Some).ok_or(Error::FrameError)
    }

    /// Reads a frame header; `None` while incomplete (check `fin` for a clean end: no byte of
    /// a header read).
    pub fn read_frame_header<F: crate::BufFactory>(
        &mut self,
        conn: &mut Connection<F>,
        id: u64,
    ) -> Result<Option<(u64, u64)>> {
        if !self.fill_hdr(conn, id, 1)? {
            return self.partial();
        }
        let type_len = octets::varint_parse_len(self.hdr[0]);
        if !self.fill_hdr(conn, id, type_len + 1)? {
            return self.partial();
        }
        let len_len = octets::varint_parse_len(self.hdr[type_len]);
        if !self.fill_hdr(conn, id, type_len + len_len)? {
            return self.partial();
        }
        let (ty, _) = frame::get_varint(&self.hdr[..type_len]).ok_or(Error::FrameError)?;
        let (len, _) =
            frame::get_varint(&self.hdr[type_len..type_len + len_len]).ok_or(Error::FrameError)?;
        self.hdr_len = 0;
        h3_qlog!(conn, q => q.frame_header_parsed(id, ty, len));
        Ok(Some((ty, len)))
    }

    /// An incomplete header: fine unless the stream ended inside it (§7.1: a frame cut short
    /// by the end of its stream is H3_FRAME_ERROR).
    fn partial(&self) -> Result<Option<(u64, u64)>> {
        if self.fin && self.hdr_len > 0 {
            return Err(Error::FrameError);
        }
        Ok(None)
    }

    /// Gathers the payload of [`State::Payload`]; whether it is complete.
    pub fn read_payload<F: crate::BufFactory>(
        &mut self,
        conn: &mut Connection<F>,
        id: u64,
        len: usize,
    ) -> Result<bool> {
        let mut buf = [0u8; 4096];
        while self.payload.len() < len {
            if self.fin {
                return Err(Error::FrameError);
            }
            let want = (len - self.payload.len()).min(buf.len());
            match conn.stream_recv(id, &mut buf[..want]) {
                Ok((n, fin)) => {
                    self.payload.extend_from_slice(&buf[..n]);
                    self.fin |= fin;
                    if fin && self.payload.len() < len {
                        return Err(Error::FrameError);
                    }
                    if n == 0 {
                        return Ok(false);
                    }
                }
                Err(crate::Error::Done) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(true)
    }

    /// Drops what arrived of the payload of [`State::Skip`], updating the state.
    pub fn skip_frame<F: crate::BufFactory>(
        &mut self,
        conn: &mut Connection<F>,
        id: u64,
        remaining: u64,
    ) -> Result<Skipped> {
        let dropped = self.skip(conn, id, remaining)?;
        if dropped == remaining {
            self.state = State::FrameHeader;
            return Ok(Skipped::All);
        }
        self.state = State::Skip {
            remaining: remaining - dropped,
        };
        Ok(if self.fin {
            Skipped::EndedInside
        } else {
            Skipped::Part
        })
    }

    /// Reads and drops up to `remaining` bytes; how many were dropped.
    pub fn skip<F: crate::BufFactory>(
        &mut self,
        conn: &mut Connection<F>,
        id: u64,
        remaining: u64,
    ) -> Result<u64> {
        let mut buf = [0u8; 4096];
        let mut dropped = 0;
        while dropped < remaining && !self.fin {
            let want = usize::try_from(remaining - dropped)
                .unwrap_or(usize::MAX)
                .min(buf.len());
            match conn.stream_recv(id, &mut buf[..want]) {
                Ok((n, fin)) => {
                    dropped += n as u64;
                    self.fin |= fin;
                    if n == 0 || fin {
                        break;
                    }
                }
                Err(crate::Error::Done) => break,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(dropped)
    }
}
