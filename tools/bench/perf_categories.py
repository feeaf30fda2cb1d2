#!/usr/bin/env python3
"""Sorts the samples of one process's `perf script` into the per-packet cost categories of
tools/bench/README.md, and prints each category's share and nanoseconds per packet.

Input (stdin): `perf script -F comm,tid,period,ip,sym,dso` of a `perf record --call-graph
dwarf` run: a header line per sample, then its call chain, innermost frame first.

Each sample gets one category, decided from its call chain in five passes:
 1. overrides: a frame anywhere in the chain (header protection runs the same AES code as the
    AEAD, so the AES frame alone cannot tell them apart);
 2. leaf rules: the function the sample landed in (a copy is a copy whoever asked for it);
 3. specific rules: the innermost frame that one of them names (the ACK tracker called from
    the receive path counts as ACK generation);
 4. catch-alls: the innermost frame that one of them names (the rest of the library's send or
    receive path, the kernel's system call paths, ...);
 5. fallbacks: the same, for what is left (other kernel, library, apps, libc code).
Functions the compiler inlined have no frame of their own: their cost shows under their
caller. Run with --unmatched to list the innermost frames of samples no rule took.

Usage: perf_categories.py --task-clock-ms MS --packets N [--top K] [--unmatched] < script
"""

import argparse
import collections
import re
import sys

# (category, regex on the symbol). Overrides: any frame of the chain. Header protection: our
# HeaderProtectionKey (its mask is one AES block: ring's new_mask -> aes_hw_encrypt) and
# decrypt_hdr; applying it is partly inlined into encrypt_pkt, whose own cost counts as AEAD.
# Kernel copies are split by what they copy: the body file (read by the server, written by the
# client) or datagrams (to and from the socket).
OVERRIDES = [
    ("header protection", r"HeaderProtectionKey|new_mask|decrypt_hdr|hp_parts|aes_hw_encrypt$|"
     r"aes_nohw_encrypt$"),
]

# Only the innermost frame (the function the sample landed in): what it does is the category,
# whoever called it. A category with `@file` is split in two by whether the chain goes through
# the kernel's file code (FILE_CONTEXT).
LEAF = [
    ("copies (user: memmove/memcpy)", r"^(__)?mem(move|cpy)|__memmove_|__memcpy_|_memcpy"),
    ("copies (kernel)@file",
     r"_copy_to_iter|_copy_from_iter|copy_user|rep_movs|copy_page|copyin|copyout|"
     r"skb_copy_datagram|csum_partial_copy|clear_page"),
    ("zeroing (memset)", r"^(__)?memset|__memset_"),
    ("heap (malloc/free)", r"^(__libc_)?(malloc|free|realloc|calloc)$|_int_malloc|_int_free|"
     r"malloc_consolidate|cfree|__rust_(alloc|dealloc|realloc)|alloc::raw_vec"),
    ("system call entry/exit", r"entry_SYSCALL|syscall_return|do_syscall_64|syscall_exit|"
     r"__x64_sys_|^syscall$|__libc_(sendmsg|recvmmsg|send|recv)|^(sendmsg|recvmmsg|sendmmsg)$|"
     r"irqentry_exit_to_user_mode|exit_to_user_mode"),
    ("clock reads", r"clock_gettime|__vdso|Instant::now|do_hres|read_hpet|vread_"),
]
FILE_CONTEXT = r"vfs_read|vfs_write|filemap_|generic_perform_write|ext4_|shmem_|ksys_read|ksys_write|ksys_pread"

# The innermost frame that one of these names decides; on one frame, the first rule that
# matches (the pacer lives in quiche::cc, so pacing comes before congestion control).
SPECIFIC = [
    ("AEAD (AES-GCM seal/open)",
     r"aes_gcm|aesni_gcm|gcm_|ghash|_ghash|aes_hw_|vpaes_|bsaes_|aes_nohw|ring::aead|"
     r"ring_core_\S*(aes|gcm|chacha|poly1305)|chacha20|poly1305|crypto::.*(seal|open)|"
     r"encrypt_pkt|decrypt_pkt|seal_in_place|open_in_place|open_within|PacketKey|open_payload"),
    ("qlog-off checks", r"quiche::qlog|qlog::"),
    ("ACK generation (receiver)", r"ack_tracker|AckTracker|ack_eliciting_received|should_ack|"
     r"ranges::RangeSet::(insert|push|remove)|encode_ack|ack_frame_len|write_ack"),
    ("loss detection", r"recovery::loss|detect_lost|lost_packets|LossDetection"),
    ("sent-packet bookkeeping", r"recovery::sent|SentPackets|SentPacket|connection::sent|"
     r"SentFrames|on_packet_sent"),
    ("pacing and timers", r"pacer|Pacer|pto::|pto_deadline|loss_detection_timer|"
     r"timeout_instant|set_timer|Timer|send_quantum|release_time"),
    ("congestion control", r"quiche::cc::|Cubic|Hystart|hystart|CongestionControl|Reno|"
     r"slow_start|bbr::"),
    ("ACK processing (sender)", r"on_ack_received|quiche::rtt::|recovery::rtt|RttStats|recovery::rate|"
     r"process_ack|handle_ack|Recovery::on_ack|newly_acked|acked_frames|on_frames_acked"),
    ("stream buffers", r"quiche::stream::|SendBuf|RecvBuf|StreamMap|stream_send|stream_recv|"
     r"RangeList|flow_control"),
    ("frame building", r"frame::.*(encode|to_bytes|write|len)|Frame::(encode|to_bytes)|"
     r"emit_frames|write_frames|push_frame|frames::(write|build)|put_varint"),
    ("frame parsing", r"frame::.*(parse|from_bytes|decode)|Frame::(parse|from_bytes)|get_varint"),
    ("packet headers and numbers", r"quiche::packet::|pkt_num|encode_pkt_num|decode_pkt_num"),
]

# Catch-alls: the innermost frame one of these names decides, if no rule above took the sample.
CATCH_ALL = [
    ("kernel: UDP send and loopback delivery",
     r"udp_sendmsg|__sys_sendmsg|__sys_sendmmsg|udp_send_skb|ip_finish_output|ip_output|"
     r"__dev_queue_xmit|loopback_xmit|net_rx_action|__netif_receive_skb|ip_rcv|udp_rcv|"
     r"udp_queue_rcv|__udp4_lib_rcv|udp_gro|skb_segment|__udp_gso_segment|do_softirq|"
     r"__local_bh_enable|sock_def_readable|ip_make_skb|ip_append_data|sys_sendmsg"),
    ("kernel: UDP receive", r"udp_recvmsg|__sys_recvmmsg|do_recvmmsg|___sys_recvmsg|"
     r"skb_recv|__skb_recv|sock_recvmsg|sys_recvmmsg|sys_recvmsg"),
    ("kernel: file I/O (reading or writing the body)", FILE_CONTEXT + r"|__x64_sys_(read|write|pread)"),
    ("kernel: epoll and scheduling", r"ep_poll|epoll|schedule|finish_task_switch|"
     r"pick_next|try_to_wake_up|enqueue_task|dequeue_task|update_curr"),
    ("library: send path, other", r"quiche::connection::send|Connection::send|send_at|"
     r"send_single|send_on_path"),
    ("library: receive path, other", r"quiche::connection::recv|Connection::recv|recv_at|"
     r"recv_single|recv_packet|process_frame|on_authenticated_packet"),
    ("library: crypto, other", r"quiche::crypto|quiche::tls|rustls"),
]

# Last: the innermost frame one of these names decides, if nothing above took the sample.
FALLBACK = [
    ("kernel: other (page faults, interrupts, ...)", r"\[kernel"),
    ("library: other", r"quiche::"),
    ("apps (event loop, batching, file)", r"quiche_apps|mio::|quiche_server|quiche_client"),
    ("libc and std, other", r"libc|std::|core::|alloc::"),
]


# Inclusive costs: the share of samples with such a frame anywhere in the chain (a function and
# everything it calls), for the entry points the categories above cut across.
INCLUSIVE = [
    ("Connection::send (packets built, sealed; all)", r"Connection>::send_at$|Connection>::send$|"
     r"Connection>::send_on_path"),
    ("Connection::recv (packets opened, processed; all)", r"Connection>::recv_at$|Connection>::recv$|"
     r"recv_with_ecn_at"),
    ("  of which ACK frames processed (on_ack_received)", r"on_ack_received"),
    ("stream_send (application data into the stream)", r">::stream_send$|SendBuf::write"),
    ("stream_recv (stream data out to the application)", r">::stream_recv$|RecvBuf::read"),
    ("timers (on_timeout, timeout_instant)", r"on_timeout|timeout_instant"),
    ("sendmsg/sendto/sendmmsg system calls (all)", r"__sys_sendmsg|__sys_sendmmsg|__sys_sendto"),
    ("recvmmsg/recvmsg system calls (all)", r"__sys_recvmmsg|do_recvmmsg|__sys_recvmsg"),
    ("epoll_wait (all)", r"do_epoll_wait|ep_poll"),
    ("file read/write system calls (all)", r"ksys_read|ksys_write|ksys_pread|vfs_read|vfs_write"),
]


def compile_rules(rules):
    return [(name, re.compile(rx)) for name, rx in rules]


def parse(stream):
    """Yields (period, [(symbol, dso), ...]) per sample, innermost frame first."""
    period, frames = None, []
    header = re.compile(r"^\S.*?\s(\d+)\s*(cpu-clock|task-clock|cycles)\S*:?\s*$")
    for line in stream:
        line = line.rstrip("\n")
        if not line.strip():
            if period is not None:
                yield period, frames
            period, frames = None, []
            continue
        if not line.startswith((" ", "\t")):
            if period is not None:
                yield period, frames
            m = header.match(line)
            period = int(m.group(1)) if m else 1
            frames = []
            continue
        # "\t    7f... symbol+0x12 (dso)"
        parts = line.strip().split(None, 1)
        rest = parts[1] if len(parts) > 1 else ""
        dso = ""
        if rest.endswith(")") and " (" in rest:
            rest, dso = rest.rsplit(" (", 1)
            dso = dso[:-1]
        sym = re.sub(r"\+0x[0-9a-f]+$", "", rest)
        if sym == "[unknown]" and "kernel" in dso:
            sym = "[kernel]"
        frames.append((sym, dso))
    if period is not None:
        yield period, frames


FILE_RX = re.compile(FILE_CONTEXT)


def categorize(frames, rules):
    """The category of a sample; `rules`: OVERRIDES, LEAF, SPECIFIC, CATCH_ALL, FALLBACK compiled."""
    overrides, leaf, specific, catch_all, fallback = rules
    for name, rx in overrides:
        if any(rx.search(sym) for sym, _ in frames):
            return name
    # Kernel frames carry a mark the fallback "kernel: other" looks for.
    labels = [sym + " [kernel" if "kernel" in dso else sym for sym, dso in frames]
    for name, rx in leaf:
        if rx.search(labels[0]):
            if name.endswith("@file"):
                base = name[: -len("@file")]
                in_file = any(FILE_RX.search(sym) for sym, _ in frames)
                return f"{base}: the body file" if in_file else f"{base}: datagrams"
            return name
    for group in (specific, catch_all, fallback):
        for label in labels:
            for name, rx in group:
                if rx.search(label):
                    return name
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task-clock-ms", type=float, required=True)
    ap.add_argument("--packets", type=int, required=True)
    ap.add_argument("--top", type=int, default=20, help="self symbols listed")
    ap.add_argument("--unmatched", action="store_true")
    a = ap.parse_args()
    rules = [compile_rules(r) for r in (OVERRIDES, LEAF, SPECIFIC, CATCH_ALL, FALLBACK)]

    cats = collections.Counter()
    selfsym = collections.Counter()
    unmatched = collections.Counter()
    copy_callers = collections.Counter()
    inclusive = collections.Counter()
    inclusive_rx = compile_rules(INCLUSIVE)
    total = 0
    for period, frames in parse(sys.stdin):
        if not frames:
            continue
        total += 1
        cat = categorize(frames, rules) or "unmatched"
        cats[cat] += 1
        leaf, dso = frames[0]
        selfsym[(leaf, dso.rsplit("/", 1)[-1])] += 1
        if cat == "unmatched":
            unmatched[(leaf, dso)] += 1
        for name, rx in inclusive_rx:
            if any(rx.search(sym) for sym, _ in frames):
                inclusive[name] += 1
        if cat.startswith("copies (user"):
            caller = next((f for f, d in frames[1:] if "libc" not in d), "?")
            copy_callers[caller] += 1
    if total == 0:
        sys.exit("no samples")
    ns_per_packet = a.task_clock_ms * 1e6 / a.packets
    print(f"{total} samples; {ns_per_packet:.1f} ns of CPU per packet in all")
    print(f"  {'category':48s} {'share':>7s} {'ns/packet':>10s}")
    order = []
    for n, _ in OVERRIDES + LEAF + SPECIFIC + CATCH_ALL + FALLBACK:
        order += [n[:-5] + ": datagrams", n[:-5] + ": the body file"] if n.endswith("@file") else [n]
    order.append("unmatched")
    for name in order:
        if cats[name]:
            share = cats[name] / total
            print(f"  {name:48s} {share * 100:6.1f}% {share * ns_per_packet:10.1f}")
    print("inclusive (a function and all it calls):")
    for name, _ in INCLUSIVE:
        share = inclusive[name] / total
        print(f"  {name:48s} {share * 100:6.1f}% {share * ns_per_packet:10.1f}")
    if copy_callers:
        print("user copies (memmove/memcpy) by caller:")
        for caller, n in copy_callers.most_common(8):
            print(f"  {n / total * 100:6.2f}%  {caller[:100]}")
    print(f"top {a.top} functions by samples of their own (self):")
    for (sym, dso), n in selfsym.most_common(a.top):
        print(f"  {n / total * 100:6.2f}%  {sym[:90]}  ({dso})")
    if a.unmatched:
        print("unmatched innermost frames:")
        for (sym, dso), n in unmatched.most_common(30):
            print(f"  {n:6d}  {sym[:100]}  ({dso})")


if __name__ == "__main__":
    main()
