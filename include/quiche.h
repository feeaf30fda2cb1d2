/*
 * quiche.h: the C API of quiche-rs, a QUIC v1 transport library (RFC 9000, 9001, 9002).
 *
 * The functions, argument orders, structure layouts and error codes follow the core of the C
 * API of Cloudflare's quiche, so programs written against it build unchanged. Link with
 * libquiche.a or libquiche.so (see quiche.pc, or the README's "C and C++" section).
 *
 * The library does no I/O: the application owns the UDP socket, hands every datagram it
 * receives to quiche_conn_recv(), sends every datagram quiche_conn_send() produces, and calls
 * quiche_conn_on_timeout() when quiche_conn_timeout_as_nanos() says so.
 *
 * Argument rules, common to every function:
 *   - a pointer to a buffer may be NULL only when its length is 0;
 *   - any other NULL pointer where an object or a result is expected makes the call fail:
 *     functions returning a code return QUICHE_ERR_INVALID_STATE, functions returning a
 *     pointer return NULL, functions returning bool return false, and void functions do
 *     nothing (out-parameters of lending functions are set to NULL and 0);
 *   - no call panics or aborts on bad input; an internal failure is reported the same way.
 * Objects (quiche_config, quiche_conn, quiche_stream_iter) are not thread-safe: use each from
 * one thread at a time. A configuration may be freed while connections made from it live.
 */

#ifndef QUICHE_H
#define QUICHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The QUIC version this library speaks: QUIC v1. */
#define QUICHE_PROTOCOL_VERSION 0x00000001

/* The longest connection ID QUIC v1 allows, in bytes. */
#define QUICHE_MAX_CONN_ID_LEN 20

/* The smallest datagram a client's first flight may use (RFC 9000 section 14.1). */
#define QUICHE_MIN_CLIENT_INITIAL_LEN 1200

/*
 * Error codes: negative return values. QUICHE_ERR_DONE is not a failure: it means there is
 * nothing more to do right now (nothing to send, nothing to read).
 */
enum quiche_error {
    /* Nothing more to do right now. */
    QUICHE_ERR_DONE = -1,
    /* The buffer given is too short. */
    QUICHE_ERR_BUFFER_TOO_SHORT = -2,
    /* The packet has a version this library does not speak. */
    QUICHE_ERR_UNKNOWN_VERSION = -3,
    /* The packet contains a frame that is malformed or not allowed. */
    QUICHE_ERR_INVALID_FRAME = -4,
    /* The packet cannot be parsed. */
    QUICHE_ERR_INVALID_PACKET = -5,
    /* The connection is in a state that does not allow the operation; also the answer to
     * invalid arguments such as NULL pointers. */
    QUICHE_ERR_INVALID_STATE = -6,
    /* The stream is in a state that does not allow the operation. */
    QUICHE_ERR_INVALID_STREAM_STATE = -7,
    /* The peer's transport parameters are invalid. */
    QUICHE_ERR_INVALID_TRANSPORT_PARAM = -8,
    /* A cryptographic operation failed. */
    QUICHE_ERR_CRYPTO_FAIL = -9,
    /* The TLS handshake failed. */
    QUICHE_ERR_TLS_FAIL = -10,
    /* The peer exceeded our flow control limits. */
    QUICHE_ERR_FLOW_CONTROL = -11,
    /* The peer exceeded our stream limits. */
    QUICHE_ERR_STREAM_LIMIT = -12,
    /* Stream data was received beyond the stream's final size. */
    QUICHE_ERR_FINAL_SIZE = -13,
    /* Congestion control failed (for example an unknown algorithm name). */
    QUICHE_ERR_CONGESTION_CONTROL = -14,
    /* The peer asked us to stop sending on the stream (STOP_SENDING). */
    QUICHE_ERR_STREAM_STOPPED = -15,
    /* The peer reset the stream (RESET_STREAM). */
    QUICHE_ERR_STREAM_RESET = -16,
    /* The peer gave more connection IDs than we allow. */
    QUICHE_ERR_ID_LIMIT = -17,
    /* No spare connection ID is available. */
    QUICHE_ERR_OUT_OF_IDENTIFIERS = -18,
    /* A key update failed. */
    QUICHE_ERR_KEY_UPDATE = -19,
    /* The peer sent more CRYPTO data than we buffer. */
    QUICHE_ERR_CRYPTO_BUFFER_EXCEEDED = -20,
    /* The peer acknowledged a packet number never sent. */
    QUICHE_ERR_INVALID_ACK_RANGE = -21,
    /* The peer acknowledged a packet number skipped on purpose (optimistic ACK attack). */
    QUICHE_ERR_OPTIMISTIC_ACK_DETECTED = -22,
    /* Declared for source compatibility with quiche; this library does not return it. */
    QUICHE_ERR_INVALID_DCID_INITIALIZATION = -23
};

/* Returns the library's version as a static NUL-terminated string. */
const char *quiche_version(void);

/*
 * Sends the library's log lines to cb, with argp passed back unchanged. One logger per
 * process: returns 0, or -1 if a logger was already installed or cb is NULL. cb may be called
 * from any thread that uses the library.
 */
int quiche_enable_debug_logging(void (*cb)(const char *line, void *argp), void *argp);

/* ---------------------------------------------------------------------------------------- */
/* Configuration: the settings connections are created from.                                */

typedef struct quiche_config quiche_config;

/* Returns a new configuration for the given version, or NULL if it is not supported. A client
 * may also use a reserved version (0x?a?a?a?a) to test Version Negotiation: the server answers
 * with it and the connection fails with QUICHE_ERR_UNKNOWN_VERSION. */
quiche_config *quiche_config_new(uint32_t version);

/* Loads our certificate chain from a PEM file (servers). Returns 0 or an error. */
int quiche_config_load_cert_chain_from_pem_file(quiche_config *config, const char *path);

/* Loads our private key from a PEM file (servers). Returns 0 or an error. */
int quiche_config_load_priv_key_from_pem_file(quiche_config *config, const char *path);

/* Loads the CA certificates that the peer's chain must lead to. Returns 0 or an error. */
int quiche_config_load_verify_locations_from_file(quiche_config *config, const char *path);

/* Whether to verify the peer's certificate (on by default for clients). */
void quiche_config_verify_peer(quiche_config *config, bool v);

/* Whether to send reserved values that keep peers tolerant of extensions (on by default). */
void quiche_config_grease(quiche_config *config, bool v);

/* Enables logging of TLS secrets; see quiche_conn_set_keylog_path(). */
void quiche_config_log_keys(quiche_config *config);

/* Enables sending and accepting 0-RTT data. */
void quiche_config_enable_early_data(quiche_config *config);

/*
 * Sets the ALPN protocols in order of preference, in the TLS wire format: each protocol
 * preceded by its length in one byte, e.g. "\x0ahq-interop\x02h3" (length 14).
 * Returns 0 or an error.
 */
int quiche_config_set_application_protos(quiche_config *config, const uint8_t *protos,
                                         size_t protos_len);

/* Sets the max_idle_timeout transport parameter, in milliseconds (0: no idle timeout). */
void quiche_config_set_max_idle_timeout(quiche_config *config, uint64_t v);

/* Sets the largest UDP payload we accept (the max_udp_payload_size transport parameter). */
void quiche_config_set_max_recv_udp_payload_size(quiche_config *config, size_t v);

/* Sets the largest UDP payload we send (at least 1200). */
void quiche_config_set_max_send_udp_payload_size(quiche_config *config, size_t v);

/* Sets initial_max_data: the connection's initial receive window, in bytes. */
void quiche_config_set_initial_max_data(quiche_config *config, uint64_t v);

/* Sets the initial receive window of bidirectional streams we open. */
void quiche_config_set_initial_max_stream_data_bidi_local(quiche_config *config, uint64_t v);

/* Sets the initial receive window of bidirectional streams the peer opens. */
void quiche_config_set_initial_max_stream_data_bidi_remote(quiche_config *config, uint64_t v);

/* Sets the initial receive window of unidirectional streams. */
void quiche_config_set_initial_max_stream_data_uni(quiche_config *config, uint64_t v);

/* Sets how many bidirectional streams the peer may open at first. */
void quiche_config_set_initial_max_streams_bidi(quiche_config *config, uint64_t v);

/* Sets how many unidirectional streams the peer may open at first. */
void quiche_config_set_initial_max_streams_uni(quiche_config *config, uint64_t v);

/* Sets the ack_delay_exponent transport parameter (at most 20). */
void quiche_config_set_ack_delay_exponent(quiche_config *config, uint64_t v);

/* Sets the max_ack_delay transport parameter, in milliseconds. */
void quiche_config_set_max_ack_delay(quiche_config *config, uint64_t v);

/* Sets the active_connection_id_limit transport parameter (at least 2). */
void quiche_config_set_active_connection_id_limit(quiche_config *config, uint64_t v);

/* Sets the disable_active_migration transport parameter. */
void quiche_config_set_disable_active_migration(quiche_config *config, bool v);

/* The built-in congestion control algorithms. */
enum quiche_cc_algorithm {
    QUICHE_CC_RENO = 0,
    QUICHE_CC_CUBIC = 1
};

/* Selects the congestion control algorithm by name: "reno" or "cubic". Returns 0 or an
 * error (QUICHE_ERR_CONGESTION_CONTROL for an unknown name). */
int quiche_config_set_cc_algorithm_name(quiche_config *config, const char *algo);

/* Selects the congestion control algorithm; values outside the enum are ignored. */
void quiche_config_set_cc_algorithm(quiche_config *config, enum quiche_cc_algorithm algo);

/* Sets the initial congestion window, in packets (default 10, at least 2). */
void quiche_config_set_initial_congestion_window_packets(quiche_config *config, size_t packets);

/* Enables or disables HyStart++ slow-start exit (on by default). */
void quiche_config_enable_hystart(quiche_config *config, bool v);

/* Enables or disables pacing (on by default): quiche_send_info.at then spaces packets out. */
void quiche_config_enable_pacing(quiche_config *config, bool v);

/* Sets the ceiling that the auto-tuned connection receive window may grow to, in bytes. */
void quiche_config_set_max_connection_window(quiche_config *config, uint64_t v);

/* Sets the ceiling that a stream's auto-tuned receive window may grow to, in bytes. */
void quiche_config_set_max_stream_window(quiche_config *config, uint64_t v);

/* Enables DATAGRAM frames (RFC 9221): received datagrams wait in a queue of recv_queue_len
 * (the oldest is dropped when it is full), datagrams to send in one of send_queue_len. */
void quiche_config_enable_dgram(quiche_config *config, bool enabled, size_t recv_queue_len,
                                size_t send_queue_len);

/* Frees a configuration. */
void quiche_config_free(quiche_config *config);

/* ---------------------------------------------------------------------------------------- */
/* Packets that arrive before a connection exists.                                          */

/*
 * Reads a packet's header without decrypting it: its version (0 for short headers and
 * Version Negotiation), its type (1 Initial, 2 Retry, 3 Handshake, 4 0-RTT, 5 short header,
 * 6 Version Negotiation), its connection IDs and its token (Initial and Retry packets).
 * dcil is the length of our connection IDs, needed for short headers. On entry each *_len
 * holds the capacity of its buffer, on return the length written. Returns 0 or an error
 * (QUICHE_ERR_BUFFER_TOO_SHORT if an output buffer is too small).
 */
int quiche_header_info(const uint8_t *buf, size_t buf_len, size_t dcil,
                       uint32_t *version, uint8_t *type,
                       uint8_t *scid, size_t *scid_len,
                       uint8_t *dcid, size_t *dcid_len,
                       uint8_t *token, size_t *token_len);

/*
 * Writes into out a Version Negotiation packet answering a packet whose source and
 * destination connection IDs were scid and dcid. Returns its length or an error.
 */
ssize_t quiche_negotiate_version(const uint8_t *scid, size_t scid_len,
                                 const uint8_t *dcid, size_t dcid_len,
                                 uint8_t *out, size_t out_len);

/*
 * Writes into out a Retry packet answering a client Initial with connection IDs scid and
 * dcid: the client must come back to new_scid with token. Returns its length or an error.
 */
ssize_t quiche_retry(const uint8_t *scid, size_t scid_len,
                     const uint8_t *dcid, size_t dcid_len,
                     const uint8_t *new_scid, size_t new_scid_len,
                     const uint8_t *token, size_t token_len,
                     uint32_t version, uint8_t *out, size_t out_len);

/* Returns whether the library speaks the given QUIC version. */
bool quiche_version_is_supported(uint32_t version);

/* ---------------------------------------------------------------------------------------- */
/* Connections.                                                                             */

typedef struct quiche_conn quiche_conn;

/*
 * Creates a server-side connection for a client's first Initial packet. scid is the
 * connection ID we choose; odcid (NULL with length 0 if no Retry was sent) is the original
 * destination connection ID recovered from a Retry token. local and peer are the socket
 * addresses (struct sockaddr_in or sockaddr_in6). Returns NULL on failure.
 */
quiche_conn *quiche_accept(const uint8_t *scid, size_t scid_len,
                           const uint8_t *odcid, size_t odcid_len,
                           const struct sockaddr *local, size_t local_len,
                           const struct sockaddr *peer, size_t peer_len,
                           quiche_config *config);

/*
 * Creates a client-side connection. server_name (may be NULL) is sent as SNI and is the name
 * the server's certificate is checked against. Returns NULL on failure. The first datagram
 * comes from quiche_conn_send().
 */
quiche_conn *quiche_connect(const char *server_name,
                            const uint8_t *scid, size_t scid_len,
                            const struct sockaddr *local, size_t local_len,
                            const struct sockaddr *peer, size_t peer_len,
                            quiche_config *config);

/*
 * Appends the connection's TLS secrets, in the NSS key log format Wireshark reads, to the
 * file at path (lines are written only if the configuration has quiche_config_log_keys()).
 * Returns whether the file could be opened.
 */
bool quiche_conn_set_keylog_path(quiche_conn *conn, const char *path);

/*
 * Writes the connection's qlog (JSON-SEQ with qlog version 0.3, the format qvis opens) to the
 * file at path, created or truncated; log_title and log_desc go into the trace's header.
 * Returns whether it worked (false if the library was built without qlog support).
 */
bool quiche_conn_set_qlog_path(quiche_conn *conn, const char *path, const char *log_title,
                               const char *log_desc);

/* Offers a session saved with quiche_conn_session() for resumption and 0-RTT (clients, before
 * the first quiche_conn_send()). Returns 0 or an error. */
int quiche_conn_set_session(quiche_conn *conn, const uint8_t *buf, size_t buf_len);

/* The addresses of a received datagram: where it came from and where it arrived. */
typedef struct {
    struct sockaddr *from;
    socklen_t from_len;
    struct sockaddr *to;
    socklen_t to_len;
} quiche_recv_info;

/*
 * Processes one received UDP datagram. The buffer is decrypted in place, so it is modified.
 * Returns the number of bytes processed or an error; a datagram that is not for this
 * connection or cannot be authenticated is dropped without an error.
 */
ssize_t quiche_conn_recv(quiche_conn *conn, uint8_t *buf, size_t buf_len,
                         const quiche_recv_info *info);

/*
 * Where and when to send a datagram. at is a time on CLOCK_MONOTONIC: with pacing on it may
 * lie in the future, and the datagram should not leave before it.
 */
typedef struct {
    struct sockaddr_storage from;
    socklen_t from_len;
    struct sockaddr_storage to;
    socklen_t to_len;
    struct timespec at;
} quiche_send_info;

/*
 * Writes the next datagram to send into out and fills out_info. Returns the datagram's length
 * or QUICHE_ERR_DONE when there is nothing to send now. Call it until QUICHE_ERR_DONE after
 * every receive, timeout and stream write.
 */
ssize_t quiche_conn_send(quiche_conn *conn, uint8_t *out, size_t out_len,
                         quiche_send_info *out_info);

/* Returns how many bytes the application may send in one burst now. */
size_t quiche_conn_send_quantum(const quiche_conn *conn);

/* Returns the largest UDP payload the connection sends. */
size_t quiche_conn_max_send_udp_payload_size(const quiche_conn *conn);

/*
 * Reads contiguous data from a stream into out. Returns the number of bytes read and sets *fin
 * when the stream's end was reached, or returns an error: QUICHE_ERR_DONE when nothing is
 * readable, QUICHE_ERR_STREAM_RESET when the peer reset the stream, its application error code
 * then stored in *out_error_code (which may be NULL).
 */
ssize_t quiche_conn_stream_recv(quiche_conn *conn, uint64_t stream_id,
                                uint8_t *out, size_t buf_len, bool *fin,
                                uint64_t *out_error_code);

/*
 * Writes data to a stream, ending it when fin is true. Returns how many bytes were accepted,
 * which may be fewer than buf_len when flow or congestion control push back: write the rest
 * later, when the stream is writable again. QUICHE_ERR_DONE when nothing fits;
 * QUICHE_ERR_STREAM_STOPPED when the peer asked us to stop, its application error code then
 * stored in *out_error_code (which may be NULL).
 */
ssize_t quiche_conn_stream_send(quiche_conn *conn, uint64_t stream_id,
                                const uint8_t *buf, size_t buf_len, bool fin,
                                uint64_t *out_error_code);

/* The directions of quiche_conn_stream_shutdown(). */
enum quiche_shutdown {
    QUICHE_SHUTDOWN_READ = 0,
    QUICHE_SHUTDOWN_WRITE = 1
};

/* Sets a stream's priority (RFC 9218): urgency 0 (first) to 7, and whether streams of the same
 * urgency share bandwidth. Returns 0 or an error. */
int quiche_conn_stream_priority(quiche_conn *conn, uint64_t stream_id,
                                uint8_t urgency, bool incremental);

/* Stops reading from (STOP_SENDING) or writing to (RESET_STREAM) a stream, with the given
 * application error code. Returns 0 or an error. */
int quiche_conn_stream_shutdown(quiche_conn *conn, uint64_t stream_id,
                                enum quiche_shutdown direction, uint64_t err);

/* Returns how many bytes quiche_conn_stream_send() would accept on the stream now, or an
 * error. */
ssize_t quiche_conn_stream_capacity(const quiche_conn *conn, uint64_t stream_id);

/* Returns 1 if len bytes can be written to the stream now, 0 if not, or an error. */
int quiche_conn_stream_writable(const quiche_conn *conn, uint64_t stream_id, size_t len);

/* Returns whether the stream has data, or its end, to read. */
bool quiche_conn_stream_readable(const quiche_conn *conn, uint64_t stream_id);

/* Returns whether all of the stream's data, up to its end, was read. */
bool quiche_conn_stream_finished(const quiche_conn *conn, uint64_t stream_id);

/* An iterator over stream IDs. */
typedef struct quiche_stream_iter quiche_stream_iter;

/* Returns the streams that have data to read (free with quiche_stream_iter_free()). */
quiche_stream_iter *quiche_conn_readable(const quiche_conn *conn);

/* Returns the streams that accept data (free with quiche_stream_iter_free()). */
quiche_stream_iter *quiche_conn_writable(const quiche_conn *conn);

/* Stores the next stream ID in *stream_id; returns false when there is none left. */
bool quiche_stream_iter_next(quiche_stream_iter *iter, uint64_t *stream_id);

/* Frees a stream iterator. */
void quiche_stream_iter_free(quiche_stream_iter *iter);

/* Returns the nanoseconds until quiche_conn_on_timeout() must be called, or UINT64_MAX when
 * no timer is armed. */
uint64_t quiche_conn_timeout_as_nanos(const quiche_conn *conn);

/* As quiche_conn_timeout_as_nanos(), in milliseconds rounded down. */
uint64_t quiche_conn_timeout_as_millis(const quiche_conn *conn);

/* Handles the timers that expired (loss detection, idle timeout, closing). */
void quiche_conn_on_timeout(quiche_conn *conn);

/*
 * Closes the connection with an error code and a reason: an application error when app is
 * true, else a transport error. The CONNECTION_CLOSE frame leaves with the next
 * quiche_conn_send(). Returns 0, or QUICHE_ERR_DONE if the connection was already closing.
 */
int quiche_conn_close(quiche_conn *conn, bool app, uint64_t err,
                      const uint8_t *reason, size_t reason_len);

/*
 * The functions below lend bytes owned by the connection through *out and *out_len (NULL and
 * 0 when empty). They stay valid until the connection is freed; the session until the next
 * call of quiche_conn_session().
 */

/* A string identifying the connection in logs (not NUL-terminated). */
void quiche_conn_trace_id(const quiche_conn *conn, const uint8_t **out, size_t *out_len);

/* Our connection ID. */
void quiche_conn_source_id(const quiche_conn *conn, const uint8_t **out, size_t *out_len);

/* The peer's connection ID. */
void quiche_conn_destination_id(const quiche_conn *conn, const uint8_t **out, size_t *out_len);

/* The ALPN protocol the handshake chose (empty before). */
void quiche_conn_application_proto(const quiche_conn *conn, const uint8_t **out,
                                   size_t *out_len);

/* The TLS session to resume later with quiche_conn_set_session() (empty if none yet). */
void quiche_conn_session(quiche_conn *conn, const uint8_t **out, size_t *out_len);

/* Returns whether the handshake completed. */
bool quiche_conn_is_established(const quiche_conn *conn);

/* Returns whether the connection resumed an earlier session. */
bool quiche_conn_is_resumed(const quiche_conn *conn);

/* Returns whether 0-RTT data can be sent or is being accepted. */
bool quiche_conn_is_in_early_data(const quiche_conn *conn);

/* Returns whether the connection is draining: the peer closed it. */
bool quiche_conn_is_draining(const quiche_conn *conn);

/* Returns whether the connection is closed; it can then be freed. */
bool quiche_conn_is_closed(const quiche_conn *conn);

/* Returns whether the idle timeout closed the connection. */
bool quiche_conn_is_timed_out(const quiche_conn *conn);

/* Returns whether this is the server side of the connection. */
bool quiche_conn_is_server(const quiche_conn *conn);

/* Returns how many more bidirectional streams the peer lets us open. */
uint64_t quiche_conn_peer_streams_left_bidi(const quiche_conn *conn);

/* Returns how many more unidirectional streams the peer lets us open. */
uint64_t quiche_conn_peer_streams_left_uni(const quiche_conn *conn);

/*
 * If the peer closed the connection with an error, returns true and stores whether it was an
 * application error, its code and its reason (lent as above). Returns false otherwise.
 */
bool quiche_conn_peer_error(const quiche_conn *conn, bool *is_app, uint64_t *error_code,
                            const uint8_t **reason, size_t *reason_len);

/* As quiche_conn_peer_error(), for the error we closed the connection with. */
bool quiche_conn_local_error(const quiche_conn *conn, bool *is_app, uint64_t *error_code,
                             const uint8_t **reason, size_t *reason_len);

/* Connection statistics. */
typedef struct {
    /* Packets received and decrypted. */
    size_t recv;
    /* Packets sent. */
    size_t sent;
    /* Packets declared lost. */
    size_t lost;
    /* Packets sent that carried retransmitted data. */
    size_t retrans;
    /* UDP payload bytes sent. */
    uint64_t sent_bytes;
    /* UDP payload bytes received. */
    uint64_t recv_bytes;
    /* Bytes of the packets declared lost. */
    uint64_t lost_bytes;
    /* Stream bytes sent again after a loss. */
    uint64_t stream_retrans_bytes;
    /* Network paths the connection used. */
    size_t paths_count;

    /* The peer's transport parameters (all 0 until they arrive). */
    uint64_t peer_max_idle_timeout;
    uint64_t peer_max_udp_payload_size;
    uint64_t peer_initial_max_data;
    uint64_t peer_initial_max_stream_data_bidi_local;
    uint64_t peer_initial_max_stream_data_bidi_remote;
    uint64_t peer_initial_max_stream_data_uni;
    uint64_t peer_initial_max_streams_bidi;
    uint64_t peer_initial_max_streams_uni;
    uint64_t peer_ack_delay_exponent;
    uint64_t peer_max_ack_delay;
    bool peer_disable_active_migration;
    uint64_t peer_active_conn_id_limit;
    /* -1 when the peer does not accept DATAGRAM frames. */
    ssize_t peer_max_datagram_frame_size;

    /* Of the lost packets: those detected by the packet threshold (RFC 9002 section 6.1.1)
     * and by the time threshold (section 6.1.2). */
    size_t lost_by_packet_threshold;
    size_t lost_by_time_threshold;
    /* Packets declared lost that were acknowledged later after all. */
    size_t spurious_lost;
    /* Probe timeouts that fired, and probe packets they sent. */
    size_t pto_count;
    size_t pto_probes_sent;
    /* Times persistent congestion collapsed the congestion window. */
    size_t persistent_congestion;
    /* Datagrams or packets dropped on receipt (undecryptable, duplicate, malformed). */
    size_t dropped;
    /* Key updates started by the peer and by us. */
    size_t peer_key_updates;
    size_t local_key_updates;
} quiche_stats;

/* Fills *out with the connection's statistics. */
void quiche_conn_stats(const quiche_conn *conn, quiche_stats *out);

/* DATAGRAM frames (RFC 9221; quiche_config_enable_dgram() on both sides). */

/* Returns the largest datagram quiche_conn_dgram_send() accepts now, or QUICHE_ERR_DONE
 * while the peer has not said that it accepts datagrams. */
ssize_t quiche_conn_dgram_max_writable_len(quiche_conn *conn);

/* Returns the length of the oldest received datagram, or QUICHE_ERR_DONE if there is none. */
ssize_t quiche_conn_dgram_recv_front_len(quiche_conn *conn);

/* Return how many received datagrams wait to be read, and their total size in bytes. */
ssize_t quiche_conn_dgram_recv_queue_len(quiche_conn *conn);
ssize_t quiche_conn_dgram_recv_queue_byte_size(quiche_conn *conn);

/* Return how many datagrams wait to be sent, and their total size in bytes. */
ssize_t quiche_conn_dgram_send_queue_len(quiche_conn *conn);
ssize_t quiche_conn_dgram_send_queue_byte_size(quiche_conn *conn);

/* Return whether the send queue, or the receive queue, is full. */
bool quiche_conn_is_dgram_send_queue_full(quiche_conn *conn);
bool quiche_conn_is_dgram_recv_queue_full(quiche_conn *conn);

/* Moves the oldest received datagram into buf and returns its length: QUICHE_ERR_DONE if there
 * is none, QUICHE_ERR_BUFFER_TOO_SHORT (the datagram stays queued) if buf is too small. */
ssize_t quiche_conn_dgram_recv(quiche_conn *conn, uint8_t *buf, size_t buf_len);

/* Queues a datagram to send and returns its length, or an error: QUICHE_ERR_DONE if the send
 * queue is full, QUICHE_ERR_BUFFER_TOO_SHORT if it is larger than
 * quiche_conn_dgram_max_writable_len(), QUICHE_ERR_INVALID_STATE if the peer does not accept
 * datagrams. */
ssize_t quiche_conn_dgram_send(quiche_conn *conn, const uint8_t *buf, size_t buf_len);

/* Frees a connection. */
void quiche_conn_free(quiche_conn *conn);

#ifdef __cplusplus
}
#endif

#endif /* QUICHE_H */
