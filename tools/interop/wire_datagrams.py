"""Datagram-level checks of wirecheck.py: every datagram of the server-side trace, in order,
with its addresses and size. Used by the cases that are about addresses and byte counts:

* rebind-port, rebind-addr, connectionmigration: the server's PATH_CHALLENGE on each new client
  address, answered, and at most 3x before validation (path_facts, path_problems);
* amplificationlimit: before the client's address is validated (its first Handshake packet) the
  server never sent more than 3x the bytes it received, and its handshake was large
  (amplification_facts, amplification_problems);
* ipv6: every datagram is IPv6 (ipv6_problems).

Standard library only.
"""

import subprocess
from collections import namedtuple

MIGRATION_CASES = ("rebind-port", "rebind-addr", "connectionmigration")
PATH_CHALLENGE, PATH_RESPONSE = 0x1A, 0x1B
CONNECTION_CLOSE, CONNECTION_CLOSE_APP = 0x1C, 0x1D
# Long-header packet types of QUIC v1 (the cases read here run in v1).
INITIAL, HANDSHAKE = 0, 2

# One datagram: side ("client"/"server"), the client's (address, port), UDP payload bytes, frame
# types (set), PATH_CHALLENGE data, PATH_RESPONSE data, DCIDs, whether it is IPv6, its long-header
# packet types (list), and the end of its furthest CRYPTO frame (offset + length, 0 if none).
Datagram = namedtuple("Datagram", "side addr size types challenges responses dcids ipv6 long_types crypto_end")


def as_int(v):
    return int(v, 16) if v.lower().startswith("0x") else int(v)


def read_datagrams(pcap, keylog, port):
    """Every datagram to or from the server's port, in order (see Datagram). The client
    address is the source of a client datagram and the destination of a server one."""
    fields = ["udp.srcport", "ip.src", "ipv6.src", "udp.dstport", "ip.dst", "ipv6.dst", "udp.length",
              "quic.frame_type", "quic.path_challenge.data", "quic.path_response.data", "quic.dcid",
              "quic.long.packet_type", "quic.crypto.offset", "quic.crypto.length"]
    cmd = ["tshark", "-n", "-r", pcap, "-o", f"tls.keylog_file:{keylog}", "-d", f"udp.port=={port},quic",
           "-Y", f"udp.port == {port}", "-T", "fields", "-E", "separator=\t", "-E", "aggregator=,",
           "-E", "occurrence=a"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"tshark failed: {out.stderr.strip()[:300]}")
    rows = []
    for line in out.stdout.splitlines():
        cols = line.split("\t") + [""] * len(fields)
        v = [[x for x in c.split(",") if x] for c in cols[:len(fields)]]
        if not v[0] or not v[3] or not v[6]:
            continue
        from_server = int(v[0][0]) == port
        if from_server:
            addr = ((v[4] or v[5] or ["?"])[0], int(v[3][0]))
        else:
            addr = ((v[1] or v[2] or ["?"])[0], int(v[0][0]))
        ipv6 = bool(v[2] or v[5]) and not (v[1] or v[4])
        crypto_end = max((as_int(o) + as_int(n) for o, n in zip(v[12], v[13])), default=0)
        rows.append(Datagram("server" if from_server else "client", addr, int(v[6][0]) - 8,
                             {as_int(t) for t in v[7]}, v[8], v[9], v[10], ipv6,
                             [as_int(t) for t in v[11]], crypto_end))
    return rows


class PathFacts:
    def __init__(self):
        self.addrs = []  # client addresses in order of first appearance (either direction)
        self.server_addrs = []  # client addresses the server sent to, in order
        self.first_to = {}  # address -> frame types of the server's first datagram to it
        self.challenges = {}  # data -> address the server sent that PATH_CHALLENGE to
        self.client_challenges = 0
        self.responses = set()  # PATH_RESPONSE data from the client
        self.validated_at = {}  # address -> index of the datagram that validated it
        self.before = {}  # address -> [sent by server, received from client] before validation
        self.first_dcid = {}  # address -> DCID of the client's first datagram from it
        self.closed_after = set()  # addresses challenged before the client closed the connection


def path_facts(rows):
    p = PathFacts()
    for side, addr, size, types, challenges, responses, dcids, *_ in rows:
        if addr not in p.addrs:
            p.addrs.append(addr)
        if addr not in p.validated_at and addr != p.addrs[0]:
            b = p.before.setdefault(addr, [0, 0])
            b[0 if side == "server" else 1] += size
        if side == "server":
            if addr not in p.server_addrs:
                p.server_addrs.append(addr)
                p.first_to[addr] = types
            for c in challenges:
                p.challenges.setdefault(c, addr)
        else:
            if addr not in p.first_dcid:
                p.first_dcid[addr] = dcids[:1]
            p.client_challenges += len(challenges)
            if types & {CONNECTION_CLOSE, CONNECTION_CLOSE_APP}:
                p.closed_after.update(p.challenges.values())
            for r in responses:
                p.responses.add(r)
                # RFC 9000 §8.2.2: a PATH_RESPONSE on any path validates the path its
                # PATH_CHALLENGE went out on.
                a = p.challenges.get(r)
                if a is not None and a not in p.validated_at:
                    p.validated_at[a] = len(p.validated_at)
    return p


def path_problems(p, case):
    """The interop runner's rebind-port, rebind-addr and connectionmigration checks (its
    §3.20-3.22), on the server's side: the server moved to more than one client address (more
    than one IP address in rebind-addr); its first datagram to each new address carries a
    PATH_CHALLENGE; at least one of the challenges it sent to each new address came back in a
    PATH_RESPONSE with the same data (challenges sent to an address the relay had already
    given up, e.g. the old path probed by §9.3.3, cannot be answered; nor can a challenge to
    the last address that the client's CONNECTION_CLOSE crossed); before an address was
    validated the server sent there at most 3x what it received from it (§8.2, §9.3)."""
    problems = []
    if len(p.server_addrs) < 2:
        problems.append(f"the server sent to {len(p.server_addrs)} client address(es), expected more than one")
    if case == "rebind-addr" and len({a[0] for a in p.server_addrs}) < 2:
        problems.append(f"the server sent to client IPs {sorted({a[0] for a in p.server_addrs})}, expected more than one")
    for addr in p.server_addrs[1:]:
        if PATH_CHALLENGE not in p.first_to[addr]:
            problems.append(f"the server's first datagram to {addr} has frames "
                            f"{sorted(map(hex, p.first_to[addr]))}, no PATH_CHALLENGE")
        sent = [c for c, a in p.challenges.items() if a == addr]
        # A challenge that crosses the client's CONNECTION_CLOSE (a rebinding in the last
        # round trip of the transfer: the client closes as soon as it has the file) goes
        # unanswered; only the last address can be in that case.
        closing = addr == p.server_addrs[-1] and addr in p.closed_after
        if not any(c in p.responses for c in sent) and not closing:
            problems.append(f"none of the {len(sent)} PATH_CHALLENGE(s) to {addr} answered by a PATH_RESPONSE")
        s, r = p.before.get(addr, [0, 0])
        if s > 3 * r:
            problems.append(f"the server sent {s} bytes to {addr} before validating it, more than 3 x {r} received")
    if case == "connectionmigration":
        # RFC 9000 §9.5: a client that migrates uses a new connection ID on the new path.
        first = p.first_dcid.get(p.addrs[0])
        for addr in p.addrs[1:]:
            d = p.first_dcid.get(addr)
            if d and first and d == first:
                problems.append(f"the client's first datagram from {addr} uses the old path's DCID {d}")
    return problems


def path_summary(p):
    if p is None:
        return ""
    unanswered = sum(1 for c in p.challenges if c not in p.responses)
    before = {f"{a[0]}:{a[1]}": tuple(v) for a, v in p.before.items()}
    return (f" client_addrs={[f'{a[0]}:{a[1]}' for a in p.addrs]}"
            f" server_sent_to={len(p.server_addrs)} server_challenges={len(p.challenges)}"
            f" unanswered={unanswered} client_challenges={p.client_challenges}"
            f" validated={len(p.validated_at)} before_validation(sent,received)={before}"
            f" first_dcids={ {f'{a[0]}:{a[1]}': d for a, d in p.first_dcid.items()} }")


class AmpFacts:
    def __init__(self):
        self.received = 0  # UDP payload bytes from the client before its address was validated
        self.sent = 0  # UDP payload bytes from the server in that time
        self.worst = None  # (sent, received) at the server datagram with the highest ratio
        self.over = []  # (datagram index, sent, received) where sent > 3 x received
        self.validated_at = None  # index of the client's first datagram with a Handshake packet
        self.crypto = 0  # the server's CRYPTO stream reach (offset + length), bytes
        self.client_datagrams = 0  # client datagrams before validation


def amplification_facts(rows):
    """Walks the server-side trace as the interop runner's amplificationlimit check does: each
    client datagram adds to what the server received from the client's address, each server
    datagram to what it sent; the walk ends at the client's first datagram with a Handshake
    packet (RFC 9000 §8.1: a Handshake packet from the client validates its address). A server
    datagram that brings the total sent above 3x the total received is a violation."""
    a = AmpFacts()
    for i, d in enumerate(rows):
        if d.side == "server":
            # The Handshake CRYPTO stream (the certificate chain) is by far the server's
            # longest: its reach measures the first flight. Counted over the whole trace.
            a.crypto = max(a.crypto, d.crypto_end)
        if a.validated_at is not None:
            continue
        if d.side == "client":
            if HANDSHAKE in d.long_types:
                a.validated_at = i
                continue
            a.received += d.size
            a.client_datagrams += 1
        else:
            a.sent += d.size
            if a.worst is None or a.sent * max(a.worst[1], 1) > a.worst[0] * max(a.received, 1):
                a.worst = (a.sent, a.received)
            if a.sent > 3 * a.received:
                a.over.append((i, a.sent, a.received))
    return a


# The interop runner asks for at least this much Handshake CRYPTO data from the server: proof
# that the large certificate chain was used and the first flight exceeded 3x an Initial.
MIN_SERVER_CRYPTO = 7500


def amplification_problems(a):
    problems = []
    if a.validated_at is None:
        problems.append("no Handshake packet from the client: its address was never validated")
    if a.over:
        i, s, r = a.over[0]
        problems.append(f"before the client's address was validated the server sent {s} bytes for {r} received "
                        f"(more than 3x; datagram {i}, {len(a.over)} such datagram(s))")
    if a.crypto < MIN_SERVER_CRYPTO:
        problems.append(f"the server sent {a.crypto} bytes of CRYPTO data, expected >= {MIN_SERVER_CRYPTO} (large chain)")
    return problems


def amplification_summary(a):
    if a is None:
        return ""
    ratio = f"{a.worst[0] / max(a.worst[1], 1):.2f}" if a.worst else "-"
    return (f" before_validation(sent,received)=({a.sent},{a.received}) client_datagrams={a.client_datagrams}"
            f" max_ratio={ratio} validated_at_datagram={a.validated_at} server_crypto_bytes={a.crypto}")


def ipv6_problems(rows):
    """The interop runner's ipv6 case: the test ran over IPv6 (it checks that the server sent no
    QUIC over IPv4; here every datagram both ways is IPv6)."""
    if not rows:
        return ["no datagram in the trace"]
    v4 = [i for i, d in enumerate(rows) if not d.ipv6]
    if v4:
        return [f"{len(v4)} of {len(rows)} datagrams are not IPv6 (first: datagram {v4[0]})"]
    return []


def ipv6_summary(rows):
    if rows is None:
        return ""
    return f" ipv6_datagrams={sum(d.ipv6 for d in rows)}/{len(rows)}"
