//! HTTP/3 and QPACK events (draft-ietf-quic-qlog-h3-events-04, the generation of qlog "0.3"),
//! built from the `qlog` crate's `events::h3` and `events::qpack` types.
//!
//! The HTTP/3 layer reaches the trace through [`crate::Connection::app_qlog`], which hands out
//! an [`AppQlog`] only while a trace is being written: without one nothing here runs, so the
//! HTTP/3 layer builds, formats and allocates nothing for qlog. Events are timed with the
//! connection's clock, the `now` of the last `recv`/`send`/`on_timeout` call (the layers above
//! the transport are never handed a time, and the library never reads the clock), so they fall
//! in order between the transport's events.
//!
//! Logged: `http:parameters_set` (ours when HTTP/3 starts, the peer's when its SETTINGS
//! arrive), `http:stream_type_set`, `http:frame_created` / `http:frame_parsed` (HEADERS with the
//! field lines, DATA with its length, SETTINGS, GOAWAY, MAX_PUSH_ID, CANCEL_PUSH,
//! PRIORITY_UPDATE, reserved and unknown frames), `qpack:instruction_created` /
//! `qpack:instruction_parsed`, `qpack:state_updated` and `qpack:stream_state_updated` (a
//! request stream blocked on the encoder stream, and unblocked).
//!
//! Not logged: `qpack:headers_encoded` / `headers_decoded` (the field lines are in the HEADERS
//! events already, as h3-events-04 §6 recommends, and the representation-level view would need
//! hooks inside the field section coder), `qpack:dynamic_table_updated` (insertions are the
//! `instruction_*` events; evictions follow from `state_updated`'s size),
//! `http:parameters_restored` and `http:push_resolved` (this library neither restores SETTINGS
//! for 0-RTT nor accepts pushes).

use ::qlog::events::h3::{
    H3FrameCreated, H3FrameParsed, H3Owner, H3ParametersSet, H3PriorityTargetStreamType,
    H3StreamType, H3StreamTypeSet, Http3Frame, HttpHeader, Setting,
};
use ::qlog::events::qpack::{
    QPackInstruction, QpackInstructionCreated, QpackInstructionParsed, QpackInstructionTypeName,
    QpackOwner, QpackStateUpdated, QpackStreamState, QpackStreamStateUpdated, QpackTableType,
};
use ::qlog::events::{EventData, RawInfo};

use crate::h3::frame as f;
use crate::h3::qpack::log::{self as qlog_qpack, Instruction, Literal, Stream};
use crate::qlog::{AppQlog, Owner};

/// Whether a frame or QPACK instruction is being written or was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// Written by this endpoint (`frame_created`, `instruction_created`).
    Created,
    /// Read from the peer (`frame_parsed`, `instruction_parsed`).
    Parsed,
}

/// A QPACK dynamic table's state, as `qpack:state_updated` reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpackState {
    /// The table's capacity.
    pub capacity: u64,
    /// The sum of its entries' sizes.
    pub size: u64,
    /// Entries inserted so far.
    pub insert_count: u64,
    /// Inserts the peer's decoder acknowledged (our encoder's table only).
    pub known_received_count: Option<u64>,
}

/// What the trace remembers of the HTTP/3 layer, to write QPACK state only when it changed:
/// the last state logged of our encoder's table and of the peer encoder's (our decoder's).
#[derive(Debug, Default)]
struct QpackLogged([Option<QpackState>; 2]);

fn owner(o: Owner) -> H3Owner {
    match o {
        Owner::Local => H3Owner::Local,
        Owner::Remote => H3Owner::Remote,
    }
}

/// A reserved ("grease") stream type, frame type or setting: 0x1f * N + 0x21 (RFC 9114 §6.2.3,
/// §7.2.8, §7.2.4.1).
fn is_reserved(v: u64) -> bool {
    v >= 0x21 && (v - 0x21) % 0x1f == 0
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn raw_len(len: usize) -> Option<RawInfo> {
    Some(RawInfo {
        length: Some(len as u64),
        payload_length: None,
        data: None,
    })
}

/// The qlog frame of a frame whose payload is given when it is at hand (everything but DATA
/// and skipped frames); a payload that does not parse gives an "unknown" frame.
fn to_frame(ty: u64, length: u64, payload: Option<&[u8]>) -> Http3Frame {
    let unknown = || Http3Frame::Unknown {
        frame_type_value: ty,
        raw: Some(RawInfo {
            length: None,
            payload_length: Some(length),
            data: None,
        }),
    };
    let single = |p: &[u8]| f::parse_single_varint(p).ok();
    match (ty, payload) {
        (f::DATA, _) => Http3Frame::Data {
            raw: Some(RawInfo {
                length: None,
                payload_length: Some(length),
                data: None,
            }),
        },
        (f::SETTINGS, Some(p)) => match f::parse_settings(p) {
            Ok(s) => Http3Frame::Settings {
                settings: s.iter().map(|&(id, v)| setting(id, v)).collect(),
            },
            Err(_) => unknown(),
        },
        (f::GOAWAY, Some(p)) => single(p).map_or_else(unknown, |id| Http3Frame::Goaway { id }),
        (f::MAX_PUSH_ID, Some(p)) => {
            single(p).map_or_else(unknown, |push_id| Http3Frame::MaxPushId { push_id })
        }
        (f::CANCEL_PUSH, Some(p)) => {
            single(p).map_or_else(unknown, |push_id| Http3Frame::CancelPush { push_id })
        }
        (f::PRIORITY_UPDATE_REQUEST | f::PRIORITY_UPDATE_PUSH, Some(p)) => {
            match f::parse_priority_update(p) {
                Ok((element, value)) => Http3Frame::PriorityUpdate {
                    target_stream_type: if ty == f::PRIORITY_UPDATE_PUSH {
                        H3PriorityTargetStreamType::Push
                    } else {
                        H3PriorityTargetStreamType::Request
                    },
                    prioritized_element_id: element,
                    priority_field_value: text(value),
                },
                Err(_) => unknown(),
            }
        }
        _ if is_reserved(ty) => Http3Frame::Reserved {
            length: Some(length),
        },
        _ => unknown(),
    }
}

/// A setting named as h3-events-04 names the parameters (`max_table_capacity` ...); reserved
/// and unknown ones by their identifier.
fn setting(id: u64, value: u64) -> Setting {
    let name = match id {
        f::SETTINGS_QPACK_MAX_TABLE_CAPACITY => "max_table_capacity".to_string(),
        f::SETTINGS_MAX_FIELD_SECTION_SIZE => "max_field_section_size".to_string(),
        f::SETTINGS_QPACK_BLOCKED_STREAMS => "blocked_streams_count".to_string(),
        f::SETTINGS_ENABLE_CONNECT_PROTOCOL => "enable_connect_protocol".to_string(),
        f::SETTINGS_H3_DATAGRAM => "h3_datagram".to_string(),
        _ if is_reserved(id) => format!("reserved_{id:#x}"),
        _ => format!("unknown_{id:#x}"),
    };
    Setting { name, value }
}

impl AppQlog<'_> {
    /// `http:parameters_set` from SETTINGS `(identifier, value)` pairs. Settings without a
    /// field in qlog 0.16's event (reserved, unknown) appear in the SETTINGS frame's event
    /// only. `waits_for_settings` is ours to say (`Owner::Local` only).
    pub fn parameters_set(
        &mut self,
        who: Owner,
        settings: &[(u64, u64)],
        waits_for_settings: Option<bool>,
    ) {
        let get = |id| settings.iter().find(|(i, _)| *i == id).map(|&(_, v)| v);
        let data = EventData::H3ParametersSet(H3ParametersSet {
            owner: Some(owner(who)),
            max_field_section_size: get(f::SETTINGS_MAX_FIELD_SECTION_SIZE),
            max_table_capacity: get(f::SETTINGS_QPACK_MAX_TABLE_CAPACITY),
            blocked_streams_count: get(f::SETTINGS_QPACK_BLOCKED_STREAMS),
            enable_connect_protocol: get(f::SETTINGS_ENABLE_CONNECT_PROTOCOL),
            h3_datagram: get(f::SETTINGS_H3_DATAGRAM),
            waits_for_settings,
        });
        self.event(data);
    }

    /// `http:stream_type_set`: `stream_type` is a unidirectional stream's type value (RFC 9114
    /// §6.2), `None` for a request stream.
    pub fn stream_type_set(&mut self, who: Owner, stream_id: u64, stream_type: Option<u64>) {
        let (ty, value) = match stream_type {
            None => (H3StreamType::Request, None),
            Some(0x0) => (H3StreamType::Control, None),
            Some(0x1) => (H3StreamType::Push, None),
            Some(0x2) => (H3StreamType::QpackEncode, None),
            Some(0x3) => (H3StreamType::QpackDecode, None),
            Some(v) if is_reserved(v) => (H3StreamType::Reserved, None),
            // h3-events-04 §4.3: the value only for an unknown type.
            Some(v) => (H3StreamType::Unknown, Some(v)),
        };
        let data = EventData::H3StreamTypeSet(H3StreamTypeSet {
            owner: Some(owner(who)),
            stream_id,
            stream_type: ty,
            stream_type_value: value,
            associated_push_id: None,
        });
        self.event(data);
    }

    /// `http:frame_created` or `http:frame_parsed` for a frame of type `ty` whose payload is
    /// `length` bytes; `payload` when it is at hand (control frames), `None` for DATA and
    /// frames skipped unread. HEADERS go through [`AppQlog::headers`].
    pub fn frame(
        &mut self,
        framing: Framing,
        stream_id: u64,
        ty: u64,
        length: u64,
        payload: Option<&[u8]>,
    ) {
        let frame = to_frame(ty, length, payload);
        self.write_frame(framing, stream_id, Some(length), frame);
    }

    /// `http:frame_parsed` for a frame header just read, when its payload will not be parsed
    /// whole: DATA (its body goes to the application) and frames of other types than HTTP/3
    /// defines, which are skipped. The others are logged with their payload.
    pub fn frame_header_parsed(&mut self, stream_id: u64, ty: u64, length: u64) {
        let whole = matches!(
            ty,
            f::HEADERS
                | f::SETTINGS
                | f::GOAWAY
                | f::MAX_PUSH_ID
                | f::CANCEL_PUSH
                | f::PUSH_PROMISE
                | f::PRIORITY_UPDATE_REQUEST
                | f::PRIORITY_UPDATE_PUSH
        ) || f::is_http2_reserved(ty);
        if !whole {
            self.frame(Framing::Parsed, stream_id, ty, length, None);
        }
    }

    /// `http:frame_created` or `http:frame_parsed` for a HEADERS frame: its field lines (as
    /// text, invalid UTF-8 replaced) and its payload length when known.
    pub fn headers<'h>(
        &mut self,
        framing: Framing,
        stream_id: u64,
        length: Option<u64>,
        fields: impl IntoIterator<Item = (&'h [u8], &'h [u8])>,
    ) {
        let headers = fields
            .into_iter()
            .map(|(n, v)| HttpHeader {
                name: text(n),
                value: text(v),
            })
            .collect();
        self.write_frame(framing, stream_id, length, Http3Frame::Headers { headers });
    }

    fn write_frame(
        &mut self,
        framing: Framing,
        stream_id: u64,
        length: Option<u64>,
        frame: Http3Frame,
    ) {
        let data = match framing {
            Framing::Created => EventData::H3FrameCreated(H3FrameCreated {
                stream_id,
                length,
                frame,
                raw: None,
            }),
            Framing::Parsed => EventData::H3FrameParsed(H3FrameParsed {
                stream_id,
                length,
                frame,
                raw: None,
            }),
        };
        self.event(data);
    }

    /// `qpack:instruction_created` or `qpack:instruction_parsed` for each whole instruction
    /// of `stream` in `bytes`.
    ///
    /// The instruction is the `qlog` crate's `QPackInstruction`, which serializes differently
    /// from h3-events-04 §7.1: wrapped in an object named after its variant, with
    /// `*_instruction` type names and stream IDs as strings. It is kept as the crate writes
    /// it, so that the crate's reader (and tools built on it) read our traces; qvis draws no
    /// QPACK instructions either way.
    pub fn qpack_instructions(&mut self, framing: Framing, stream: Stream, bytes: &[u8]) {
        for (instruction, len) in qlog_qpack::describe(stream, bytes) {
            let instruction = to_qpack_instruction(instruction);
            let raw = raw_len(len);
            let data = match framing {
                Framing::Created => {
                    EventData::QpackInstructionCreated(QpackInstructionCreated { instruction, raw })
                }
                Framing::Parsed => {
                    EventData::QpackInstructionParsed(QpackInstructionParsed { instruction, raw })
                }
            };
            self.event(data);
        }
    }

    /// `qpack:stream_state_updated`: a request stream's field section waits for encoder-stream
    /// instructions (`blocked`), or no longer does.
    pub fn qpack_stream_blocked(&mut self, stream_id: u64, blocked: bool) {
        let state = if blocked {
            QpackStreamState::Blocked
        } else {
            QpackStreamState::Unblocked
        };
        let data = EventData::QpackStreamStateUpdated(QpackStreamStateUpdated { stream_id, state });
        self.event(data);
    }

    /// `qpack:state_updated` when a table's state differs from the one last logged.
    /// `Owner::Local` is our encoder's table; `Owner::Remote` the peer encoder's table, which
    /// our decoder mirrors.
    pub fn qpack_state(&mut self, who: Owner, state: QpackState) {
        let slot = &mut self.state::<QpackLogged>().0[usize::from(who == Owner::Remote)];
        let prev = slot.replace(state);
        if prev == Some(state) {
            return;
        }
        let changed = |now: u64, before: Option<u64>| (before != Some(now)).then_some(now);
        let data = EventData::QpackStateUpdated(QpackStateUpdated {
            owner: Some(match who {
                Owner::Local => QpackOwner::Local,
                Owner::Remote => QpackOwner::Remote,
            }),
            dynamic_table_capacity: changed(state.capacity, prev.map(|p| p.capacity)),
            dynamic_table_size: changed(state.size, prev.map(|p| p.size)),
            known_received_count: state
                .known_received_count
                .and_then(|k| changed(k, prev.and_then(|p| p.known_received_count))),
            current_insert_count: changed(state.insert_count, prev.map(|p| p.insert_count)),
        });
        self.event(data);
    }
}

fn to_qpack_instruction(i: Instruction) -> QPackInstruction {
    use QpackInstructionTypeName as T;
    let table = |is_static| {
        if is_static {
            QpackTableType::Static
        } else {
            QpackTableType::Dynamic
        }
    };
    match i {
        Instruction::SetDynamicTableCapacity { capacity } => {
            QPackInstruction::SetDynamicTableCapacityInstruction {
                instruction_type: T::SetDynamicTableCapacityInstruction,
                capacity,
            }
        }
        Instruction::InsertWithNameReference {
            is_static,
            name_index,
            value,
        } => QPackInstruction::InsertWithNameReferenceInstruction {
            instruction_type: T::InsertWithNameReferenceInstruction,
            table_type: table(is_static),
            name_index,
            huffman_encoded_value: value.huffman,
            value_length: value.wire_len,
            value: text(&value.value),
        },
        Instruction::InsertWithLiteralName { name, value } => {
            let Literal {
                huffman: huffman_encoded_name,
                wire_len: name_length,
                value: name,
            } = name;
            QPackInstruction::InsertWithoutNameReferenceInstruction {
                instruction_type: T::InsertWithoutNameReferenceInstruction,
                huffman_encoded_name,
                name_length,
                name: text(&name),
                huffman_encoded_value: value.huffman,
                value_length: value.wire_len,
                value: text(&value.value),
            }
        }
        Instruction::Duplicate { index } => QPackInstruction::DuplicateInstruction {
            instruction_type: T::DuplicateInstruction,
            index,
        },
        Instruction::SectionAcknowledgment { stream_id } => {
            QPackInstruction::HeaderAcknowledgementInstruction {
                instruction_type: T::HeaderAcknowledgementInstruction,
                stream_id: stream_id.to_string(),
            }
        }
        Instruction::StreamCancellation { stream_id } => {
            QPackInstruction::StreamCancellationInstruction {
                instruction_type: T::StreamCancellationInstruction,
                stream_id: stream_id.to_string(),
            }
        }
        Instruction::InsertCountIncrement { increment } => {
            QPackInstruction::InsertCountIncrementInstruction {
                instruction_type: T::InsertCountIncrementInstruction,
                increment,
            }
        }
    }
}
