//! Receiving: [`Connection::poll`], which walks the readable streams, and the control, QPACK and
//! other unidirectional streams (RFC 9114 §6.2, RFC 9204 §4.2). Request streams are in
//! `recv_request.rs`.

use super::*;

/// Receiving: events, the control stream and the unidirectional streams.
impl Connection {
    /// The next event on any stream, as `(stream ID, event)`; `Error::Done` when there is none
    /// now. Connection errors close the QUIC connection and are returned.
    pub fn poll<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
    ) -> Result<(u64, Event)> {
        if let Some(e) = self.closed {
            return Err(e);
        }
        if let Some(ev) = self.events.pop_front() {
            return Ok(ev);
        }
        self.collect_finished(conn);
        // The critical streams first: SETTINGS and QPACK instructions unblock the rest.
        let critical = [self.peer_control, self.peer_encoder, self.peer_decoder];
        let mut ids: Vec<u64> = critical.into_iter().flatten().collect();
        ids.extend(conn.readable().filter(|id| !critical.contains(&Some(*id))));
        for id in ids {
            if let Err(e) = self.process_stream(conn, id) {
                self.flush(conn);
                return Err(self.fail(conn, e));
            }
        }
        self.flush(conn);
        self.events.pop_front().ok_or(Error::Done)
    }

    /// Forgets the request streams whose message ended and that the transport freed (both
    /// directions over), so that state does not grow with the connection's age.
    fn collect_finished<F: crate::BufFactory>(&mut self, conn: &crate::Connection<F>) {
        let streams = &mut self.streams;
        let priority_updates = &mut self.priority_updates;
        self.finished_streams.retain(|&id| {
            let gone = matches!(
                conn.stream_capacity(id),
                Err(crate::Error::InvalidStreamState(_))
            );
            if gone {
                streams.remove(&id);
                priority_updates.remove(&id);
            }
            !gone
        });
    }

    fn stream_kind(&self, id: u64) -> Option<Kind> {
        let local = is_client_initiated(id) != self.is_server;
        if is_bidi(id) {
            // Requests go from client to server only (§6.1).
            return (is_client_initiated(id)).then_some(Kind::Request);
        }
        (!local).then_some(Kind::UniUnknown)
    }

    /// Reads what a stream has, turning it into events or state changes. Connection errors
    /// are returned; stream errors reset the stream here.
    fn process_stream<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
    ) -> Result<()> {
        if !self.streams.contains_key(&id) {
            let Some(kind) = self.stream_kind(id) else {
                // A bidirectional stream opened by the server (§6.1).
                return Err(Error::StreamCreationError);
            };
            if conn.stream_finished(id) {
                // Nothing left to parse: a stream we stopped reading whose end or reset came
                // later, or one reset before we read anything. Reading takes the reset, which
                // the application hears of for a request.
                if let Err(crate::Error::StreamReset(code)) = conn.stream_recv(id, &mut []) {
                    if kind == Kind::Request {
                        self.events.push_back((id, Event::Reset(code)));
                    }
                }
                return Ok(());
            }
            if kind == Kind::Request && self.is_server && self.goaway_sent.is_some_and(|l| id >= l)
            {
                // Beyond our GOAWAY: not processed (§5.2).
                self.reset_stream(conn, id, wire::REQUEST_REJECTED);
                return Ok(());
            }
            if kind == Kind::Request && self.is_server {
                h3_qlog!(conn, q => q.stream_type_set(crate::qlog::Owner::Remote, id, None));
            }
            self.streams.insert(id, RecvStream::new(kind));
        }
        let Some(mut st) = self.streams.remove(&id) else {
            return Ok(());
        };
        let result = match st.kind {
            Kind::Request => self.process_request(conn, id, &mut st),
            Kind::UniUnknown => self.process_uni_type(conn, id, &mut st),
            Kind::Control => self.process_control(conn, id, &mut st),
            Kind::QpackEncoder | Kind::QpackDecoder => self.process_qpack(conn, id, &mut st),
            // Its reading was aborted: the transport drops what arrives.
            Kind::Ignored => Ok(()),
        };
        match result {
            Ok(()) => {
                // A stream of a type we ignore is no longer read (§6.2), and one that ended
                // before its type is over: their state goes.
                let over = st.kind == Kind::Ignored || (st.kind == Kind::UniUnknown && st.fin);
                if !over {
                    self.streams.insert(id, st);
                }
                Ok(())
            }
            Err(Fault::Stream(code)) => {
                self.reset_stream(conn, id, code);
                Ok(())
            }
            Err(Fault::Connection(Error::TransportError(crate::Error::StreamReset(code))))
                if st.kind == Kind::Request =>
            {
                // The peer reset the request stream (§4.1.1).
                self.qpack_decoder.cancel_stream(id);
                self.events.push_back((id, Event::Reset(code)));
                Ok(())
            }
            Err(Fault::Connection(Error::TransportError(crate::Error::StreamReset(_))))
                if matches!(st.kind, Kind::UniUnknown | Kind::Ignored) =>
            {
                // Uni streams may be reset before their type is read, and those of a type
                // we ignore at any time (§6.2).
                Ok(())
            }
            Err(Fault::Connection(Error::TransportError(crate::Error::StreamReset(_)))) => {
                // A critical stream may not be reset (§6.2.1, RFC 9204 §4.2).
                Err(Error::ClosedCriticalStream)
            }
            Err(f) => Err(self.fail_on(conn, f)),
        }
    }

    /// Closes the connection for a connection-level fault and returns the error (a stream
    /// fault, which callers settle themselves, ends up as an internal error).
    pub(super) fn fail_on<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        fault: Fault,
    ) -> Error {
        match fault {
            Fault::Connection(e) => self.fail(conn, e),
            Fault::ConnectionCode(e, code) => self.fail_with_code(conn, e, code),
            Fault::Stream(_) => self.fail(conn, Error::InternalError),
        }
    }

    /// A peer uni stream's first bytes: its type (§6.2).
    fn process_uni_type<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
        st: &mut RecvStream,
    ) -> Flow {
        let Some(ty) = st.read_varint(conn, id)? else {
            return Ok(());
        };
        h3_qlog!(conn, q => q.stream_type_set(crate::qlog::Owner::Remote, id, Some(ty)));
        let slot = match ty {
            STREAM_CONTROL => &mut self.peer_control,
            STREAM_QPACK_ENCODER => &mut self.peer_encoder,
            STREAM_QPACK_DECODER => &mut self.peer_decoder,
            STREAM_PUSH if self.is_server => return Err(Error::StreamCreationError.into()),
            // We never sent MAX_PUSH_ID, so no push ID is valid (§4.6).
            STREAM_PUSH => return Err(Error::IdError.into()),
            _ => {
                // Reserved or unknown: read and dropped, and the peer asked to stop (§6.2).
                st.kind = Kind::Ignored;
                st.state = State::Raw;
                let _ = conn.stream_shutdown(id, Shutdown::Read, wire::STREAM_CREATION_ERROR);
                return Ok(());
            }
        };
        if slot.is_some() {
            return Err(Error::StreamCreationError.into());
        }
        *slot = Some(id);
        (st.kind, st.state) = match ty {
            STREAM_CONTROL => (Kind::Control, State::FrameHeader),
            STREAM_QPACK_ENCODER => (Kind::QpackEncoder, State::Raw),
            _ => (Kind::QpackDecoder, State::Raw),
        };
        match st.kind {
            Kind::Control => self.process_control(conn, id, st),
            _ => self.process_qpack(conn, id, st),
        }
    }

    /// The peer's QPACK streams: instruction bytes for our decoder or encoder.
    fn process_qpack<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        id: u64,
        st: &mut RecvStream,
    ) -> Flow {
        if st.fin {
            // The stream ended with its type (§6.2.1, RFC 9204 §4.2).
            return Err(Error::ClosedCriticalStream.into());
        }
        let mut buf = [0u8; 4096];
        loop {
            let (n, fin) = match conn.stream_recv(id, &mut buf) {
                Ok(r) => r,
                Err(crate::Error::Done) => break,
                Err(e) => return Err(Error::from(e).into()),
            };
            let bytes = &buf[..n];
            if st.kind == Kind::QpackEncoder {
                self.stats.qpack_encoder_stream_recv_bytes += n as u64;
                self.qpack_decoder
                    .feed_encoder_stream(bytes)
                    .map_err(qpack_error)?;
            } else {
                self.stats.qpack_decoder_stream_recv_bytes += n as u64;
                self.qpack_encoder
                    .feed_decoder_stream(bytes)
                    .map_err(qpack_error)?;
            }
            if fin {
                return Err(Error::ClosedCriticalStream.into());
            }
            if n == 0 {
                break;
            }
        }
        qlog::qpack(
            conn,
            &mut self.qpack_encoder,
            &mut self.qpack_decoder,
            false,
        );
        self.release_unblocked(conn)
    }

    /// Header sections that QPACK could decode now that encoder-stream bytes arrived.
    fn release_unblocked<F: crate::BufFactory>(&mut self, conn: &mut crate::Connection<F>) -> Flow {
        while let Some((id, result)) = self.qpack_decoder.take_unblocked() {
            let Some(mut st) = self.streams.remove(&id) else {
                continue;
            };
            h3_qlog!(conn, q => q.qpack_stream_blocked(id, false));
            st.state = State::FrameHeader;
            let outcome = match result {
                Ok(lines) => self
                    .on_header_section(conn, id, &mut st, lines)
                    .and_then(|()| self.process_request(conn, id, &mut st)),
                Err(e) => Err(qpack_error(e)),
            };
            match outcome {
                Ok(()) => {
                    self.streams.insert(id, st);
                }
                Err(Fault::Stream(code)) => self.reset_stream(conn, id, code),
                Err(f) => return Err(f),
            }
        }
        Ok(())
    }

    /// The peer's control stream (§6.2.1, §7.2): SETTINGS first and once, then GOAWAY,
    /// MAX_PUSH_ID, CANCEL_PUSH, PRIORITY_UPDATE; frames of other streams are unexpected.
    fn process_control<F: crate::BufFactory>(
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
                            return Err(Error::ClosedCriticalStream.into());
                        }
                        return Ok(());
                    };
                    if self.peer_settings.is_none() && ty != frame::SETTINGS {
                        return Err(Error::MissingSettings.into());
                    }
                    let known = matches!(
                        ty,
                        frame::SETTINGS
                            | frame::GOAWAY
                            | frame::MAX_PUSH_ID
                            | frame::CANCEL_PUSH
                            | frame::PRIORITY_UPDATE_REQUEST
                            | frame::PRIORITY_UPDATE_PUSH
                    );
                    let unexpected =
                        matches!(ty, frame::DATA | frame::HEADERS | frame::PUSH_PROMISE)
                            || frame::is_http2_reserved(ty);
                    if unexpected {
                        return Err(Error::FrameUnexpected.into());
                    }
                    st.state = if known {
                        let limit = if ty == frame::PRIORITY_UPDATE_REQUEST
                            || ty == frame::PRIORITY_UPDATE_PUSH
                        {
                            self.max_priority_update_size.saturating_add(8)
                        } else {
                            MAX_CONTROL_PAYLOAD as u64
                        };
                        if len > limit {
                            return Err(Error::ExcessiveLoad.into());
                        }
                        st.payload.clear();
                        State::Payload {
                            ty,
                            len: len as usize,
                        }
                    } else {
                        State::Skip { remaining: len }
                    };
                }
                State::Payload { ty, len } => {
                    if !st.read_payload(conn, id, len)? {
                        return Ok(());
                    }
                    let payload = std::mem::take(&mut st.payload);
                    st.state = State::FrameHeader;
                    self.on_control_frame(conn, ty, &payload)?;
                }
                State::Skip { remaining } => match st.skip_frame(conn, id, remaining)? {
                    Skipped::All => {}
                    Skipped::Part => return Ok(()),
                    Skipped::EndedInside => return Err(Error::ClosedCriticalStream.into()),
                },
                _ => return Ok(()),
            }
        }
    }

    fn on_control_frame<F: crate::BufFactory>(
        &mut self,
        conn: &mut crate::Connection<F>,
        ty: u64,
        payload: &[u8],
    ) -> Flow {
        h3_qlog!(conn, q => {
            let (control, len) = (self.peer_control.unwrap_or_default(), payload.len() as u64);
            q.frame(qlog::Framing::Parsed, control, ty, len, Some(payload))
        });
        match ty {
            frame::SETTINGS => {
                if self.peer_settings.is_some() {
                    return Err(Error::FrameUnexpected.into());
                }
                let settings = frame::parse_settings(payload)?;
                let get = |id| settings.iter().find(|(i, _)| *i == id).map(|(_, v)| *v);
                // Boolean settings take 0 or 1 only (RFC 9220 §3, RFC 9297 §2.1.1).
                for id in [
                    frame::SETTINGS_ENABLE_CONNECT_PROTOCOL,
                    frame::SETTINGS_H3_DATAGRAM,
                ] {
                    if get(id).is_some_and(|v| v > 1) {
                        return Err(Error::SettingsError.into());
                    }
                }
                self.qpack_encoder.apply_peer_settings(
                    get(frame::SETTINGS_QPACK_MAX_TABLE_CAPACITY).unwrap_or(0),
                    get(frame::SETTINGS_QPACK_BLOCKED_STREAMS).unwrap_or(0),
                );
                self.peer_dgram = get(frame::SETTINGS_H3_DATAGRAM) == Some(1);
                self.peer_extended_connect =
                    get(frame::SETTINGS_ENABLE_CONNECT_PROTOCOL) == Some(1);
                h3_qlog!(conn, q => q.parameters_set(crate::qlog::Owner::Remote, &settings, None));
                self.peer_settings = Some(settings);
            }
            frame::GOAWAY => {
                let goaway = frame::parse_single_varint(payload)?;
                // A server's GOAWAY names a client-initiated bidirectional stream (§5.2), and
                // GOAWAY identifiers never grow (§5.2).
                if (!self.is_server && (goaway & 0x3) != 0)
                    || self.goaway_received.is_some_and(|g| goaway > g)
                {
                    return Err(Error::IdError.into());
                }
                self.goaway_received = Some(goaway);
                self.events.push_back((goaway, Event::GoAway));
            }
            frame::MAX_PUSH_ID => {
                if !self.is_server {
                    return Err(Error::FrameUnexpected.into());
                }
                let max = frame::parse_single_varint(payload)?;
                // The maximum may not shrink (§7.2.7).
                if self.max_push_id.is_some_and(|m| max < m) {
                    return Err(Error::IdError.into());
                }
                self.max_push_id = Some(max);
            }
            frame::CANCEL_PUSH => {
                frame::parse_single_varint(payload)?;
                // We never push and never send MAX_PUSH_ID: to a server the push ID was never
                // promised, to a client it is beyond the maximum (§7.2.3).
                return Err(Error::IdError.into());
            }
            _ => {
                // PRIORITY_UPDATE: clients may not send it... to clients (RFC 9218 §7.2).
                if !self.is_server {
                    return Err(Error::FrameUnexpected.into());
                }
                let (element, value) = frame::parse_priority_update(payload)?;
                if ty == frame::PRIORITY_UPDATE_REQUEST {
                    if !is_bidi(element) || !is_client_initiated(element) {
                        return Err(Error::IdError.into());
                    }
                    if self.priority_updates.len() >= MAX_PRIORITY_UPDATES
                        && !self.priority_updates.contains_key(&element)
                    {
                        return Err(Error::ExcessiveLoad.into());
                    }
                    self.priority_updates.insert(element, value.to_vec());
                    self.events.push_back((element, Event::PriorityUpdate));
                } else {
                    // We never promise a push, so no push ID is valid (RFC 9218 §7.2).
                    return Err(Error::IdError.into());
                }
            }
        }
        let _ = conn;
        Ok(())
    }
}
