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

/* The default QUIC version: QUIC v1. QUIC v2 (0x6b3343cf, RFC 9369) is supported too:
 * pass it to quiche_config_new, and see quiche_version_is_supported. */
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

/* Loads the CA certificates of a directory: every PEM file in it with rustls, OpenSSL's hashed
 * layout (c_rehash) with BoringSSL. Returns 0 or an error. */
int quiche_config_load_verify_locations_from_directory(quiche_config *config, const char *path);

/* The key exchange groups to offer or accept, most preferred first, separated by colons (e.g.
 * "X25519:P-256"). Returns 0, or an error for an unknown group or an empty list. */
int quiche_config_set_curves_list(quiche_config *config, const char *curves);

/* Configures the session ticket key material (48 bytes with BoringSSL), e.g. one key shared by
 * the servers of a cluster so that each resumes the others' sessions. Returns 0 or an error.
 * Only in a library built with the boringssl-boring-crate feature, as in quiche. */
int quiche_config_set_ticket_key(quiche_config *config, const uint8_t *key, size_t key_len);

/* Whether to verify the peer's certificate. Off by default on both sides, as in quiche: a
 * client calls it with true (and loads CA certificates) to authenticate the server. */
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

/* Path MTU discovery (DPLPMTUD, RFC 8899), on by default: datagrams start at 1200 bytes and
 * probes raise them up to the size above; the socket should set Don't Fragment. */
void quiche_config_discover_pmtu(quiche_config *config, bool discover);

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

/*
 * Sets the stateless reset token (16 bytes at v) a server sends for the connection ID it
 * passes to the next quiche_accept calls. NULL, and the default: a token derived from the
 * static key (quiche_config_set_stateless_reset_key). No effect on clients.
 */
void quiche_config_set_stateless_reset_token(quiche_config *config, const uint8_t *v);

/* Bytes a server sends per byte received from an address it has not validated (default 3). */
void quiche_config_set_max_amplification_factor(quiche_config *config, size_t v);

/* Caps the pacing rate, in bytes per second. */
void quiche_config_set_max_pacing_rate(quiche_config *config, uint64_t v);

/* Whether a new path needs a connection ID of the peer's that no other path used. */
void quiche_config_set_disable_dcid_reuse(quiche_config *config, bool v);

/*
 * Beyond quiche's API: whether connections issue their own connection IDs up to the peer's
 * limit after the handshake and replace retired ones (default false, as in quiche: the
 * application calls quiche_conn_new_scid). A server routing by ID must then route every ID
 * quiche_conn_source_ids lists.
 */
void quiche_config_enable_automatic_connection_ids(quiche_config *config, bool v);

/* Whether CUBIC counts idle time from when the sender ran out of data (default true). */
void quiche_config_set_enable_cubic_idle_restart_fix(quiche_config *config, bool v);

/* Kept for quiche's API; does nothing. */
void quiche_config_set_use_initial_max_data_as_flow_control_win(quiche_config *config, bool v);

/*
 * Beyond quiche's API: sets the 32-byte static key stateless reset tokens are derived from
 * (RFC 9000 section 10.3.2; random per config by default). A server restarted with the same
 * key can reset the connections it lost. Returns 0 or QUICHE_ERR_INVALID_STATE.
 */
int quiche_config_set_stateless_reset_key(quiche_config *config, const uint8_t *key,
                                          size_t key_len);

/*
 * Beyond quiche's API: writes into out the stateless reset answering a short-header datagram
 * of received_len bytes addressed to dcid, an ID of ours no connection knows. The reset is
 * always smaller than that datagram; QUICHE_ERR_DONE for datagrams not to answer (too small
 * to be a packet for us: they could be resets themselves). Returns the reset's length or an
 * error. Rate-limit it per peer address.
 */
ssize_t quiche_config_stateless_reset(const quiche_config *config,
                                      const uint8_t *dcid, size_t dcid_len,
                                      size_t received_len, uint8_t *out, size_t out_len);

/* Sets the disable_active_migration transport parameter. */
void quiche_config_set_disable_active_migration(quiche_config *config, bool v);

/* The built-in congestion control algorithms. */
enum quiche_cc_algorithm {
    QUICHE_CC_RENO = 0,
    QUICHE_CC_CUBIC = 1,
    /* BBR (draft-ietf-ccwg-bbr-06); quiche's name and value. */
    QUICHE_CC_BBR2_GCONGESTION = 4,
    /* The same, by a shorter name. */
    QUICHE_CC_BBR2 = 4
};

/* Selects the congestion control algorithm by name: "reno", "cubic" or "bbr" ("bbr2"). Returns 0 or an
 * error (QUICHE_ERR_CONGESTION_CONTROL for an unknown name). */
int quiche_config_set_cc_algorithm_name(quiche_config *config, const char *algo);

/* Selects the congestion control algorithm; values outside the enum are ignored. */
void quiche_config_set_cc_algorithm(quiche_config *config, enum quiche_cc_algorithm algo);

/* Sets the initial congestion window, in packets (default 10, at least 2). */
void quiche_config_set_initial_congestion_window_packets(quiche_config *config, size_t packets);

/* Enables or disables HyStart++ slow-start exit (on by default). */
void quiche_config_enable_hystart(quiche_config *config, bool v);

/* Beyond quiche's API: how slow start ends. */
enum quiche_slow_start {
    QUICHE_SLOW_START_STANDARD = 0,
    QUICHE_SLOW_START_HYSTART = 1,
    QUICHE_SLOW_START_SEARCH = 2
};

/* Selects the slow-start strategy (standard, HyStart++ or SEARCH); values outside the enum are
 * ignored. Undoes an earlier quiche_config_enable_hystart(config, false). */
void quiche_config_set_slow_start(quiche_config *config, enum quiche_slow_start strategy);

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
                           const struct sockaddr *local, socklen_t local_len,
                           const struct sockaddr *peer, socklen_t peer_len,
                           quiche_config *config);

/*
 * Creates a client-side connection. server_name (may be NULL) is sent as SNI and is the name
 * the server's certificate is checked against. Returns NULL on failure. The first datagram
 * comes from quiche_conn_send().
 */
quiche_conn *quiche_connect(const char *server_name,
                            const uint8_t *scid, size_t scid_len,
                            const struct sockaddr *local, socklen_t local_len,
                            const struct sockaddr *peer, socklen_t peer_len,
                            quiche_config *config);

/*
 * BoringSSL only (a library built with the boringssl-boring-crate feature, as in quiche): a
 * connection whose TLS runs on the application's own configured SSL * (its SSL_CTX supplies
 * verification, certificates, ALPN, session cache and key log; the connection installs the
 * QUIC hooks and transport parameters). The connection owns ssl from then on, also when NULL
 * is returned. A server passes the original destination connection ID after a Retry as odcid
 * (NULL, 0 otherwise).
 */
quiche_conn *quiche_conn_new_with_tls(const uint8_t *scid, size_t scid_len,
                                      const uint8_t *odcid, size_t odcid_len,
                                      const struct sockaddr *local, socklen_t local_len,
                                      const struct sockaddr *peer, socklen_t peer_len,
                                      const quiche_config *config, void *ssl,
                                      bool is_server);

/*
 * As quiche_conn_new_with_tls() for a client whose first Destination Connection ID is dcid
 * (random if NULL). quiche builds it only with its custom-client-dcid feature (NULL
 * otherwise); here it is always there (with boringssl-boring-crate).
 */
quiche_conn *quiche_conn_new_with_tls_and_client_dcid(const uint8_t *scid, size_t scid_len,
                                      const uint8_t *dcid, size_t dcid_len,
                                      const struct sockaddr *local, socklen_t local_len,
                                      const struct sockaddr *peer, socklen_t peer_len,
                                      const quiche_config *config, void *ssl);

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

/* As quiche_conn_set_keylog_path(), to a file descriptor the connection takes over (it closes
 * it when done). */
void quiche_conn_set_keylog_fd(quiche_conn *conn, int fd);

/* Sets our max_idle_timeout (ms) before the connection sent or received anything. */
int quiche_conn_set_max_idle_timeout(quiche_conn *conn, uint64_t v);

/* As quiche_conn_set_qlog_path(), to a file descriptor the connection takes over (it closes it
 * when done). */
void quiche_conn_set_qlog_fd(quiche_conn *conn, int fd, const char *log_title,
                             const char *log_desc);

/* Offers a session saved with quiche_conn_session() for resumption and 0-RTT (clients, before
 * the first quiche_conn_send()). Returns 0 or an error: QUICHE_ERR_TLS_FAIL for bytes that
 * cannot be resumed (with rustls, a session saved by another process or another config; see
 * quiche_conn_session()). */
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
 * As quiche_conn_recv, for a datagram whose IP header carried the ECN codepoint ecn (the two
 * low bits of the IPv4 TOS or IPv6 traffic class byte, from IP_RECVTOS / IPV6_RECVTCLASS): the
 * codepoints are counted and reported to the peer (RFC 9000 section 13.4). Not in quiche.
 */
ssize_t quiche_conn_recv_with_ecn(quiche_conn *conn, uint8_t *buf, size_t buf_len,
                                  const quiche_recv_info *info, uint8_t ecn);

/*
 * The ECN codepoint (2 = ECT(0), 0 = not-ECT) to set on the next datagram quiche_conn_send
 * writes: ECT(0) while the path is tested for ECN and once it is found capable. Call it before
 * each quiche_conn_send. Not in quiche.
 */
uint8_t quiche_conn_send_ecn(const quiche_conn *conn);

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

/*
 * Connection migration (RFC 9000 section 9). Like quiche_conn_send(), for the path whose local
 * address is from and peer address is to (either NULL: any): probes of a path other than the
 * active one go out this way, from the socket of their local address.
 */
ssize_t quiche_conn_send_on_path(quiche_conn *conn, uint8_t *out, size_t out_len,
                                 const struct sockaddr *from, socklen_t from_len,
                                 const struct sockaddr *to, socklen_t to_len,
                                 quiche_send_info *out_info);

/*
 * Starts validating the path from local to peer; *seq receives the sequence number of the
 * peer connection ID it uses. 0, or QUICHE_ERR_INVALID_STATE (handshake not confirmed, or the
 * peer disabled active migration), QUICHE_ERR_OUT_OF_IDENTIFIERS (no spare connection ID).
 */
int quiche_conn_probe_path(quiche_conn *conn, const struct sockaddr *local, socklen_t local_len,
                           const struct sockaddr *peer, socklen_t peer_len, uint64_t *seq);

/* Moves a client connection to the path from local to peer (validated if it is not yet). */
int quiche_conn_migrate(quiche_conn *conn, const struct sockaddr *local, socklen_t local_len,
                        const struct sockaddr *peer, socklen_t peer_len, uint64_t *seq);

/* Moves a client connection to a new local address, keeping the peer address. */
int quiche_conn_migrate_source(quiche_conn *conn, const struct sockaddr *local,
                               socklen_t local_len, uint64_t *seq);

/* 1 if the path from -> to is validated, 0 if not, QUICHE_ERR_INVALID_STATE if unknown. */
int quiche_conn_is_path_validated(const quiche_conn *conn, const struct sockaddr *from,
                                  size_t from_len, const struct sockaddr *to, size_t to_len);

/* Path events (what happened to the connection's paths), in the order they happened. */
enum quiche_path_event_type {
    QUICHE_PATH_EVENT_NEW,
    QUICHE_PATH_EVENT_VALIDATED,
    QUICHE_PATH_EVENT_FAILED_VALIDATION,
    QUICHE_PATH_EVENT_CLOSED,
    QUICHE_PATH_EVENT_REUSED_SOURCE_CONNECTION_ID,
    QUICHE_PATH_EVENT_PEER_MIGRATED,
    QUICHE_PATH_EVENT_PMTU_UPDATED
};

typedef struct quiche_path_event quiche_path_event;

/* The next path event (free it with quiche_path_event_free()), or NULL when there is none. */
quiche_path_event *quiche_conn_path_event_next(quiche_conn *conn);

/* The event's type. */
enum quiche_path_event_type quiche_path_event_type(const quiche_path_event *ev);

/* The local and peer addresses of an event of the matching type (nothing is written for
 * another type). */
void quiche_path_event_new(const quiche_path_event *ev,
                           struct sockaddr_storage *local, socklen_t *local_len,
                           struct sockaddr_storage *peer, socklen_t *peer_len);
void quiche_path_event_validated(const quiche_path_event *ev,
                                 struct sockaddr_storage *local, socklen_t *local_len,
                                 struct sockaddr_storage *peer, socklen_t *peer_len);
void quiche_path_event_failed_validation(const quiche_path_event *ev,
                                         struct sockaddr_storage *local, socklen_t *local_len,
                                         struct sockaddr_storage *peer, socklen_t *peer_len);
void quiche_path_event_closed(const quiche_path_event *ev,
                              struct sockaddr_storage *local, socklen_t *local_len,
                              struct sockaddr_storage *peer, socklen_t *peer_len);
void quiche_path_event_peer_migrated(const quiche_path_event *ev,
                                     struct sockaddr_storage *local, socklen_t *local_len,
                                     struct sockaddr_storage *peer, socklen_t *peer_len);

/* A PMTU_UPDATED event's path and its new path MTU (the largest UDP payload validated on it, or
 * the minimum after a black hole). */
void quiche_path_event_pmtu_updated(const quiche_path_event *ev,
                                    struct sockaddr_storage *local, socklen_t *local_len,
                                    struct sockaddr_storage *peer, socklen_t *peer_len,
                                    size_t *pmtu);

/* A REUSED_SOURCE_CONNECTION_ID event's fields (this library never raises one). */
void quiche_path_event_reused_source_connection_id(const quiche_path_event *ev, uint64_t *id,
                                                   struct sockaddr_storage *old_local,
                                                   socklen_t *old_local_len,
                                                   struct sockaddr_storage *old_peer,
                                                   socklen_t *old_peer_len,
                                                   struct sockaddr_storage *local,
                                                   socklen_t *local_len,
                                                   struct sockaddr_storage *peer,
                                                   socklen_t *peer_len);

/* Frees an event. */
void quiche_path_event_free(quiche_path_event *ev);

typedef struct quiche_socket_addr_iter quiche_socket_addr_iter;

/* The peer addresses of the paths whose local address is from (free the iterator with
 * quiche_socket_addr_iter_free()); NULL on a bad argument. */
quiche_socket_addr_iter *quiche_conn_paths_iter(quiche_conn *conn, const struct sockaddr *from,
                                                size_t from_len);

/* Writes the next peer address; false when there is none left. */
bool quiche_socket_addr_iter_next(quiche_socket_addr_iter *iter,
                                  struct sockaddr_storage *peer, size_t *peer_len);

/* Frees an iterator. */
void quiche_socket_addr_iter_free(quiche_socket_addr_iter *iter);


/* Returns how many bytes the application may send in one burst now. */
size_t quiche_conn_send_quantum(const quiche_conn *conn);

/* The send quantum of the path from local_addr to peer_addr: the active path's, one datagram on
 * another path, 0 if the connection has no such path. */
size_t quiche_conn_send_quantum_on_path(const quiche_conn *conn,
                                        const struct sockaddr *local_addr, socklen_t local_len,
                                        const struct sockaddr *peer_addr, socklen_t peer_len);

/* Makes the next packet sent on the active path ack-eliciting (a PING goes in it if nothing
 * else would elicit an ACK): a liveness check, or an RTT sample on an idle connection. 0, or an
 * error code; does nothing on a closing connection. */
ssize_t quiche_conn_send_ack_eliciting(quiche_conn *conn);

/* As quiche_conn_send_ack_eliciting(), on the path from local to peer; QUICHE_ERR_INVALID_STATE
 * if the connection has no such path. */
ssize_t quiche_conn_send_ack_eliciting_on_path(quiche_conn *conn,
                                               const struct sockaddr *local, socklen_t local_len,
                                               const struct sockaddr *peer, socklen_t peer_len);

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
ssize_t quiche_conn_stream_capacity(quiche_conn *conn, uint64_t stream_id);

/* Returns 1 if len bytes can be written to the stream now, 0 if not, or an error. */
int quiche_conn_stream_writable(quiche_conn *conn, uint64_t stream_id, size_t len);

/* The next stream with data (or its end, or a reset) to read that this function has not
 * returned since, or -1. A stream comes back once more data arrives, or at once if a read left
 * data behind; quiche_conn_readable() lists every readable stream each time instead. */
int64_t quiche_conn_stream_readable_next(quiche_conn *conn);

/* The next stream that can take data (at least 1 byte, or the len of a quiche_conn_stream_writable()
 * call that returned 0) that this function has not returned since, or -1. A stream comes back
 * when its capacity grows or after a write that leaves it writable. */
int64_t quiche_conn_stream_writable_next(quiche_conn *conn);

/* Returns true if a stream has data to read or a datagram waits to be read. */
bool quiche_conn_is_readable(const quiche_conn *conn);

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
 * session ticket arrives.
 */

/* A string identifying the connection in logs (not NUL-terminated). */
void quiche_conn_trace_id(const quiche_conn *conn, const uint8_t **out, size_t *out_len);

/* Our connection ID. */
void quiche_conn_source_id(const quiche_conn *conn, const uint8_t **out, size_t *out_len);

/* An iterator over connection IDs (see quiche_conn_source_ids() and
 * quiche_conn_retired_scid_iter()). */
typedef struct quiche_connection_id_iter quiche_connection_id_iter;

/* Returns the connection's active source connection IDs (a server routes datagrams addressed to
 * any of them to the connection). Free the iterator with quiche_connection_id_iter_free(). */
quiche_connection_id_iter *quiche_conn_source_ids(quiche_conn *conn);

/* Lends the next connection ID (valid until the iterator is freed); false when none is left. */
bool quiche_connection_id_iter_next(quiche_connection_id_iter *iter, const uint8_t **out,
                                    size_t *out_len);

/* Frees a connection ID iterator. */
void quiche_connection_id_iter_free(quiche_connection_id_iter *iter);

/* Adds scid, a source connection ID the application chose, with its 16-byte stateless reset
 * token, and announces it to the peer; its sequence number goes to *scid_seq. When the peer
 * stores no more (quiche_conn_scids_left() is 0), retire_if_needed asks it to retire the oldest
 * ones, otherwise QUICHE_ERR_ID_LIMIT. 0, or an error code. */
int quiche_conn_new_scid(quiche_conn *conn, const uint8_t *scid, size_t scid_len,
                         const uint8_t *reset_token, bool retire_if_needed, uint64_t *scid_seq);

/* Stops using the peer's connection ID dcid_seq (RETIRE_CONNECTION_ID); the active path moves to
 * a spare one. QUICHE_ERR_OUT_OF_IDENTIFIERS if it is the last one. 0, or an error code. */
int quiche_conn_retire_dcid(quiche_conn *conn, uint64_t dcid_seq);

/* How many more source connection IDs the peer stores. */
size_t quiche_conn_scids_left(quiche_conn *conn);

/* How many source connection IDs are active. */
size_t quiche_conn_active_scids(quiche_conn *conn);

/* How many of the peer's connection IDs the connection holds, including the one in use. */
size_t quiche_conn_available_dcids(const quiche_conn *conn);

/* How many source connection IDs the peer retired that were not taken with
 * quiche_conn_retired_scid_iter() yet. */
size_t quiche_conn_retired_scids(const quiche_conn *conn);

/* Takes the source connection IDs the peer retired (to stop routing them) into an iterator;
 * free it with quiche_connection_id_iter_free(). */
quiche_connection_id_iter *quiche_conn_retired_scid_iter(quiche_conn *conn);


/* The peer's connection ID. */
void quiche_conn_destination_id(const quiche_conn *conn, const uint8_t **out, size_t *out_len);

/* The ALPN protocol the handshake chose (empty before). */
void quiche_conn_application_proto(const quiche_conn *conn, const uint8_t **out,
                                   size_t *out_len);

/* The TLS session to resume later with quiche_conn_set_session() (empty if none yet). With
 * BoringSSL (feature boringssl-boring-crate) these are quiche's bytes, valid in any process (a
 * session file) and interchangeable with quiche's. With rustls, which cannot write a client
 * session out, a handle valid only in this process, for connections of the same config. */
void quiche_conn_session(const quiche_conn *conn, const uint8_t **out, size_t *out_len);

/* The peer's leaf certificate, DER-encoded (empty if it sent none). */
void quiche_conn_peer_cert(const quiche_conn *conn, const uint8_t **out, size_t *out_len);

/* The server name: the SNI a client asked for, on a server; the name given to quiche_connect(),
 * on a client (not NUL-terminated; empty if none). */
void quiche_conn_server_name(const quiche_conn *conn, const uint8_t **out, size_t *out_len);

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

/* Connection statistics, with the layout of quiche 0.30's quiche_stats. */
typedef struct {
    /* Packets received and decrypted, sent, declared lost, lost and later acknowledged. */
    size_t recv;
    size_t sent;
    size_t lost;
    size_t spurious_lost;
    /* Packets sent that carried retransmitted data. */
    size_t retrans;
    /* UDP payload bytes sent, received and acknowledged. */
    uint64_t sent_bytes;
    uint64_t recv_bytes;
    uint64_t acked_bytes;
    /* Bytes of the packets declared lost; stream bytes sent again after a loss. */
    uint64_t lost_bytes;
    uint64_t stream_retrans_bytes;
    /* DATAGRAM frames received and sent. */
    size_t dgram_recv;
    size_t dgram_sent;
    /* Network paths the connection used. */
    size_t paths_count;
    /* Streams reset and stopped by us and by the peer. */
    uint64_t reset_stream_count_local;
    uint64_t stopped_stream_count_local;
    uint64_t reset_stream_count_remote;
    uint64_t stopped_stream_count_remote;
    /* Flow-control blocking frames sent and received. */
    uint64_t data_blocked_sent_count;
    uint64_t stream_data_blocked_sent_count;
    uint64_t data_blocked_recv_count;
    uint64_t stream_data_blocked_recv_count;
    uint64_t streams_blocked_bidi_recv_count;
    uint64_t streams_blocked_uni_recv_count;
    /* PATH_CHALLENGE frames received. */
    uint64_t path_challenge_rx_count;
    /* Milliseconds with bytes in flight. */
    uint64_t bytes_in_flight_duration_msec;
    /* Whether the count of unsent stream bytes disagrees with the stream buffers (a bug). */
    bool tx_buffered_inconsistent;
} quiche_stats;

/* Fills *out with the connection's statistics. */
void quiche_conn_stats(const quiche_conn *conn, quiche_stats *out);

/* DATAGRAM frames (RFC 9221; quiche_config_enable_dgram() on both sides). */

/* Returns the largest datagram quiche_conn_dgram_send() accepts now, or QUICHE_ERR_DONE
 * while the peer has not said that it accepts datagrams. */
ssize_t quiche_conn_dgram_max_writable_len(const quiche_conn *conn);

/* Returns the length of the oldest received datagram, or QUICHE_ERR_DONE if there is none. */
ssize_t quiche_conn_dgram_recv_front_len(const quiche_conn *conn);

/* Return how many received datagrams wait to be read, and their total size in bytes. */
ssize_t quiche_conn_dgram_recv_queue_len(const quiche_conn *conn);
ssize_t quiche_conn_dgram_recv_queue_byte_size(const quiche_conn *conn);

/* Return how many datagrams wait to be sent, and their total size in bytes. */
ssize_t quiche_conn_dgram_send_queue_len(const quiche_conn *conn);
ssize_t quiche_conn_dgram_send_queue_byte_size(const quiche_conn *conn);

/* Return whether the send queue, or the receive queue, is full. */
bool quiche_conn_is_dgram_send_queue_full(const quiche_conn *conn);
bool quiche_conn_is_dgram_recv_queue_full(const quiche_conn *conn);

/* Moves the oldest received datagram into buf and returns its length: QUICHE_ERR_DONE if there
 * is none, QUICHE_ERR_BUFFER_TOO_SHORT (the datagram stays queued) if buf is too small. */
ssize_t quiche_conn_dgram_recv(quiche_conn *conn, uint8_t *buf, size_t buf_len);

/* Queues a datagram to send and returns its length, or an error: QUICHE_ERR_DONE if the send
 * queue is full, QUICHE_ERR_BUFFER_TOO_SHORT if it is larger than
 * quiche_conn_dgram_max_writable_len(), QUICHE_ERR_INVALID_STATE if the peer does not accept
 * datagrams. */
ssize_t quiche_conn_dgram_send(quiche_conn *conn, const uint8_t *buf, size_t buf_len);

/* Removes the queued outgoing datagrams for which f returns true; f gets each payload and its
 * length and must not modify the bytes. */
void quiche_conn_dgram_purge_outgoing(quiche_conn *conn, bool (*f)(uint8_t *, size_t));

/* The peer's transport parameters (quiche 0.30's layout). */
typedef struct {
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
} quiche_transport_params;

/* Fills *out with the peer's transport parameters; false until they arrived. */
bool quiche_conn_peer_transport_params(const quiche_conn *conn, quiche_transport_params *out);

/* Statistics of one network path (quiche 0.30's layout). validation_state is -1 (failed), 0
 * (unknown), 1 (validating) or 3 (validated); max_bandwidth is 0 unless the congestion
 * controller estimates the bandwidth (BBR). */
typedef struct {
    struct sockaddr_storage local_addr;
    socklen_t local_addr_len;
    struct sockaddr_storage peer_addr;
    socklen_t peer_addr_len;
    ssize_t validation_state;
    bool active;
    size_t recv;
    size_t sent;
    size_t lost;
    size_t retrans;
    /* Probe timeouts that fired. */
    size_t total_pto_count;
    size_t dgram_recv;
    size_t dgram_sent;
    /* Smoothed, minimum and maximum round-trip time, and its variation, in nanoseconds. */
    uint64_t rtt;
    uint64_t min_rtt;
    uint64_t max_rtt;
    uint64_t rttvar;
    /* Congestion window in bytes. */
    size_t cwnd;
    uint64_t sent_bytes;
    uint64_t recv_bytes;
    uint64_t lost_bytes;
    uint64_t stream_retrans_bytes;
    /* The largest UDP payload sent on the path. */
    size_t pmtu;
    uint64_t delivery_rate;
    uint64_t max_bandwidth;
    /* The congestion window when the first slow start ended, 0 before. */
    uint64_t startup_exit_cwnd;
} quiche_path_stats;

/* Fills *out with the statistics of path idx (this library uses one path: 0); 0 on success,
 * QUICHE_ERR_INVALID_STATE for another index. */
int quiche_conn_path_stats(const quiche_conn *conn, size_t idx, quiche_path_stats *out);

/* Frees a connection. */
void quiche_conn_free(quiche_conn *conn);

/* Writes a QUIC variable-length integer into buf: 0, or QUICHE_ERR_BUFFER_TOO_SHORT. */
int quiche_put_varint(uint8_t *buf, size_t buf_len, uint64_t val);

/* Reads a QUIC variable-length integer from buf: its length, or QUICHE_ERR_BUFFER_TOO_SHORT. */
ssize_t quiche_get_varint(const uint8_t *buf, size_t buf_len, uint64_t *val);

/* ---------------------------------------------------------------------------------------
 * HTTP/3 (RFC 9114) with QPACK (RFC 9204), on top of a quiche_conn.
 *
 * The QUIC connection must offer ALPN "h3" (QUICHE_H3_APPLICATION_PROTOCOL, in the wire
 * format quiche_config_set_application_protos() takes). Once it is established (or sending
 * 0-RTT), quiche_h3_conn_new_with_transport() opens the control and QPACK streams; after that,
 * call quiche_h3_conn_poll() whenever quiche_conn_recv() took data, until QUICHE_H3_ERR_DONE.
 */

#define QUICHE_H3_APPLICATION_PROTOCOL "\x02h3"

/* HTTP/3 error codes: negative return values. QUICHE_H3_ERR_DONE means "nothing now". Errors
 * of the QUIC connection come as QUICHE_H3_TRANSPORT_ERR_*: the QUICHE_ERR_* value minus 1000. */
enum quiche_h3_error {
    QUICHE_H3_ERR_DONE = -1,
    QUICHE_H3_ERR_BUFFER_TOO_SHORT = -2,
    /* An internal error, or invalid arguments. */
    QUICHE_H3_ERR_INTERNAL_ERROR = -3,
    /* The peer's behaviour would make us use too much memory or time. */
    QUICHE_H3_ERR_EXCESSIVE_LOAD = -4,
    /* A stream or push ID was used wrongly. */
    QUICHE_H3_ERR_ID_ERROR = -5,
    /* The peer opened a stream it may not open. */
    QUICHE_H3_ERR_STREAM_CREATION_ERROR = -6,
    /* A control or QPACK stream was closed. */
    QUICHE_H3_ERR_CLOSED_CRITICAL_STREAM = -7,
    /* The control stream did not start with SETTINGS. */
    QUICHE_H3_ERR_MISSING_SETTINGS = -8,
    /* A frame arrived where it is not allowed. */
    QUICHE_H3_ERR_FRAME_UNEXPECTED = -9,
    /* A frame was malformed. */
    QUICHE_H3_ERR_FRAME_ERROR = -10,
    /* A header section could not be decoded. */
    QUICHE_H3_ERR_QPACK_DECOMPRESSION_FAILED = -11,
    /* The stream has no room for the headers now: try again when it is writable. */
    QUICHE_H3_ERR_STREAM_BLOCKED = -13,
    /* A setting was invalid. */
    QUICHE_H3_ERR_SETTINGS_ERROR = -14,
    /* The server did not process the request. */
    QUICHE_H3_ERR_REQUEST_REJECTED = -15,
    /* The request or response was cancelled. */
    QUICHE_H3_ERR_REQUEST_CANCELLED = -16,
    /* The stream ended before the request was complete. */
    QUICHE_H3_ERR_REQUEST_INCOMPLETE = -17,
    /* A malformed HTTP message. */
    QUICHE_H3_ERR_MESSAGE_ERROR = -18,
    /* A CONNECT request's TCP connection failed. */
    QUICHE_H3_ERR_CONNECT_ERROR = -19,
    /* The request should be retried over HTTP/1.1. */
    QUICHE_H3_ERR_VERSION_FALLBACK = -20,

    QUICHE_H3_TRANSPORT_ERR_DONE = QUICHE_ERR_DONE - 1000,
    QUICHE_H3_TRANSPORT_ERR_BUFFER_TOO_SHORT = QUICHE_ERR_BUFFER_TOO_SHORT - 1000,
    QUICHE_H3_TRANSPORT_ERR_UNKNOWN_VERSION = QUICHE_ERR_UNKNOWN_VERSION - 1000,
    QUICHE_H3_TRANSPORT_ERR_INVALID_FRAME = QUICHE_ERR_INVALID_FRAME - 1000,
    QUICHE_H3_TRANSPORT_ERR_INVALID_PACKET = QUICHE_ERR_INVALID_PACKET - 1000,
    QUICHE_H3_TRANSPORT_ERR_INVALID_STATE = QUICHE_ERR_INVALID_STATE - 1000,
    QUICHE_H3_TRANSPORT_ERR_INVALID_STREAM_STATE = QUICHE_ERR_INVALID_STREAM_STATE - 1000,
    QUICHE_H3_TRANSPORT_ERR_INVALID_TRANSPORT_PARAM = QUICHE_ERR_INVALID_TRANSPORT_PARAM - 1000,
    QUICHE_H3_TRANSPORT_ERR_CRYPTO_FAIL = QUICHE_ERR_CRYPTO_FAIL - 1000,
    QUICHE_H3_TRANSPORT_ERR_TLS_FAIL = QUICHE_ERR_TLS_FAIL - 1000,
    QUICHE_H3_TRANSPORT_ERR_FLOW_CONTROL = QUICHE_ERR_FLOW_CONTROL - 1000,
    QUICHE_H3_TRANSPORT_ERR_STREAM_LIMIT = QUICHE_ERR_STREAM_LIMIT - 1000,
    QUICHE_H3_TRANSPORT_ERR_STREAM_STOPPED = QUICHE_ERR_STREAM_STOPPED - 1000,
    QUICHE_H3_TRANSPORT_ERR_STREAM_RESET = QUICHE_ERR_STREAM_RESET - 1000,
    QUICHE_H3_TRANSPORT_ERR_FINAL_SIZE = QUICHE_ERR_FINAL_SIZE - 1000,
    QUICHE_H3_TRANSPORT_ERR_CONGESTION_CONTROL = QUICHE_ERR_CONGESTION_CONTROL - 1000,
    QUICHE_H3_TRANSPORT_ERR_ID_LIMIT = QUICHE_ERR_ID_LIMIT - 1000,
    QUICHE_H3_TRANSPORT_ERR_OUT_OF_IDENTIFIERS = QUICHE_ERR_OUT_OF_IDENTIFIERS - 1000,
    QUICHE_H3_TRANSPORT_ERR_KEY_UPDATE = QUICHE_ERR_KEY_UPDATE - 1000,
    QUICHE_H3_TRANSPORT_ERR_CRYPTO_BUFFER_EXCEEDED = QUICHE_ERR_CRYPTO_BUFFER_EXCEEDED - 1000,
    QUICHE_H3_TRANSPORT_ERR_INVALID_ACK_RANGE = QUICHE_ERR_INVALID_ACK_RANGE - 1000,
    QUICHE_H3_TRANSPORT_ERR_OPTIMISTIC_ACK_DETECTED = QUICHE_ERR_OPTIMISTIC_ACK_DETECTED - 1000
};

/* HTTP/3 settings (defaults: QPACK dynamic table on, 4096 bytes, 16 blocked streams). */
typedef struct quiche_h3_config quiche_h3_config;

quiche_h3_config *quiche_h3_config_new(void);

/* SETTINGS_MAX_FIELD_SECTION_SIZE: the largest header section we accept. */
void quiche_h3_config_set_max_field_section_size(quiche_h3_config *config, uint64_t v);

/* SETTINGS_QPACK_MAX_TABLE_CAPACITY: the dynamic table the peer's encoder may fill. */
void quiche_h3_config_set_qpack_max_table_capacity(quiche_h3_config *config, uint64_t v);

/* SETTINGS_QPACK_BLOCKED_STREAMS: streams that may wait for the peer's QPACK encoder. */
void quiche_h3_config_set_qpack_blocked_streams(quiche_h3_config *config, uint64_t v);

/* SETTINGS_ENABLE_CONNECT_PROTOCOL (extended CONNECT, RFC 9220). */
void quiche_h3_config_enable_extended_connect(quiche_h3_config *config, bool enabled);

/* The largest PRIORITY_UPDATE frame payload we accept. */
void quiche_h3_config_set_max_priority_update_size(quiche_h3_config *config, uint64_t v);

void quiche_h3_config_free(quiche_h3_config *config);

/* An HTTP/3 connection, bound to the quiche_conn it was created on. */
typedef struct quiche_h3_conn quiche_h3_conn;

/* Opens the control and QPACK streams and queues SETTINGS; NULL on failure. */
quiche_h3_conn *quiche_h3_conn_new_with_transport(quiche_conn *quiche_conn,
                                                  quiche_h3_config *config);

enum quiche_h3_event_type {
    /* Request or response headers (or trailers) arrived: quiche_h3_event_for_each_header(). */
    QUICHE_H3_EVENT_HEADERS,
    /* Body bytes can be read with quiche_h3_recv_body(). */
    QUICHE_H3_EVENT_DATA,
    /* The stream ended. */
    QUICHE_H3_EVENT_FINISHED,
    /* The peer sent GOAWAY (the returned ID is its value). */
    QUICHE_H3_EVENT_GOAWAY,
    /* The peer reset the stream. */
    QUICHE_H3_EVENT_RESET,
    /* A PRIORITY_UPDATE arrived: quiche_h3_take_last_priority_update(). */
    QUICHE_H3_EVENT_PRIORITY_UPDATE
};

typedef struct quiche_h3_event quiche_h3_event;

/* The next event: returns its stream ID and stores the event in *ev (free it with
 * quiche_h3_event_free()), or a negative quiche_h3_error (QUICHE_H3_ERR_DONE when there is none
 * now). */
int64_t quiche_h3_conn_poll(quiche_h3_conn *conn, quiche_conn *quic_conn,
                            quiche_h3_event **ev);

enum quiche_h3_event_type quiche_h3_event_type(quiche_h3_event *ev);

/* Calls cb for each header of a HEADERS event; a non-zero return from cb stops the walk and is
 * returned. The bytes live as long as the event. */
int quiche_h3_event_for_each_header(quiche_h3_event *ev,
                                    int (*cb)(uint8_t *name, size_t name_len,
                                              uint8_t *value, size_t value_len,
                                              void *argp),
                                    void *argp);

/* Calls cb for each setting the peer sent, as for headers; QUICHE_H3_ERR_DONE before they
 * arrived. */
int quiche_h3_for_each_setting(quiche_h3_conn *conn,
                               int (*cb)(uint64_t identifier, uint64_t value, void *argp),
                               void *argp);

/* Whether a HEADERS event is followed by more frames (a body or trailers) on its stream. */
bool quiche_h3_event_headers_has_more_frames(quiche_h3_event *ev);

/* Whether the peer enabled extended CONNECT. */
bool quiche_h3_extended_connect_enabled_by_peer(quiche_h3_conn *conn);

void quiche_h3_event_free(quiche_h3_event *ev);

/* A header field: name and value bytes (names lowercase). */
typedef struct {
    const uint8_t *name;
    size_t name_len;
    const uint8_t *value;
    size_t value_len;
} quiche_h3_header;

/* An RFC 9218 priority: urgency 0 (highest) to 7, and whether the response is incremental. */
typedef struct {
    uint8_t urgency;
    bool incremental;
} quiche_h3_priority;

/* Sends a request's headers on a new stream (fin: no body follows); returns the stream ID or a
 * negative error (QUICHE_H3_ERR_STREAM_BLOCKED: try again later). */
int64_t quiche_h3_send_request(quiche_h3_conn *conn, quiche_conn *quic_conn,
                               const quiche_h3_header *headers, size_t headers_len,
                               bool fin);

/* Sends a response's headers on the request's stream. */
int quiche_h3_send_response(quiche_h3_conn *conn, quiche_conn *quic_conn,
                            uint64_t stream_id, const quiche_h3_header *headers,
                            size_t headers_len, bool fin);

/* As quiche_h3_send_response(), scheduling the response with the given priority. */
int quiche_h3_send_response_with_priority(quiche_h3_conn *conn,
                            quiche_conn *quic_conn, uint64_t stream_id,
                            const quiche_h3_header *headers, size_t headers_len,
                            quiche_h3_priority *priority, bool fin);

/* Sends interim (1xx) headers before the response, or trailers after the body
 * (is_trailer_section). */
int quiche_h3_send_additional_headers(quiche_h3_conn *conn,
                            quiche_conn *quic_conn, uint64_t stream_id,
                            quiche_h3_header *headers, size_t headers_len,
                            bool is_trailer_section, bool fin);

/* Sends body bytes; returns how many the stream took (possibly fewer, then wait until it is
 * writable) or an error (QUICHE_H3_ERR_DONE when none fit). */
ssize_t quiche_h3_send_body(quiche_h3_conn *conn, quiche_conn *quic_conn,
                            uint64_t stream_id, const uint8_t *body, size_t body_len,
                            bool fin);

/* Reads body bytes into out; returns how many, or QUICHE_H3_ERR_DONE when none wait. */
ssize_t quiche_h3_recv_body(quiche_h3_conn *conn, quiche_conn *quic_conn,
                            uint64_t stream_id, uint8_t *out, size_t out_len);

/* Sends GOAWAY: requests (for a client: pushes) from id on will not be processed. */
int quiche_h3_send_goaway(quiche_h3_conn *conn, quiche_conn *quic_conn, uint64_t id);

/* Parses a `priority` header value (RFC 9218 structured field) into *parsed. */
int quiche_h3_parse_extensible_priority(uint8_t *priority, size_t priority_len,
                                        quiche_h3_priority *parsed);

/* Sends a PRIORITY_UPDATE for the request on stream_id (clients). */
int quiche_h3_send_priority_update_for_request(quiche_h3_conn *conn,
                                               quiche_conn *quic_conn,
                                               uint64_t stream_id,
                                               quiche_h3_priority *priority);

/* Calls cb with the last PRIORITY_UPDATE field value received for an element (servers) and
 * forgets it; QUICHE_H3_ERR_DONE if there is none. */
int quiche_h3_take_last_priority_update(quiche_h3_conn *conn,
                                        uint64_t prioritized_element_id,
                                        int (*cb)(uint8_t *priority_field_value,
                                                  uint64_t priority_field_value_len,
                                                  void *argp),
                                        void *argp);

/* Whether the peer accepts HTTP Datagrams (RFC 9297). */
bool quiche_h3_dgram_enabled_by_peer(quiche_h3_conn *conn, quiche_conn *quic_conn);

typedef struct {
    /* Bytes received on the peer's QPACK encoder stream. */
    uint64_t qpack_encoder_stream_recv_bytes;
    /* Bytes received on the peer's QPACK decoder stream. */
    uint64_t qpack_decoder_stream_recv_bytes;
} quiche_h3_stats;

void quiche_h3_conn_stats(const quiche_h3_conn *conn, quiche_h3_stats *out);

void quiche_h3_conn_free(quiche_h3_conn *conn);

#ifdef __cplusplus
}
#endif

#endif /* QUICHE_H */
