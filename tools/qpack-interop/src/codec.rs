//! Encoding QIF header lists to the block format with our QPACK [`Encoder`], and decoding a
//! block file with our [`Decoder`].

// Measuring how long encoding and decoding take is this tool's job: the clock is read here.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use quiche::h3::qpack::{Decoded, Decoder, Encoder, FieldLine, LineCost};

use crate::blocks::{self, Block, ENCODER_STREAM};
use crate::qif::{self, HeaderList};

/// How the encoder is set up: what the peer decoder advertised, and whether it acknowledges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodeOptions {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY of the peer, also our own limit on the table.
    pub table_size: u64,
    /// SETTINGS_QPACK_BLOCKED_STREAMS of the peer.
    pub max_blocked: u64,
    /// Acknowledge every field section as soon as it is written (a decoder runs beside the
    /// encoder and its decoder-stream bytes are fed back); otherwise nothing is ever
    /// acknowledged.
    pub immediate_ack: bool,
    /// Leave out the encoder's opening Set Dynamic Table Capacity, as the files published for
    /// the offline interop do (their decoders start with a table of `table_size`).
    pub no_set_capacity: bool,
    /// Attribute wire bytes to field names ([`Encoded::name_costs`]).
    pub costs: bool,
}

/// The result of [`encode`].
#[derive(Clone, Debug, Default)]
pub struct Encoded {
    /// The encoded file (blocks).
    pub file: Vec<u8>,
    /// Bytes of encoded field sections, summed over all lists.
    pub section_bytes: usize,
    /// Bytes written on the encoder stream.
    pub encoder_stream_bytes: usize,
    /// Per header list: (field section bytes, encoder-stream bytes written just before it).
    pub per_list: Vec<(usize, usize)>,
    /// Time spent inside `Encoder::encode` only.
    pub encode_time: Duration,
    /// That time, list by list.
    pub list_times: Vec<Duration>,
    /// Per field name, with [`EncodeOptions::costs`]: its lines and the bytes they cost
    /// (their representations plus the encoder instructions they caused).
    pub name_costs: BTreeMap<Vec<u8>, NameCost>,
}

/// What the lines of one field name cost in a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NameCost {
    /// Lines with the name.
    pub lines: usize,
    /// Their bytes in field sections and on the encoder stream.
    pub bytes: usize,
}

impl Encoded {
    /// What goes on the wire for the whole file: sections plus encoder stream.
    pub fn wire_bytes(&self) -> usize {
        self.section_bytes + self.encoder_stream_bytes
    }
}

/// Encodes `lists` (list k on stream k, from 1) into the block format.
///
/// Encoder-stream bytes are written as a stream-0 block right before the section that needs
/// them. With `immediate_ack`, a [`Decoder`] with the same settings decodes each section as it
/// is written and its decoder-stream output goes back to the encoder; it also checks that the
/// section decodes to the input list, so an encode that succeeds has been decoded once.
pub fn encode(lists: &[HeaderList], opts: &EncodeOptions) -> anyhow::Result<Encoded> {
    encode_with_limit(lists, opts, opts.table_size)
}

/// [`encode`] with the encoder's own table limit (`Encoder::set_max_table_capacity`) set to
/// `limit` instead of the peer's table size: `limit` 0 measures the static table only.
pub fn encode_with_limit(
    lists: &[HeaderList],
    opts: &EncodeOptions,
    limit: u64,
) -> anyhow::Result<Encoded> {
    let mut enc = Encoder::new();
    enc.set_max_table_capacity(limit);
    enc.apply_peer_settings(opts.table_size, opts.max_blocked);
    if opts.no_set_capacity {
        // Only the opening Set Dynamic Table Capacity is pending at this point.
        let n = enc.encoder_stream_pending().len();
        enc.encoder_stream_consumed(n);
    }
    let mut peer = match opts.immediate_ack {
        true => Some(new_decoder(
            opts.table_size,
            opts.max_blocked,
            opts.no_set_capacity,
        )?),
        false => None,
    };
    let mut costs: Vec<LineCost> = Vec::new();

    let mut out = Encoded::default();
    let mut section = Vec::new();
    for (i, list) in lists.iter().enumerate() {
        let stream_id = i as u64 + 1;
        section.clear();
        let fields = list.iter().map(|(n, v)| (n.as_slice(), v.as_slice()));
        let start = Instant::now();
        let result = if opts.costs {
            enc.encode_with_costs(stream_id, fields, &mut section, &mut costs)
        } else {
            enc.encode(stream_id, fields, &mut section)
        };
        let spent = start.elapsed();
        out.encode_time += spent;
        out.list_times.push(spent);
        result.map_err(|e| anyhow!("stream {stream_id}: encoding failed: {e}"))?;
        if opts.costs {
            for ((name, _), cost) in list.iter().zip(&costs) {
                let entry = out.name_costs.entry(name.clone()).or_default();
                entry.lines += 1;
                entry.bytes += cost.section + cost.encoder_stream;
            }
        }

        let instructions = enc.encoder_stream_pending().to_vec();
        enc.encoder_stream_consumed(instructions.len());
        if !instructions.is_empty() {
            blocks::write_block(&mut out.file, ENCODER_STREAM, &instructions);
        }
        blocks::write_block(&mut out.file, stream_id, &section);
        out.section_bytes += section.len();
        out.encoder_stream_bytes += instructions.len();
        out.per_list.push((section.len(), instructions.len()));

        if let Some(dec) = peer.as_mut() {
            dec.feed_encoder_stream(&instructions).map_err(|e| {
                anyhow!("stream {stream_id}: our decoder rejects our encoder stream: {e}")
            })?;
            let fields = match dec.decode(stream_id, &section) {
                Ok(Decoded::Fields(fields)) => fields,
                Ok(Decoded::Blocked) => bail!(
                    "stream {stream_id}: our decoder is blocked although it has every encoder \
                     instruction written so far"
                ),
                Err(e) => bail!("stream {stream_id}: our decoder rejects our section: {e}"),
            };
            let got = vec![to_list(fields)];
            if let Some(diff) = qif::first_difference(std::slice::from_ref(list), &got) {
                bail!("stream {stream_id}: our decoder decodes our section differently: {diff}");
            }
            let acks = dec.decoder_stream_pending().to_vec();
            dec.decoder_stream_consumed(acks.len());
            enc.feed_decoder_stream(&acks).map_err(|e| {
                anyhow!("stream {stream_id}: our encoder rejects our decoder stream: {e}")
            })?;
        }
    }
    // Nothing should be left, but if the encoder queued more, the file must still carry it.
    let rest = enc.encoder_stream_pending().to_vec();
    if !rest.is_empty() {
        enc.encoder_stream_consumed(rest.len());
        blocks::write_block(&mut out.file, ENCODER_STREAM, &rest);
        out.encoder_stream_bytes += rest.len();
    }
    Ok(out)
}

/// The result of [`decode`].
#[derive(Clone, Debug, Default)]
pub struct DecodedFile {
    /// The header lists, in stream-ID order.
    pub lists: Vec<HeaderList>,
    /// The stream ID of each list.
    pub stream_ids: Vec<u64>,
    /// Time spent inside the decoder (encoder-stream input, sections, unblocking).
    pub decode_time: Duration,
    /// Sections that had to wait for encoder-stream bytes.
    pub blocked_sections: usize,
}

/// A decoder advertising `table_size` and `max_blocked` (no limit on the field section size),
/// its table starting at `table_size` (the offline-interop convention) unless `strict_start`.
fn new_decoder(table_size: u64, max_blocked: u64, offline_start: bool) -> anyhow::Result<Decoder> {
    let mut dec = Decoder::new(table_size, max_blocked, u64::MAX);
    if offline_start {
        dec.assume_initial_capacity(table_size)
            .map_err(|e| anyhow!("initial capacity {table_size}: {e}"))?;
    }
    Ok(dec)
}

/// How a file is decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Our SETTINGS_QPACK_MAX_TABLE_CAPACITY.
    pub table_size: u64,
    /// Our SETTINGS_QPACK_BLOCKED_STREAMS.
    pub max_blocked: u64,
    /// RFC 9204 §3.2.3: the table has capacity 0 until the encoder stream sets it. Otherwise
    /// (the offline-interop convention, which the published files assume) it starts at
    /// `table_size`.
    pub strict_start: bool,
}

/// Decodes the blocks of an encoded file.
///
/// Blocks are processed in file order; a section that is blocked is held by the decoder until
/// later encoder-stream blocks release it. Every section must have decoded by the end of the
/// file, and no stream ID may appear twice.
pub fn decode(blocks: &[Block], opts: &DecodeOptions) -> anyhow::Result<DecodedFile> {
    let mut dec = new_decoder(opts.table_size, opts.max_blocked, !opts.strict_start)?;
    let mut done: BTreeMap<u64, HeaderList> = BTreeMap::new();
    let mut pending: BTreeMap<u64, ()> = BTreeMap::new();
    let mut out = DecodedFile::default();
    for (b, block) in blocks.iter().enumerate() {
        let start = Instant::now();
        if block.stream_id == ENCODER_STREAM {
            dec.feed_encoder_stream(&block.data)
                .map_err(|e| anyhow!("block {b}: encoder stream: {e}"))?;
        } else {
            let id = block.stream_id;
            if done.contains_key(&id) || pending.contains_key(&id) {
                bail!("block {b}: stream {id} carries a second field section");
            }
            match dec.decode(id, &block.data) {
                Ok(Decoded::Fields(fields)) => {
                    done.insert(id, to_list(fields));
                }
                Ok(Decoded::Blocked) => {
                    pending.insert(id, ());
                    out.blocked_sections += 1;
                }
                Err(e) => bail!("block {b}: stream {id}: {e}"),
            }
        }
        while let Some((id, result)) = dec.take_unblocked() {
            if pending.remove(&id).is_none() {
                bail!("block {b}: the decoder released stream {id}, which was not blocked");
            }
            let fields = result.with_context(|| format!("block {b}: stream {id} (unblocked)"))?;
            done.insert(id, to_list(fields));
        }
        out.decode_time += start.elapsed();
        let n = dec.decoder_stream_pending().len();
        dec.decoder_stream_consumed(n);
    }
    if !pending.is_empty() {
        let ids: Vec<String> = pending.keys().map(u64::to_string).collect();
        bail!(
            "end of input with {} section(s) still blocked: stream(s) {}",
            ids.len(),
            ids.join(", ")
        );
    }
    for (id, list) in done {
        out.stream_ids.push(id);
        out.lists.push(list);
    }
    Ok(out)
}

fn to_list(fields: Vec<FieldLine>) -> HeaderList {
    fields.into_iter().map(|f| (f.name, f.value)).collect()
}
