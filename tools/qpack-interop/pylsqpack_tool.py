#!/usr/bin/env python3
"""QPACK offline interop with ls-qpack, through its Python binding pylsqpack (1.0.0).

The same command line and file formats as `qpack-interop` (the Rust tool):

    pylsqpack_tool.py encode --table-size N --max-blocked B [--immediate-ack] [--no-set-capacity] IN.qif OUT
    pylsqpack_tool.py decode --table-size N --max-blocked B IN OUT.qif
    pylsqpack_tool.py bench [--table-size N] [--max-blocked B] [--repeat R] CORPUS.qif

QIF: one `name<TAB>value` per line, an empty line between header lists, `#` starts a comment
line. Encoded file: blocks of an 8-byte big-endian stream ID, a 4-byte big-endian length and
that many bytes; stream 0 carries encoder-stream bytes, stream k the field section of list k.

Errors go to stderr and the exit status is non-zero.
"""

import argparse
import struct
import sys
import time

try:
    import pylsqpack
except ImportError:  # pragma: no cover - reported to the user
    sys.stderr.write("pylsqpack_tool: pylsqpack is not installed "
                     "(python3 -m pip install pylsqpack==1.0.0)\n")
    sys.exit(2)


class ToolError(Exception):
    """A user-facing failure: bad input, or a decoder/encoder error."""


# --- QIF --------------------------------------------------------------------------------------

def parse_qif(data):
    """Header lists of a QIF text (bytes): a list of lists of (name, value) bytes pairs."""
    lists, current = [], []
    for number, line in enumerate(data.split(b"\n"), 1):
        if line.endswith(b"\r"):
            line = line[:-1]
        if line.startswith(b"#"):
            continue
        if not line:
            if current:
                lists.append(current)
                current = []
            continue
        name, tab, value = line.partition(b"\t")
        if not tab:
            raise ToolError("line %d: expected `name<TAB>value`, found no tab" % number)
        if not name:
            raise ToolError("line %d: empty field name" % number)
        current.append((name, value))
    if current:
        lists.append(current)
    return lists


def write_qif(lists):
    out = bytearray()
    for i, fields in enumerate(lists):
        if not fields:
            raise ToolError("header list %d is empty: QIF cannot carry it" % (i + 1))
        if i:
            out += b"\n"
        for name, value in fields:
            if (not name or name.startswith(b"#") or b"\t" in name
                    or any(c in name + value for c in (b"\n", b"\r"))):
                raise ToolError("header list %d: field %r cannot be written as QIF"
                                % (i + 1, (name, value)))
            out += name + b"\t" + value + b"\n"
    return bytes(out)


# --- Blocks -----------------------------------------------------------------------------------

def write_block(out, stream_id, data):
    out += struct.pack(">QI", stream_id, len(data))
    out += data


def parse_blocks(data):
    blocks, off = [], 0
    while off < len(data):
        if len(data) - off < 12:
            raise ToolError("offset %d: file ends inside a 12-byte block header" % off)
        stream_id, length = struct.unpack_from(">QI", data, off)
        if len(data) - off - 12 < length:
            raise ToolError("offset %d: block announces %d bytes but only %d remain"
                            % (off, length, len(data) - off - 12))
        blocks.append((stream_id, data[off + 12:off + 12 + length]))
        off += 12 + length
    return blocks


# --- Encoder-stream accounting ----------------------------------------------------------------

def prefix_int(data, off, bits):
    """RFC 9204 §4.1.1 prefixed integer at data[off] with a `bits`-bit prefix: (value, off)."""
    mask = (1 << bits) - 1
    value = data[off] & mask
    off += 1
    if value < mask:
        return value, off
    shift = 0
    while True:
        byte = data[off]
        off += 1
        value += (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, off


def count_inserts(data):
    """Number of table insertions in complete encoder-stream instructions (RFC 9204 §4.3)."""
    off, inserts = 0, 0
    while off < len(data):
        first = data[off]
        if first & 0x80:  # Insert with Name Reference: index, then a value string
            _, off = prefix_int(data, off, 6)
            length, off = prefix_int(data, off, 7)
            off += length
            inserts += 1
        elif first & 0x40:  # Insert with Literal Name: name string, then a value string
            length, off = prefix_int(data, off, 5)
            off += length
            length, off = prefix_int(data, off, 7)
            off += length
            inserts += 1
        elif first & 0x20:  # Set Dynamic Table Capacity
            _, off = prefix_int(data, off, 5)
        else:  # Duplicate
            _, off = prefix_int(data, off, 5)
            inserts += 1
    if off != len(data):
        raise ToolError("encoder stream ends inside an instruction")
    return inserts


def insert_count_increment(n):
    """The decoder-stream Insert Count Increment instruction (RFC 9204 §4.4.3)."""
    out = bytearray()
    if n < 0x3F:
        out.append(n)
        return bytes(out)
    out.append(0x3F)
    n -= 0x3F
    while n >= 0x80:
        out.append(0x80 | (n & 0x7F))
        n >>= 7
    out.append(n)
    return bytes(out)


# --- Encode / decode --------------------------------------------------------------------------

def encode(lists, table_size, max_blocked, immediate_ack, timing=None, no_set_capacity=False):
    """Encodes the lists with ls-qpack; returns (file bytes, section bytes, encoder bytes).

    With immediate_ack, an ls-qpack decoder beside the encoder decodes each section as it is
    written and its decoder-stream bytes go back to the encoder. `timing`, if a list, gets the
    seconds spent in Encoder.encode appended. With no_set_capacity, the Set Dynamic Table
    Capacity that apply_settings returns is left out, as in the files published for the
    offline interop (ls-qpack's decoder starts with a table of the size it is given).
    """
    enc = pylsqpack.Encoder()
    pending = enc.apply_settings(table_size, max_blocked)
    if no_set_capacity:
        if pending and pending[0] & 0xE0 != 0x20:
            raise ToolError("apply_settings returned %r, not Set Dynamic Table Capacity"
                            % pending)
        pending = b""
    dec = pylsqpack.Decoder(table_size, max_blocked) if immediate_ack else None
    out = bytearray()
    section_bytes = encoder_bytes = 0
    for k, fields in enumerate(lists, 1):
        t0 = time.perf_counter()
        instructions, section = enc.encode(k, fields)
        if timing is not None:
            timing.append(time.perf_counter() - t0)
        instructions = pending + instructions
        pending = b""
        if instructions:
            write_block(out, 0, instructions)
        write_block(out, k, section)
        section_bytes += len(section)
        encoder_bytes += len(instructions)
        if dec is not None:
            if instructions:
                dec.feed_encoder(instructions)
            try:
                control, headers = dec.feed_header(k, section)
            except pylsqpack.StreamBlocked:
                raise ToolError("stream %d: ls-qpack's decoder is blocked although it has "
                                "every encoder instruction written so far" % k)
            if list(headers) != list(fields):
                raise ToolError("stream %d: ls-qpack decodes its own section differently" % k)
            # pylsqpack's decoder returns Section Acknowledgments but never the Insert Count
            # Increments that ls-qpack's decoder can make, so the tool makes them: every
            # insertion received is acknowledged before the section's own acknowledgment.
            # The Known Received Count then always equals the insertions so far, and a
            # section acknowledgment (whose Required Insert Count is at most that) never
            # takes it past them.
            inserts = count_inserts(instructions)
            if inserts:
                enc.feed_decoder(insert_count_increment(inserts))
            if control:
                enc.feed_decoder(control)
    if pending:
        write_block(out, 0, pending)
        encoder_bytes += len(pending)
    return bytes(out), section_bytes, encoder_bytes


def decode(blocks, table_size, max_blocked, timing=None):
    """Decodes a block file with ls-qpack; returns the header lists in stream order."""
    dec = pylsqpack.Decoder(table_size, max_blocked)
    done, blocked = {}, set()
    spent = 0.0
    for index, (stream_id, data) in enumerate(blocks):
        t0 = time.perf_counter()
        if stream_id == 0:
            try:
                ready = dec.feed_encoder(data)
            except pylsqpack.EncoderStreamError as e:
                raise ToolError("block %d: encoder stream: %s" % (index, e))
            for sid in ready:
                if sid not in blocked:
                    continue
                try:
                    _, headers = dec.resume_header(sid)
                except pylsqpack.StreamBlocked:
                    continue
                except pylsqpack.DecompressionFailed as e:
                    raise ToolError("block %d: stream %d (unblocked): %s" % (index, sid, e))
                blocked.discard(sid)
                done[sid] = headers
        else:
            if stream_id in done or stream_id in blocked:
                raise ToolError("block %d: stream %d carries a second field section"
                                % (index, stream_id))
            try:
                _, headers = dec.feed_header(stream_id, data)
                done[stream_id] = headers
            except pylsqpack.StreamBlocked:
                blocked.add(stream_id)
            except pylsqpack.DecompressionFailed as e:
                raise ToolError("block %d: stream %d: %s" % (index, stream_id, e))
        spent += time.perf_counter() - t0
    if blocked:
        raise ToolError("end of input with %d section(s) still blocked: stream(s) %s"
                        % (len(blocked), ", ".join(str(s) for s in sorted(blocked))))
    if timing is not None:
        timing.append(spent)
    return [[(bytes(n), bytes(v)) for n, v in done[sid]] for sid in sorted(done)]


# --- Commands ---------------------------------------------------------------------------------

def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ToolError("reading %s: %s" % (path, e))


def write(path, data):
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError as e:
        raise ToolError("writing %s: %s" % (path, e))


def cmd_encode(args):
    lists = parse_qif(read(args.input))
    data, _, _ = encode(lists, args.table_size, args.max_blocked, args.immediate_ack,
                        no_set_capacity=args.no_set_capacity)
    write(args.output, data)


def cmd_decode(args):
    lists = decode(parse_blocks(read(args.input)), args.table_size, args.max_blocked)
    write(args.output, write_qif(lists))


def cmd_bench(args):
    lists = parse_qif(read(args.corpus))
    raw = sum(len(n) + len(v) for fields in lists for n, v in fields)
    _, s_ack, e_ack = encode(lists, args.table_size, args.max_blocked, True)
    _, s_no, e_no = encode(lists, args.table_size, args.max_blocked, False)
    enc_times, dec_times = [], []
    for _ in range(max(1, args.repeat)):
        data, _, _ = encode(lists, args.table_size, args.max_blocked, True, timing=enc_times)
        decoded = decode(parse_blocks(data), args.table_size, args.max_blocked,
                         timing=dec_times)
        if decoded != lists:
            raise ToolError("ls-qpack does not round-trip the corpus")
    runs = max(1, args.repeat) * max(1, len(lists))
    enc_us = sum(enc_times) / runs * 1e6
    dec_us = sum(dec_times) / runs * 1e6
    print("ls-qpack (pylsqpack %s), table %d, max-blocked %d: %s, %d lists, %d bytes of "
          "names and values" % (pylsqpack.__version__, args.table_size, args.max_blocked,
                                args.corpus, len(lists), raw))
    print("  immediate ack: %d wire bytes (%d sections + %d encoder stream)"
          % (s_ack + e_ack, s_ack, e_ack))
    print("  no ack:        %d wire bytes (%d sections + %d encoder stream)"
          % (s_no + e_no, s_no, e_no))
    print("  Python-binding time per header list: encode %.2f us, decode %.2f us"
          % (enc_us, dec_us))
    if args.by_header:
        full = s_ack + e_ack
        print("  wire bytes saved when a name's lines are left out (immediate ack):")
        rows = []
        for name in sorted({n for fields in lists for n, _ in fields}):
            without = [[(n, v) for n, v in fields if n != name] for fields in lists]
            without = [fields for fields in without if fields]
            _, s, e = encode(without, args.table_size, args.max_blocked, True)
            rows.append((full - s - e, name.decode("utf-8", "replace")))
        for saved, name in sorted(rows, key=lambda r: (-r[0], r[1])):
            print("    %-36s %8d" % (name, saved))
    print("RESULT ack=%d noack=%d encode_us=%.3f decode_us=%.3f"
          % (s_ack + e_ack, s_no + e_no, enc_us, dec_us))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="pylsqpack_tool.py",
                                 description="QPACK offline interop with ls-qpack (pylsqpack)")
    sub = ap.add_subparsers(dest="command", required=True)
    e = sub.add_parser("encode", help="encode a QIF file into a block file")
    e.add_argument("--table-size", type=int, required=True)
    e.add_argument("--max-blocked", type=int, required=True)
    e.add_argument("--immediate-ack", action="store_true")
    e.add_argument("--no-set-capacity", action="store_true",
                   help="leave out the opening Set Dynamic Table Capacity (offline-interop style)")
    e.add_argument("input")
    e.add_argument("output")
    d = sub.add_parser("decode", help="decode a block file into QIF")
    d.add_argument("--table-size", type=int, required=True)
    d.add_argument("--max-blocked", type=int, required=True)
    d.add_argument("input")
    d.add_argument("output")
    b = sub.add_parser("bench", help="wire bytes and time per header list for a corpus")
    b.add_argument("--table-size", type=int, default=4096)
    b.add_argument("--max-blocked", type=int, default=100)
    b.add_argument("--repeat", type=int, default=20)
    b.add_argument("--by-header", action="store_true",
                   help="also show the wire bytes attributable to each field name")
    b.add_argument("corpus")
    args = ap.parse_args(argv)
    try:
        {"encode": cmd_encode, "decode": cmd_decode, "bench": cmd_bench}[args.command](args)
    except ToolError as e:
        sys.stderr.write("pylsqpack_tool: %s\n" % e)
        return 1
    except (pylsqpack.DecompressionFailed, pylsqpack.DecoderStreamError,
            pylsqpack.EncoderStreamError, RuntimeError) as e:
        sys.stderr.write("pylsqpack_tool: %s: %s\n" % (type(e).__name__, e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
