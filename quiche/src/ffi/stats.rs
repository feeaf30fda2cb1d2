//! The statistics of the C API: `quiche_stats`, `quiche_path_stats` and
//! `quiche_transport_params` in quiche 0.30's layouts, and the functions that fill them. The
//! rules of the parent module apply.
#![allow(unsafe_code)]

use std::ffi::c_int;

use libc::{size_t, sockaddr_storage, socklen_t, ssize_t};

use super::conn::{with_conn, Conn};
use super::{invalid, put, std_to_sockaddr, zeroed_storage};
use crate::connection::Stats;
use crate::error::Error;

/// `quiche_stats`, with quiche 0.30's layout field for field (a C program compiled against
/// quiche's own header reads it right).
#[repr(C)]
#[derive(Default)]
pub struct CStats {
    pub(super) recv: size_t,
    pub(super) sent: size_t,
    pub(super) lost: size_t,
    pub(super) spurious_lost: size_t,
    pub(super) retrans: size_t,
    pub(super) sent_bytes: u64,
    pub(super) recv_bytes: u64,
    pub(super) acked_bytes: u64,
    pub(super) lost_bytes: u64,
    pub(super) stream_retrans_bytes: u64,
    pub(super) dgram_recv: size_t,
    pub(super) dgram_sent: size_t,
    pub(super) paths_count: size_t,
    pub(super) reset_stream_count_local: u64,
    pub(super) stopped_stream_count_local: u64,
    pub(super) reset_stream_count_remote: u64,
    pub(super) stopped_stream_count_remote: u64,
    pub(super) data_blocked_sent_count: u64,
    pub(super) stream_data_blocked_sent_count: u64,
    pub(super) data_blocked_recv_count: u64,
    pub(super) stream_data_blocked_recv_count: u64,
    pub(super) streams_blocked_bidi_recv_count: u64,
    pub(super) streams_blocked_uni_recv_count: u64,
    pub(super) path_challenge_rx_count: u64,
    pub(super) bytes_in_flight_duration_msec: u64,
    pub(super) tx_buffered_inconsistent: bool,
}

impl CStats {
    fn new(s: &Stats) -> CStats {
        CStats {
            recv: s.recv,
            sent: s.sent,
            lost: s.lost,
            spurious_lost: s.spurious_lost,
            retrans: s.retrans,
            sent_bytes: s.sent_bytes,
            recv_bytes: s.recv_bytes,
            lost_bytes: s.lost_bytes,
            acked_bytes: s.acked_bytes,
            stream_retrans_bytes: s.stream_retrans_bytes,
            dgram_recv: s.dgram_recv,
            dgram_sent: s.dgram_sent,
            paths_count: s.paths_count,
            reset_stream_count_local: s.reset_stream_count_local,
            stopped_stream_count_local: s.stopped_stream_count_local,
            reset_stream_count_remote: s.reset_stream_count_remote,
            stopped_stream_count_remote: s.stopped_stream_count_remote,
            data_blocked_sent_count: s.data_blocked_sent_count,
            stream_data_blocked_sent_count: s.stream_data_blocked_sent_count,
            data_blocked_recv_count: s.data_blocked_recv_count,
            stream_data_blocked_recv_count: s.stream_data_blocked_recv_count,
            streams_blocked_bidi_recv_count: s.streams_blocked_bidi_recv_count,
            streams_blocked_uni_recv_count: s.streams_blocked_uni_recv_count,
            path_challenge_rx_count: s.path_challenge_rx_count,
            bytes_in_flight_duration_msec: u64::try_from(s.bytes_in_flight_duration.as_millis())
                .unwrap_or(u64::MAX),
            tx_buffered_inconsistent: s.tx_buffered_state
                == crate::connection::stats::TxBufferTrackingState::Inconsistent,
        }
    }
}

/// `quiche_transport_params` (quiche 0.30's layout): the peer's transport parameters.
#[repr(C)]
pub struct CTransportParams {
    pub(super) peer_max_idle_timeout: u64,
    pub(super) peer_max_udp_payload_size: u64,
    pub(super) peer_initial_max_data: u64,
    pub(super) peer_initial_max_stream_data_bidi_local: u64,
    pub(super) peer_initial_max_stream_data_bidi_remote: u64,
    pub(super) peer_initial_max_stream_data_uni: u64,
    pub(super) peer_initial_max_streams_bidi: u64,
    pub(super) peer_initial_max_streams_uni: u64,
    pub(super) peer_ack_delay_exponent: u64,
    pub(super) peer_max_ack_delay: u64,
    pub(super) peer_disable_active_migration: bool,
    pub(super) peer_active_conn_id_limit: u64,
    pub(super) peer_max_datagram_frame_size: ssize_t,
}

/// Fills `*out` with the peer's transport parameters; false (and nothing written) until they
/// arrived.
///
/// # Safety
/// `conn` is NULL or live; `out` NULL or valid for a write of `quiche_transport_params`.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_peer_transport_params(
    conn: *const Conn,
    out: *mut CTransportParams,
) -> bool {
    if out.is_null() {
        return false;
    }
    // SAFETY: the contract is passed on; `out` is non-NULL and writable.
    unsafe {
        with_conn(conn, false, |c| {
            let Some(tp) = c.conn.peer_transport_params() else {
                return false;
            };
            put(
                out,
                CTransportParams {
                    peer_max_idle_timeout: tp.max_idle_timeout,
                    peer_max_udp_payload_size: tp.max_udp_payload_size,
                    peer_initial_max_data: tp.initial_max_data,
                    peer_initial_max_stream_data_bidi_local: tp.initial_max_stream_data_bidi_local,
                    peer_initial_max_stream_data_bidi_remote: tp
                        .initial_max_stream_data_bidi_remote,
                    peer_initial_max_stream_data_uni: tp.initial_max_stream_data_uni,
                    peer_initial_max_streams_bidi: tp.initial_max_streams_bidi,
                    peer_initial_max_streams_uni: tp.initial_max_streams_uni,
                    peer_ack_delay_exponent: tp.ack_delay_exponent,
                    peer_max_ack_delay: tp.max_ack_delay,
                    peer_disable_active_migration: tp.disable_active_migration,
                    peer_active_conn_id_limit: tp.active_conn_id_limit,
                    peer_max_datagram_frame_size: tp
                        .max_datagram_frame_size
                        .map_or(-1, |v| ssize_t::try_from(v).unwrap_or(ssize_t::MAX)),
                },
            )
        })
    }
}

/// `quiche_path_stats` (quiche 0.30's layout).
#[repr(C)]
pub struct CPathStats {
    pub(super) local_addr: sockaddr_storage,
    pub(super) local_addr_len: socklen_t,
    pub(super) peer_addr: sockaddr_storage,
    pub(super) peer_addr_len: socklen_t,
    pub(super) validation_state: ssize_t,
    pub(super) active: bool,
    pub(super) recv: size_t,
    pub(super) sent: size_t,
    pub(super) lost: size_t,
    pub(super) retrans: size_t,
    pub(super) total_pto_count: size_t,
    pub(super) dgram_recv: size_t,
    pub(super) dgram_sent: size_t,
    pub(super) rtt: u64,
    pub(super) min_rtt: u64,
    pub(super) max_rtt: u64,
    pub(super) rttvar: u64,
    pub(super) cwnd: size_t,
    pub(super) sent_bytes: u64,
    pub(super) recv_bytes: u64,
    pub(super) lost_bytes: u64,
    pub(super) stream_retrans_bytes: u64,
    pub(super) pmtu: size_t,
    pub(super) delivery_rate: u64,
    pub(super) max_bandwidth: u64,
    pub(super) startup_exit_cwnd: u64,
}

fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Fills `*out` with the statistics of path `idx` (this library has one path: index 0).
/// Returns 0, `QUICHE_ERR_DONE` for an index past the last path (as quiche), or
/// `QUICHE_ERR_INVALID_STATE` for NULL arguments.
///
/// # Safety
/// `conn` is NULL or live; `out` NULL or valid for a write of `quiche_path_stats`.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_path_stats(
    conn: *const Conn,
    idx: size_t,
    out: *mut CPathStats,
) -> c_int {
    if out.is_null() {
        return invalid();
    }
    // SAFETY: the contract is passed on; `out` is non-NULL and writable.
    unsafe {
        with_conn(conn, invalid(), |c| {
            if idx != 0 {
                return Error::Done.to_c();
            }
            let p = c.conn.path_stats();
            let mut local_addr = zeroed_storage();
            let local_addr_len = std_to_sockaddr(&p.local_addr, &mut local_addr);
            let mut peer_addr = zeroed_storage();
            let peer_addr_len = std_to_sockaddr(&p.peer_addr, &mut peer_addr);
            put(
                out,
                CPathStats {
                    local_addr,
                    local_addr_len,
                    peer_addr,
                    peer_addr_len,
                    validation_state: p.validation_state.to_c(),
                    active: p.active,
                    recv: p.recv,
                    sent: p.sent,
                    lost: p.lost,
                    retrans: p.retrans,
                    total_pto_count: p.total_pto_count,
                    dgram_recv: p.dgram_recv,
                    dgram_sent: p.dgram_sent,
                    rtt: nanos(p.rtt),
                    min_rtt: p.min_rtt.map_or(0, nanos),
                    max_rtt: p.max_rtt.map_or(0, nanos),
                    rttvar: nanos(p.rttvar),
                    cwnd: p.cwnd,
                    sent_bytes: p.sent_bytes,
                    recv_bytes: p.recv_bytes,
                    lost_bytes: p.lost_bytes,
                    stream_retrans_bytes: p.stream_retrans_bytes,
                    pmtu: p.pmtu,
                    delivery_rate: p.delivery_rate,
                    max_bandwidth: p.max_bandwidth.unwrap_or(0),
                    startup_exit_cwnd: p.startup_exit.map_or(0, |e| e.cwnd as u64),
                },
            );
            0
        })
    }
}

/// Fills `*out` with the connection's statistics (nothing happens if either is NULL).
///
/// # Safety
/// `conn` is NULL or live; `out` NULL or valid for a write of `quiche_stats`.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stats(conn: *const Conn, out: *mut CStats) {
    if out.is_null() {
        return;
    }
    // SAFETY: the contract is passed on; `out` is non-NULL and writable.
    unsafe {
        with_conn(conn, (), |c| {
            put(out, CStats::new(&c.conn.stats()));
        })
    }
}
