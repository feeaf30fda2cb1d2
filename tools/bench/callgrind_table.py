#!/usr/bin/env python3
"""Instructions per packet of the library's main functions, from `callgrind_annotate
--inclusive=yes` of quiche's transfer_bench example (both sides in one process, no sockets).

Each row is the inclusive count (the function and all it calls) of the first function whose
name matches the row's pattern, divided by the data packets the server sent. Sending covers
both sides' packets (the client's ACKs too), and so does receiving.

Usage: callgrind_table.py --packets N < callgrind_annotate_output
"""

import argparse
import re
import sys

ROWS = [
    ("all (handshake included)", r"PROGRAM TOTALS"),
    ("Connection::send_on_path_at (all sending)", r"Connection<F>>::send_on_path_at$|Connection>::send_on_path_at$"),
    ("  write_packet (frames, sealing)", r"::write_packet$"),
    ("  encrypt_pkt (AEAD seal + header protection)", r"protection::encrypt_pkt$"),
    ("    ring aes_gcm::seal", r"ring::aead::aes_gcm::seal$"),
    ("  Recovery::on_packet_sent", r"Recovery<P>>?::on_packet_sent$|Recovery<P>::on_packet_sent$"),
    ("  Pacer::on_packet_sent", r"Pacer::on_packet_sent$"),
    ("  SendBuf::emit (stream data into the packet)", r"SendBuf::emit$"),
    ("Connection::recv (all receiving)", r"::recv_datagram$|::recv_with_ecn_at$"),
    ("  ring aes_gcm::open", r"ring::aead::aes_gcm::open$"),
    ("  header protection mask (ring aes_new_mask)", r"aes_new_mask$"),
    ("  Recovery::on_ack_received", r"Recovery<P>::on_ack_received$"),
    ("  RecvBuf::write (packet into the stream buffer)", r"RecvBuf::write$"),
    ("stream_send (application data in)", r"StreamMap>::stream_send$"),
    ("stream_recv (application data out)", r"StreamMap>::stream_recv$"),
    ("StreamMap::refresh", r"StreamMap::refresh$"),
    ("memcpy/memmove (all callers)", r"__mem(cpy|move)_avx_unaligned_erms$"),
]

# "  1,234 (12.34%)  /path/file.rs:crate::module::function [/path/binary]"
LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(?:[^ ]*?\.[A-Za-z]+:(?!:)|\?\?\?:)?(.*?)(?:\s+\[[^\]]*\])?\s*$")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--packets", type=int, required=True, help="data packets the server sent")
    a = ap.parse_args()
    found = {}
    for line in sys.stdin:
        if "=>" in line:
            continue
        m = LINE.match(line)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        name = m.group(2).strip()
        for label, rx in ROWS:
            if label not in found and re.search(rx, name):
                found[label] = ir
    print(f"instructions per server data packet ({a.packets} packets), inclusive:")
    for label, _ in ROWS:
        ir = found.get(label)
        cell = f"{ir / a.packets:10.0f}" if ir is not None else "         -"
        print(f"  {label:52s} {cell}")


if __name__ == "__main__":
    main()
