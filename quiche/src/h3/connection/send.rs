//! Sending: requests, responses, additional header sections, bodies, GOAWAY and
//! PRIORITY_UPDATE (RFC 9114 §4.1, §5.2; RFC 9218 §7).

use super::*;

/// Request streams: sending.
impl Connection {
    fn check_open(&self) -> Result<()> {
        match self.closed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Writes a HEADERS frame of `headers` on stream `id`: all of it or none (the stream
    /// needs room for the whole frame).
    fn send_headers<T: NameValue, F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
        headers: &[T],
        fin: bool,
    ) -> Result<()> {
        let mut section = Vec::new();
        let fields = headers.iter().map(|h| (h.name(), h.value()));
        self.qpack_encoder
            .encode(id, fields, &mut section)
            .map_err(|_| Error::InternalError)?;
        let mut framed = Vec::with_capacity(section.len() + 9);
        put_frame_header(&mut framed, frame::HEADERS, section.len() as u64);
        framed.extend_from_slice(&section);
        // QPACK instructions the section needs go out first (they may still arrive later;
        // the peer then holds the section until they do).
        self.flush(conn);
        let written = match conn.stream_send(id, &framed, fin) {
            Ok(n) => n,
            Err(crate::Error::Done) => 0,
            Err(e) => return Err(e.into()),
        };
        h3_qlog!(conn, q => {
            let fields = headers.iter().map(|h| (h.name(), h.value()));
            let len = Some(section.len() as u64);
            q.headers(qlog::Framing::Created, id, len, fields)
        });
        if written < framed.len() {
            // The encoder's state already includes this section: what did not fit is kept
            // and written before anything else on the stream.
            self.out.insert(id, framed.split_off(written));
            if fin {
                self.out_fin.insert(id);
            }
        }
        Ok(())
    }

    /// Sends a request; returns its stream ID. `StreamBlocked` when the peer allows no new
    /// stream now; `FrameUnexpected` after the server's GOAWAY covers new requests.
    pub fn send_request<T: NameValue, F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        headers: &[T],
        fin: bool,
    ) -> Result<u64> {
        self.check_open()?;
        let id = self.next_request_id;
        if self.goaway_received.is_some_and(|g| id >= g) {
            return Err(Error::FrameUnexpected);
        }
        if conn.peer_streams_left_bidi() == 0 {
            return Err(Error::TransportError(crate::Error::StreamLimit));
        }
        h3_qlog!(conn, q => q.stream_type_set(crate::qlog::Owner::Local, id, None));
        self.send_headers(conn, id, headers, fin)?;
        let method = headers
            .iter()
            .find(|h| h.name() == b":method")
            .map(|h| h.value());
        if method == Some(b"HEAD") {
            self.head_requests.insert(id);
        }
        if method == Some(b"CONNECT") && !headers.iter().any(|h| h.name() == b":protocol") {
            self.connect_requests.insert(id);
        }
        self.next_request_id += 4;
        Ok(id)
    }

    /// Sends a response's headers on the request's stream, at the priority the request asked
    /// for in its `priority` header (RFC 9218 §4), or the default.
    pub fn send_response<T: NameValue, F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        headers: &[T],
        fin: bool,
    ) -> Result<()> {
        let priority = self
            .streams
            .get(&stream_id)
            .and_then(|s| s.priority.as_deref())
            .and_then(|v| Priority::try_from(v).ok())
            .unwrap_or_default();
        self.send_response_with_priority(conn, stream_id, headers, &priority, fin)
    }

    /// Sends a response's headers and schedules the stream at `priority`.
    pub fn send_response_with_priority<T: NameValue, F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        headers: &[T],
        priority: &Priority,
        fin: bool,
    ) -> Result<()> {
        self.check_open()?;
        if !self.is_server {
            return Err(Error::FrameUnexpected);
        }
        conn.stream_priority(stream_id, priority.urgency(), priority.incremental())?;
        self.send_headers(conn, stream_id, headers, fin)
    }

    /// Sends interim (1xx) response headers, or trailers (`is_trailer_section`).
    pub fn send_additional_headers<T: NameValue, F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        headers: &[T],
        is_trailer_section: bool,
        fin: bool,
    ) -> Result<()> {
        self.check_open()?;
        let _ = is_trailer_section;
        self.send_headers(conn, stream_id, headers, fin)
    }

    /// [`Connection::send_additional_headers`], then sets the stream's priority (RFC 9218
    /// urgency and incremental flag), e.g. for a final response after interim ones.
    #[allow(clippy::too_many_arguments)]
    pub fn send_additional_headers_with_priority<T: NameValue, F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        headers: &[T],
        priority: &Priority,
        is_trailer_section: bool,
        fin: bool,
    ) -> Result<()> {
        self.send_additional_headers(conn, stream_id, headers, is_trailer_section, fin)?;
        conn.stream_priority(stream_id, priority.urgency(), priority.incremental())?;
        Ok(())
    }

    /// Sends body bytes as a DATA frame; returns how many were accepted (fewer when the
    /// stream is short of room; then wait until it is writable), `Error::Done` if none.
    pub fn send_body<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        body: &[u8],
        fin: bool,
    ) -> Result<usize> {
        self.send_data_frame(conn, stream_id, body.len(), fin, |conn, len, fin| {
            conn.stream_send(stream_id, &body[..len], fin)
        })
    }

    /// [`Connection::send_body`] of a buffer the stream takes over without copying it (see
    /// [`crate::Connection::stream_send_zc`]). On a partial write `body` is left holding the
    /// bytes not sent, to be offered again once the stream is writable.
    pub fn send_body_zc<F>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        body: &mut F::Buf,
        fin: bool,
    ) -> Result<usize>
    where
        F: crate::BufFactory,
        F::Buf: crate::BufSplit,
    {
        let total = body.as_ref().len();
        self.send_data_frame(conn, stream_id, total, fin, |conn, len, fin| {
            let rest = crate::BufSplit::split_at(body, len);
            let (n, left) = conn.stream_send_zc(stream_id, body.clone(), fin)?;
            if left.is_some() {
                return Err(crate::Error::InvalidState);
            }
            if len < total {
                *body = rest;
            }
            Ok(n)
        })
    }

    /// Writes a DATA frame header for as much of a body of `body_len` bytes as the stream
    /// takes whole with its header, then `write_body(conn, len, fin)` writes those `len`
    /// bytes. Returns `len`.
    fn send_data_frame<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        body_len: usize,
        fin: bool,
        write_body: impl FnOnce(&mut crate::Connection<F>, usize, bool) -> crate::Result<usize>,
    ) -> Result<usize> {
        self.check_open()?;
        self.flush(conn);
        if self.out.contains_key(&stream_id) {
            // The headers are not all written yet.
            return Err(Error::Done);
        }
        if body_len == 0 {
            if fin {
                conn.stream_send(stream_id, &[], true)?;
            }
            return Ok(0);
        }
        let capacity = match conn.stream_capacity(stream_id) {
            Ok(c) => c,
            Err(crate::Error::Done) => 0,
            Err(e) => return Err(e.into()),
        };
        // A frame header of at most 1 + 8 bytes: send only when some body fits after it.
        let mut header = [0u8; 9];
        let room = capacity.saturating_sub(1 + octets::varint_len(body_len as u64));
        if room == 0 {
            return Err(Error::Done);
        }
        let len = body_len.min(room);
        let hdr_len = {
            let mut b = octets::OctetsMut::with_slice(&mut header);
            b.put_varint(frame::DATA)
                .map_err(|_| Error::InternalError)?;
            b.put_varint(len as u64).map_err(|_| Error::InternalError)?;
            b.off()
        };
        let fin = fin && len == body_len;
        let n = conn.stream_send(stream_id, &header[..hdr_len], false)?;
        if n < hdr_len {
            return Err(Error::InternalError);
        }
        let written = write_body(conn, len, fin)?;
        if written < len {
            return Err(Error::InternalError);
        }
        h3_qlog!(conn, q => {
            let framing = qlog::Framing::Created;
            q.frame(framing, stream_id, frame::DATA, len as u64, None)
        });
        Ok(len)
    }

    /// Sends GOAWAY with `id` (a server: the first request stream it will not process; a
    /// client: a push ID). Identifiers may only shrink (§5.2).
    pub fn send_goaway<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
    ) -> Result<()> {
        self.check_open()?;
        if self.is_server && (id & 0x3) != 0 {
            return Err(Error::IdError);
        }
        if self.goaway_sent.is_some_and(|g| id > g) {
            return Err(Error::IdError);
        }
        self.goaway_sent = Some(id);
        let mut payload = Vec::new();
        put_varint(&mut payload, id);
        let control = self.out.entry(self.control_id).or_default();
        put_frame(control, frame::GOAWAY, &payload);
        h3_qlog!(conn, q => {
            let (control, len) = (self.control_id, payload.len() as u64);
            q.frame(qlog::Framing::Created, control, frame::GOAWAY, len, Some(&payload))
        });
        self.flush(conn);
        Ok(())
    }

    /// Sends PRIORITY_UPDATE for the request on `stream_id` (clients, RFC 9218 §7.1).
    pub fn send_priority_update_for_request<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        priority: &Priority,
    ) -> Result<()> {
        self.check_open()?;
        if self.is_server || !is_bidi(stream_id) || !is_client_initiated(stream_id) {
            return Err(Error::FrameUnexpected);
        }
        let mut payload = Vec::new();
        put_varint(&mut payload, stream_id);
        payload.extend_from_slice(&priority.to_field_value());
        let control = self.out.entry(self.control_id).or_default();
        put_frame(control, frame::PRIORITY_UPDATE_REQUEST, &payload);
        h3_qlog!(conn, q => {
            let (ty, len) = (frame::PRIORITY_UPDATE_REQUEST, payload.len() as u64);
            q.frame(qlog::Framing::Created, self.control_id, ty, len, Some(&payload))
        });
        self.flush(conn);
        Ok(())
    }
}
