//! Receiving on request streams (RFC 9114 §4.1): header sections, bodies, trailers and interim
//! responses, and [`Connection::recv_body`].

use super::*;

/// Request streams: receiving.
impl Connection {
    /// A request stream's frames (§4.1): HEADERS, DATA, HEADERS (trailers); interim
    /// responses before the final one (clients); unknown frames skipped.
    pub(super) fn process_request<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
        st: &mut RecvStream,
    ) -> Flow {
        loop {
            match st.state {
                State::FrameHeader => {
                    let Some((ty, len)) = st.read_frame_header(conn, id)? else {
                        if st.fin {
                            return self.on_request_end(id, st);
                        }
                        return Ok(());
                    };
                    st.state = self.request_frame(st, ty, len)?;
                }
                State::Payload { len, .. } => {
                    if !st.read_payload(conn, id, len)? {
                        return Ok(());
                    }
                    let payload = std::mem::take(&mut st.payload);
                    st.state = State::FrameHeader;
                    match self
                        .qpack_decoder
                        .decode(id, &payload)
                        .map_err(qpack_error)?
                    {
                        qpack::Decoded::Blocked => {
                            st.state = State::Blocked;
                            h3_qlog!(conn, q => q.qpack_stream_blocked(id, true));
                            return Ok(());
                        }
                        qpack::Decoded::Fields(lines) => {
                            self.on_header_section(conn, id, st, lines)?
                        }
                    }
                    if !self.events.is_empty() {
                        // One header section at a time: the rest waits for the next poll.
                        if st.fin && st.state == State::FrameHeader && !conn.stream_readable(id) {
                            return self.on_request_end(id, st);
                        }
                        return Ok(());
                    }
                }
                State::Data { .. } => {
                    if !st.data_event_pending {
                        st.data_event_pending = true;
                        self.events.push_back((id, Event::Data));
                    }
                    return Ok(());
                }
                State::Skip { remaining } => match st.skip_frame(conn, id, remaining)? {
                    Skipped::All => {}
                    Skipped::Part => return Ok(()),
                    Skipped::EndedInside => return Err(Error::FrameError.into()),
                },
                State::Blocked => {
                    // The section waits for the encoder stream; meanwhile only a reset (or the
                    // end) matters, and it must be taken or the stream stays readable.
                    return match conn.stream_recv(id, &mut []) {
                        Ok((_, fin)) => {
                            st.fin |= fin;
                            Ok(())
                        }
                        Err(crate::Error::Done) => Ok(()),
                        Err(e) => Err(Error::from(e).into()),
                    };
                }
                State::Raw | State::StreamType | State::Finished => return Ok(()),
            }
        }
    }

    /// The state a request-stream frame leads to, or the error it is.
    fn request_frame(
        &self,
        st: &RecvStream,
        ty: u64,
        len: u64,
    ) -> std::result::Result<State, Fault> {
        match ty {
            frame::HEADERS => {
                // After trailers, or in a CONNECT tunnel (§4.1, §4.4).
                if st.trailers || st.tunnel {
                    return Err(Error::FrameUnexpected.into());
                }
                if len > self.max_field_section_size.min(MAX_HEADERS_PAYLOAD) {
                    // §4.2.2: beyond what we accept.
                    return Err(Fault::Stream(wire::EXCESSIVE_LOAD));
                }
                Ok(State::Payload {
                    ty,
                    len: len as usize,
                })
            }
            frame::DATA => {
                // DATA before the (final) headers, or after trailers (§4.1).
                if st.header_sections == 0 || st.trailers || (!self.is_server && !st.final_response)
                {
                    return Err(Error::FrameUnexpected.into());
                }
                if len == 0 {
                    return Ok(State::FrameHeader);
                }
                Ok(State::Data { remaining: len })
            }
            // No push ID was granted (§4.6, §7.2.5).
            frame::PUSH_PROMISE if !self.is_server => Err(Error::IdError.into()),
            frame::PUSH_PROMISE
            | frame::SETTINGS
            | frame::GOAWAY
            | frame::MAX_PUSH_ID
            | frame::CANCEL_PUSH
            | frame::PRIORITY_UPDATE_REQUEST
            | frame::PRIORITY_UPDATE_PUSH => Err(Error::FrameUnexpected.into()),
            t if frame::is_http2_reserved(t) => Err(Error::FrameUnexpected.into()),
            _ => Ok(State::Skip { remaining: len }),
        }
    }

    /// A decoded header section: checked (§4.1.2) and turned into a Headers event.
    pub(super) fn on_header_section<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
        st: &mut RecvStream,
        lines: Vec<qpack::FieldLine>,
    ) -> Flow {
        h3_qlog!(conn, q => {
            let fields = lines.iter().map(|l| (&l.name[..], &l.value[..]));
            q.headers(qlog::Framing::Parsed, id, None, fields)
        });
        let list: Vec<Header> = lines
            .iter()
            .map(|l| Header::new(&l.name, &l.value))
            .collect();
        let section = if st.header_sections > 0 && (self.is_server || st.final_response) {
            Section::Trailers
        } else if self.is_server {
            Section::Request
        } else {
            Section::Response
        };
        let checked = message::check(&list, section, self.extended_connect)
            .map_err(|_| Fault::Stream(wire::MESSAGE_ERROR))?;
        st.header_sections += 1;
        match section {
            Section::Trailers => st.trailers = true,
            Section::Request => {
                st.content_length = checked.content_length;
                st.priority = checked.priority;
                st.tunnel = checked.method.as_deref() == Some(b"CONNECT")
                    && !list.iter().any(|h| h.name() == b":protocol");
            }
            Section::Response => {
                let status = checked.status.unwrap_or(0);
                if status >= 200 {
                    st.final_response = true;
                    // Responses without content may announce a length (RFC 9110 §8.6).
                    let no_content =
                        status == 204 || status == 304 || self.head_requests.remove(&id);
                    st.tunnel = self.connect_requests.remove(&id) && status < 300;
                    st.content_length = checked.content_length.filter(|_| !no_content);
                }
            }
        }
        let more_frames = !st.fin || conn.stream_readable(id);
        self.events
            .push_back((id, Event::Headers { list, more_frames }));
        if !more_frames {
            self.on_request_end(id, st)?;
        }
        Ok(())
    }

    /// The stream's end at a frame boundary: the message must be complete (§4.1.2).
    fn on_request_end(&mut self, id: u64, st: &mut RecvStream) -> Flow {
        if st.finished_reported {
            return Ok(());
        }
        if self.is_server && st.header_sections == 0 {
            return Err(Fault::Stream(wire::REQUEST_INCOMPLETE));
        }
        if !self.is_server && !st.final_response {
            // No final response: an invalid sequence of messages (§4.1, §4.1.2).
            return Err(Fault::Stream(wire::MESSAGE_ERROR));
        }
        if st.content_length.is_some_and(|l| l != st.data_received) {
            return Err(Fault::Stream(wire::MESSAGE_ERROR));
        }
        st.state = State::Finished;
        st.finished_reported = true;
        self.finished_streams.push(id);
        self.events.push_back((id, Event::Finished));
        Ok(())
    }

    /// Reads body bytes of `stream_id` into `out`; `Error::Done` when none are ready.
    pub fn recv_body<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        out: &mut [u8],
    ) -> Result<usize> {
        self.recv_body_buf(conn, stream_id, out)
    }

    /// [`Connection::recv_body`] into a [`bytes::BufMut`], filled up to its remaining
    /// capacity (limit a growing one such as `Vec<u8>` with [`bytes::BufMut::limit`]).
    pub fn recv_body_buf<F: crate::BufFactory, OUT: bytes::BufMut>(
        &mut self,
        conn: &mut crate::Connection<F>,
        stream_id: u64,
        mut out: OUT,
    ) -> Result<usize> {
        let Some(mut st) = self.streams.remove(&stream_id) else {
            return Err(Error::Done);
        };
        let result = self.read_body(conn, stream_id, &mut st, &mut out);
        let drained = out.remaining_mut() > 0 || result.is_err();
        if drained {
            st.data_event_pending = false;
        }
        let outcome = match result {
            Ok(n) => {
                // A frame boundary may have been reached: let the parser go on (trailers,
                // the stream's end).
                let next = if matches!(st.state, State::FrameHeader) {
                    self.process_request(conn, stream_id, &mut st)
                } else {
                    Ok(())
                };
                next.map(|()| n)
            }
            Err(e) => Err(e),
        };
        match outcome {
            Ok(n) => {
                self.streams.insert(stream_id, st);
                self.flush(conn);
                if n == 0 {
                    return Err(Error::Done);
                }
                Ok(n)
            }
            Err(Fault::Stream(code)) => {
                self.reset_stream(conn, stream_id, code);
                Err(Error::MessageError)
            }
            Err(f) => Err(self.fail_on(conn, f)),
        }
    }

    /// Copies DATA payload bytes, crossing into the next DATA frame when one follows.
    fn read_body<F: crate::BufFactory, B: bytes::BufMut>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
        st: &mut RecvStream,
        out: &mut B,
    ) -> std::result::Result<usize, Fault> {
        let mut total = 0;
        while out.remaining_mut() > 0 && !st.fin {
            let State::Data { remaining } = st.state else {
                break;
            };
            let want = usize::try_from(remaining)
                .unwrap_or(usize::MAX)
                .min(out.remaining_mut());
            let (n, fin) = match conn.stream_recv_buf(id, bytes::BufMut::limit(&mut *out, want)) {
                Ok(r) => r,
                Err(crate::Error::Done) => break,
                Err(crate::Error::StreamReset(code)) => {
                    self.events.push_back((id, Event::Reset(code)));
                    st.state = State::Finished;
                    st.finished_reported = true;
                    self.finished_streams.push(id);
                    break;
                }
                Err(e) => return Err(Error::from(e).into()),
            };
            total += n;
            st.data_received += n as u64;
            st.fin |= fin;
            let left = remaining - n as u64;
            st.state = if left == 0 {
                State::FrameHeader
            } else {
                State::Data { remaining: left }
            };
            if st.content_length.is_some_and(|l| st.data_received > l) {
                return Err(Fault::Stream(wire::MESSAGE_ERROR));
            }
            if left > 0 && fin {
                return Err(Error::FrameError.into());
            }
            if left == 0 {
                // The next frame, if it is DATA, continues the body.
                match st.read_frame_header(conn, id)? {
                    Some((ty, len)) => st.state = self.request_frame(st, ty, len)?,
                    None => break,
                }
            }
            if n == 0 {
                break;
            }
        }
        Ok(total)
    }
}
