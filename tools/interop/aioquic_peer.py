#!/usr/bin/env python3
"""HTTP/0.9 (ALPN hq-interop) and HTTP/3 (ALPN h3) interop peer on top of aioquic's public API.

Command line (shared by every peer in tools/interop, see README.md):

  aioquic_peer.py server --listen HOST:PORT --cert FILE --key FILE --root DIR
                         [--retry] [--keylog FILE]
  aioquic_peer.py client (--ca FILE | --no-verify) --out DIR [--case NAME]
                         [--keylog FILE] URL...

The server offers both ALPNs on its port and serves each connection with the protocol
it negotiated. The client speaks HTTP/3 (aioquic.h3) in the case "http3", HTTP/0.9
otherwise.

Exit status: 0 on success, 1 on failure, 127 (and the line "unsupported") for a
test case this peer does not implement. The last line printed is always
"bytes=N secs=S mbps=M".
"""

import argparse
import asyncio
import mimetypes
import os
import signal
import socket
import ssl
import sys
import time
from urllib.parse import urlsplit

from aioquic.asyncio import QuicConnectionProtocol, connect, serve
from aioquic.h3 import events as h3_events
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.quic import events
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.packet import QuicProtocolVersion
from aioquic.tls import CipherSuite

ALPN = ["hq-interop"]
CASES = {
    "http3",
    # Active migration (RFC 9000 §9.2) to a new local socket after the handshake.
    "connectionmigration",
    "handshake",
    "transfer",
    "multiplexing",
    "retry",
    "resumption",
    "zerortt",
    "chacha20",
    "keyupdate",
    "versionnegotiation",
    "v2",
}
# A reserved version of the form 0x?a?a?a?a (RFC 9000 §15): no server supports it, so the
# first Initial of the versionnegotiation case gets a Version Negotiation packet.
GREASE_VERSION = 0x1A2A3A4A
# A request line is tiny; anything longer is a broken or hostile client.
MAX_REQUEST = 64 * 1024
# Every peer in tools/interop gives up on a silent connection after 30 s, the handshake
# included: our apps' idle timeout, so that no end gives up on a connection the other end is
# still working on (issue 26: the loss cases test recovery, not which side's timer runs out
# first). aioquic's default is 60 s.
IDLE_TIMEOUT = 30.0
# The largest test file is a few MiB; refuse to buffer unbounded responses.
MAX_RESPONSE = 256 * 1024 * 1024
UNSUPPORTED = 127


def log(*parts):
    print("aioquic:", *parts, file=sys.stderr, flush=True)


def summary(nbytes, secs):
    secs = max(secs, 1e-9)
    print(f"bytes={nbytes} secs={secs:.3f} mbps={nbytes * 8 / secs / 1e6:.2f}", flush=True)


# ---------------------------------------------------------------- server


class ServerStats:
    def __init__(self):
        self.bytes = 0
        self.first = None
        self.last = None


def resolve(root, request):
    """Map an HTTP/0.9 request to a file under root, or None."""
    line = request.split(b"\n", 1)[0].strip()
    if not line.startswith(b"GET "):
        return None
    return resolve_path(root, line[4:].strip().decode("utf-8", "replace"))


def resolve_path(root, target):
    """Map a request target (path, maybe with a query) to a file under root, or None."""
    path = urlsplit(target).path.lstrip("/")
    full = os.path.realpath(os.path.join(root, path))
    if not full.startswith(os.path.realpath(root) + os.sep) or not os.path.isfile(full):
        return None
    return full


async def serve_stream(reader, writer, root, stats):
    if stats.first is None:
        stats.first = time.monotonic()
    request = b""
    while len(request) <= MAX_REQUEST:
        chunk = await reader.read(4096)
        if not chunk:
            break
        request += chunk
    path = resolve(root, request)
    if path is None:
        log("bad request", request[:200])
        writer.write_eof()
        return
    with open(path, "rb") as f:
        body = f.read()
    writer.write(body)
    writer.write_eof()
    stats.bytes += len(body)


def h3_response(root, headers):
    """(status, extra header fields, body, content length) answering an HTTP/3 request."""
    fields = dict(headers)
    method = fields.get(b":method", b"")
    target = fields.get(b":path", b"").decode("utf-8", "replace")
    if method not in (b"GET", b"HEAD"):
        return 405, [(b"allow", b"GET, HEAD")], b"", 0
    path = resolve_path(root, target) if target.startswith("/") else None
    if path is None:
        return 404, [(b"content-type", b"text/plain")], b"not found\n", 10
    with open(path, "rb") as f:
        body = f.read()
    ctype = mimetypes.guess_type(path)[0] or "application/octet-stream"
    extra = [(b"content-type", ctype.encode()), (b"cache-control", b"no-store")]
    return 200, extra, (b"" if method == b"HEAD" else body), len(body)


async def run_server(args):
    host, _, port = args.listen.rpartition(":")
    # Both protocols on one port: each connection is served with the ALPN it negotiated.
    config = QuicConfiguration(
        is_client=False, alpn_protocols=H3_ALPN + ALPN, idle_timeout=IDLE_TIMEOUT
    )
    config.load_cert_chain(args.cert, args.key)
    if args.keylog:
        config.secrets_log_file = open(args.keylog, "a", buffering=1)
    stats = ServerStats()
    # Tickets are single use: popping them on resumption is what makes 0-RTT
    # replay-safe on this toy server.
    tickets = {}

    def on_stream(reader, writer):
        asyncio.ensure_future(serve_stream(reader, writer, args.root, stats))

    class ServerProtocol(QuicConnectionProtocol):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.h3 = None  # an H3Connection once ALPN h3 is negotiated
            self.requests = {}  # stream ID -> request header fields, until the request ends

        # aioquic buffers a whole response at once, so the transfer ends with
        # the client's last packet (its ACKs, then CONNECTION_CLOSE), not when
        # the server writes.
        def datagram_received(self, data, addr):
            super().datagram_received(data, addr)
            if stats.first is not None:
                stats.last = time.monotonic()

        def quic_event_received(self, event):
            if isinstance(event, events.ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
                self.h3 = H3Connection(self._quic)
            if self.h3 is None:
                # hq-interop: stream_handler gets each request stream.
                super().quic_event_received(event)
                return
            for ev in self.h3.handle_event(event):
                if isinstance(ev, h3_events.HeadersReceived) and ev.push_id is None:
                    # A GET has no body: answer once the request is complete (its FIN), or
                    # at once if the headers already ended it.
                    self.requests[ev.stream_id] = ev.headers
                    if ev.stream_ended:
                        self.respond(ev.stream_id)
                elif isinstance(ev, h3_events.DataReceived) and ev.stream_ended:
                    if ev.stream_id in self.requests:
                        self.respond(ev.stream_id)

        def respond(self, stream_id):
            headers = self.requests.pop(stream_id)
            if stats.first is None:
                stats.first = time.monotonic()
            status, extra, body, size = h3_response(args.root, headers)
            if status != 200:
                log(f"h3 {status} for {dict(headers).get(b':path', b'')!r}")
            self.h3.send_headers(
                stream_id,
                [(b":status", str(status).encode()), (b"content-length", str(size).encode())]
                + extra,
                end_stream=not body,
            )
            if body:
                self.h3.send_data(stream_id, body, end_stream=True)
            stats.bytes += len(body)
            self.transmit()

    server = await serve(
        host.strip("[]"),
        int(port),
        configuration=config,
        create_protocol=ServerProtocol,
        retry=args.retry,
        session_ticket_fetcher=lambda label: tickets.pop(label, None),
        session_ticket_handler=lambda t: tickets.__setitem__(t.ticket, t),
        stream_handler=on_stream,
    )
    log(f"listening on {args.listen} retry={args.retry}")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()
    secs = (stats.last - stats.first) if stats.first and stats.last else 0.0
    summary(stats.bytes, secs)
    return 0


# ---------------------------------------------------------------- client


def parse_urls(urls):
    host = port = None
    paths = []
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname or not parts.port:
            raise ValueError(f"bad URL {url}")
        if host is None:
            host, port = parts.hostname, parts.port
        elif (host, port) != (parts.hostname, parts.port):
            raise ValueError("all URLs must name the same server")
        paths.append(parts.path or "/")
    return host, port, paths


class ClientProtocol(QuicConnectionProtocol):
    """Records what the handshake negotiated and which streams ended cleanly."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.handshake = None
        self.finished = set()

    def quic_event_received(self, event):
        if isinstance(event, events.HandshakeCompleted):
            self.handshake = event
        elif isinstance(event, events.StreamDataReceived) and event.end_stream:
            self.finished.add(event.stream_id)
        elif isinstance(event, events.ConnectionTerminated):
            log(f"connection closed: code={event.error_code} reason={event.reason_phrase!r}")
        super().quic_event_received(event)


class H3ClientProtocol(ClientProtocol):
    """HTTP/3 over the connection: one request per stream, responses gathered whole."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.responses = {}  # stream ID -> [future, headers, body]

    def quic_event_received(self, event):
        if isinstance(event, events.HandshakeCompleted):
            self.handshake = event
        elif isinstance(event, events.ConnectionTerminated):
            log(f"connection closed: code={event.error_code} reason={event.reason_phrase!r}")
            for fut, _, _ in self.responses.values():
                if not fut.done():
                    fut.set_exception(ConnectionError("connection closed"))
        for ev in self.h3.handle_event(event):
            entry = self.responses.get(getattr(ev, "stream_id", None))
            if entry is None or getattr(ev, "push_id", None) is not None:
                continue
            if isinstance(ev, h3_events.HeadersReceived):
                if entry[1] is None:
                    entry[1] = ev.headers  # trailers, if any, are ignored
            elif isinstance(ev, h3_events.DataReceived):
                entry[2] += ev.data
                if len(entry[2]) > MAX_RESPONSE:
                    entry[0].set_exception(RuntimeError("response too large"))
            # Only the end of the request stream (FIN, in either event) completes a response.
            if getattr(ev, "stream_ended", False) and not entry[0].done():
                entry[0].set_result((entry[1], bytes(entry[2])))

    async def get(self, authority, path):
        """GET path; returns (header fields, body) once the response stream has ended."""
        stream_id = self._quic.get_next_available_stream_id()
        fut = asyncio.get_running_loop().create_future()
        self.responses[stream_id] = [fut, None, bytearray()]
        self.h3.send_headers(
            stream_id,
            [
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", authority.encode()),
                (b":path", path.encode()),
                (b"user-agent", b"aioquic-interop-peer"),
            ],
            end_stream=True,
        )
        self.transmit()
        return await fut


def client_config(args, host, ticket=None):
    alpn = H3_ALPN if args.case == "http3" else ALPN
    config = QuicConfiguration(
        is_client=True, alpn_protocols=alpn, server_name=host, idle_timeout=IDLE_TIMEOUT
    )
    if args.no_verify:
        config.verify_mode = ssl.CERT_NONE
    else:
        config.load_verify_locations(args.ca)
    if args.keylog:
        config.secrets_log_file = open(args.keylog, "a", buffering=1)
    if args.case == "chacha20":
        config.cipher_suites = [CipherSuite.CHACHA20_POLY1305_SHA256]
    if args.case == "versionnegotiation":
        # Start with the reserved version (aioquic needs Initial keys for every version it
        # starts with, hence its place in the list); on Version Negotiation aioquic starts
        # over with the first version of this list that the server offers (RFC 9368 §2.2).
        config.supported_versions = [GREASE_VERSION, QuicProtocolVersion.VERSION_1]
    if args.case == "v2":
        # Start in v1 and offer v2 first in version_information: a server that does
        # compatible version negotiation (RFC 9368) moves the connection to v2.
        config.original_version = QuicProtocolVersion.VERSION_1
        config.supported_versions = [QuicProtocolVersion.VERSION_2, QuicProtocolVersion.VERSION_1]
    if ticket is not None:
        config.session_ticket = ticket
    return config


async def fetch(protocol, path, out_dir):
    reader, writer = await protocol.create_stream()
    writer.write(f"GET {path}\r\n".encode())
    writer.write_eof()
    body = bytearray()
    while True:
        chunk = await reader.read(1 << 16)
        if not chunk:
            break
        body += chunk
        if len(body) > MAX_RESPONSE:
            raise RuntimeError(f"{path}: response too large")
    # The reader also reports EOF when the connection dies: only a FIN from
    # the server means the body is complete.
    if writer.get_extra_info("stream_id") not in protocol.finished:
        raise RuntimeError(f"{path}: stream did not end with FIN")
    name = os.path.basename(path) or "index.html"
    with open(os.path.join(out_dir, name), "wb") as f:
        f.write(body)
    return len(body)


async def fetch_h3(protocol, authority, path, out_dir):
    headers, body = await protocol.get(authority, path)
    status = dict(headers or []).get(b":status")
    if status != b"200":
        raise RuntimeError(f"{path}: HTTP status {status!r}")
    name = os.path.basename(path) or "index.html"
    with open(os.path.join(out_dir, name), "wb") as f:
        f.write(body)
    return len(body)


async def fetch_all(protocol, paths, out_dir, authority=None):
    if isinstance(protocol, H3ClientProtocol):
        jobs = (fetch_h3(protocol, authority, p, out_dir) for p in paths)
    else:
        jobs = (fetch(protocol, p, out_dir) for p in paths)
    sizes = await asyncio.gather(*jobs)
    return sum(sizes)


async def one_connection(args, host, port, paths, ticket=None, early=False):
    """Fetch paths on one connection. Returns (bytes, new ticket, tls state)."""
    got_ticket = asyncio.Event()
    tickets = []

    def on_ticket(t):
        tickets.append(t)
        got_ticket.set()

    config = client_config(args, host, ticket)
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    async with connect(
        host,
        port,
        configuration=config,
        session_ticket_handler=on_ticket,
        create_protocol=H3ClientProtocol if args.case == "http3" else ClientProtocol,
        wait_connected=not early,
    ) as protocol:
        if args.case == "keyupdate":
            # aioquic defers the update until the handshake is confirmed
            # (RFC 9001 §6.1), which is as early as it may happen.
            protocol.request_key_update()
        if args.case == "connectionmigration":
            await migrate(protocol)
        if early:
            # Requests written before the handshake completes go out as 0-RTT.
            task = asyncio.ensure_future(fetch_all(protocol, paths, args.out, authority))
            await protocol.wait_connected()
            nbytes = await task
        else:
            nbytes = await fetch_all(protocol, paths, args.out, authority)
        if args.case in ("resumption", "zerortt") and ticket is None:
            try:
                await asyncio.wait_for(got_ticket.wait(), 5)
            except asyncio.TimeoutError:
                raise RuntimeError("server sent no session ticket")
        if args.case == "versionnegotiation" and not getattr(
            protocol._quic, "_version_negotiated_incompatible", False
        ):
            raise RuntimeError("the server did not answer the reserved version with Version Negotiation")
        hs = protocol.handshake
        state = {
            "resumed": hs is not None and hs.session_resumed,
            "early_accepted": hs is not None and hs.early_data_accepted,
        }
    return nbytes, (tickets[-1] if tickets else None), state


async def migrate(protocol):
    """connectionmigration: once the server's HANDSHAKE_DONE is in (a client must not
    migrate before the handshake is confirmed, RFC 9000 §9), move the connection to a new
    local socket and a new connection ID (§9.5); aioquic then sends from the new address and
    the server validates it. aioquic has no migration API: the protocol object is handed a
    new datagram transport, as its own interop client does for NAT rebinding."""
    await asyncio.sleep(0.1)
    loop = asyncio.get_running_loop()
    old = protocol._transport
    # aioquic's connect() sends from a dual-stack IPv6 socket (IPv4 as ::ffff:a.b.c.d): the
    # new socket is one too.
    sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    sock.bind(("::", 0, 0, 0))
    await loop.create_datagram_endpoint(lambda: protocol, sock=sock)
    old.close()
    protocol.change_connection_id()
    protocol.transmit()


async def run_client(args):
    if args.case not in CASES:
        print("unsupported", flush=True)
        return UNSUPPORTED
    host, port, paths = parse_urls(args.urls)
    os.makedirs(args.out, exist_ok=True)
    start = time.monotonic()
    if args.case in ("resumption", "zerortt"):
        first, rest = paths[:1], paths[1:]
        nbytes, ticket, _ = await one_connection(args, host, port, first)
        if ticket is None:
            raise RuntimeError("no session ticket")
        more, _, state = await one_connection(
            args, host, port, rest, ticket=ticket, early=args.case == "zerortt"
        )
        nbytes += more
        if not state["resumed"]:
            raise RuntimeError("second connection was not resumed")
        if args.case == "zerortt" and not state["early_accepted"]:
            raise RuntimeError("server rejected 0-RTT")
    else:
        nbytes, _, _ = await one_connection(args, host, port, paths)
    summary(nbytes, time.monotonic() - start)
    return 0


# ---------------------------------------------------------------- main


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="role", required=True)
    srv = sub.add_parser("server")
    srv.add_argument("--listen", required=True)
    srv.add_argument("--cert", required=True)
    srv.add_argument("--key", required=True)
    srv.add_argument("--root", required=True)
    srv.add_argument("--retry", action="store_true")
    srv.add_argument("--keylog")
    cli = sub.add_parser("client")
    verify = cli.add_mutually_exclusive_group(required=True)
    verify.add_argument("--ca")
    verify.add_argument("--no-verify", action="store_true")
    cli.add_argument("--out", required=True)
    cli.add_argument("--case", default="transfer")
    cli.add_argument("--keylog")
    cli.add_argument("urls", nargs="+")
    args = parser.parse_args()

    start = time.monotonic()
    # aioquic neither sets nor reads the IP ECN field (its datagram API carries no TOS byte):
    # the ecn case is unsupported in both roles (run.sh names the case in TESTCASE).
    if args.role == "server" and os.environ.get("TESTCASE") == "ecn":
        print("unsupported", flush=True)
        return 127
    try:
        if args.role == "server":
            return asyncio.run(run_server(args))
        return asyncio.run(run_client(args))
    except Exception as e:  # report, never a traceback-only failure
        log(f"error: {type(e).__name__}: {e}")
        summary(0, time.monotonic() - start)
        return 1


if __name__ == "__main__":
    sys.exit(main())
