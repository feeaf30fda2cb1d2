/*
 * null_test.c: every function of quiche.h called with NULL in each pointer argument that
 * must not be NULL (and with a valid object otherwise) returns an error instead of crashing.
 * Along the way it checks a few results of the same functions with valid arguments, so that
 * "returns an error" cannot come from a function that always fails.
 *
 * Exit status 0 when every check passed. Run it under valgrind too: a NULL that slipped
 * through would show as an invalid read or write.
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <quiche.h>

static int failures;
static int checks;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        checks++;                                                                   \
        if (!(cond)) {                                                              \
            failures++;                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                           \
    } while (0)

static const char *CERT = "quiche/tests/certs/cert.crt";
static const uint8_t ALPN[] = "\x0ahq-interop";
#define ALPN_LEN 11

static struct sockaddr_in local_addr, peer_addr;

static void ignore_log(const char *line, void *argp) {
    (void) line;
    (void) argp;
}

static void init_addrs(void) {
    memset(&local_addr, 0, sizeof(local_addr));
    local_addr.sin_family = AF_INET;
    local_addr.sin_port = htons(40000);
    local_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    peer_addr = local_addr;
    peer_addr.sin_port = htons(4433);
}

static void test_config(void) {
    quiche_config *config = quiche_config_new(QUICHE_PROTOCOL_VERSION);
    CHECK(config != NULL);
    CHECK(quiche_config_new(0xbabababb) == NULL);

    CHECK(quiche_config_load_cert_chain_from_pem_file(NULL, CERT) < 0);
    CHECK(quiche_config_load_cert_chain_from_pem_file(config, NULL) < 0);
    CHECK(quiche_config_load_priv_key_from_pem_file(NULL, CERT) < 0);
    CHECK(quiche_config_load_priv_key_from_pem_file(config, NULL) < 0);
    CHECK(quiche_config_load_verify_locations_from_file(NULL, CERT) < 0);
    CHECK(quiche_config_load_verify_locations_from_file(config, NULL) < 0);
    CHECK(quiche_config_set_cc_algorithm_name(NULL, "reno") < 0);
    CHECK(quiche_config_set_cc_algorithm_name(config, NULL) < 0);
    CHECK(quiche_config_set_cc_algorithm_name(config, "reno") == 0);
    CHECK(quiche_config_set_cc_algorithm_name(config, "nope") == QUICHE_ERR_CONGESTION_CONTROL);
    CHECK(quiche_config_set_application_protos(NULL, ALPN, ALPN_LEN) < 0);
    CHECK(quiche_config_set_application_protos(config, NULL, ALPN_LEN) < 0);
    CHECK(quiche_config_set_application_protos(config, ALPN, ALPN_LEN - 1) < 0);
    CHECK(quiche_config_set_application_protos(config, ALPN, ALPN_LEN) == 0);

    /* The void setters have nothing to report: they must simply not crash. */
    quiche_config_verify_peer(NULL, false);
    quiche_config_grease(NULL, false);
    quiche_config_log_keys(NULL);
    quiche_config_enable_early_data(NULL);
    quiche_config_set_max_idle_timeout(NULL, 1);
    quiche_config_set_max_recv_udp_payload_size(NULL, 1);
    quiche_config_set_max_send_udp_payload_size(NULL, 1);
    quiche_config_set_initial_max_data(NULL, 1);
    quiche_config_set_initial_max_stream_data_bidi_local(NULL, 1);
    quiche_config_set_initial_max_stream_data_bidi_remote(NULL, 1);
    quiche_config_set_initial_max_stream_data_uni(NULL, 1);
    quiche_config_set_initial_max_streams_bidi(NULL, 1);
    quiche_config_set_initial_max_streams_uni(NULL, 1);
    quiche_config_set_ack_delay_exponent(NULL, 1);
    quiche_config_set_max_ack_delay(NULL, 1);
    quiche_config_set_active_connection_id_limit(NULL, 2);
    quiche_config_set_disable_active_migration(NULL, true);
    quiche_config_set_cc_algorithm(NULL, QUICHE_CC_CUBIC);
    quiche_config_set_initial_congestion_window_packets(NULL, 10);
    quiche_config_enable_hystart(NULL, true);
    quiche_config_enable_pacing(NULL, true);
    quiche_config_set_max_connection_window(NULL, 1);
    quiche_config_set_max_stream_window(NULL, 1);
    quiche_config_enable_dgram(NULL, true, 1, 1);
    /* Out-of-range enum values are ignored too. */
    quiche_config_set_cc_algorithm(config, (enum quiche_cc_algorithm) 77);
    quiche_config_free(NULL);
    quiche_config_free(config);
}

/* A long-header packet with version 0x1a2a3a4a (unknown), DCID 8 x 0xdd, SCID 8 x 0x55. */
static size_t unknown_version_packet(uint8_t *buf, size_t len) {
    size_t i = 0;
    memset(buf, 0, len);
    buf[i++] = 0xc0;
    buf[i++] = 0x1a;
    buf[i++] = 0x2a;
    buf[i++] = 0x3a;
    buf[i++] = 0x4a;
    buf[i++] = 8;
    memset(buf + i, 0xdd, 8);
    i += 8;
    buf[i++] = 8;
    memset(buf + i, 0x55, 8);
    return 1200;
}

static void test_packets(void) {
    uint8_t pkt[1500], out[1500], scid[20], dcid[20], token[64];
    size_t scid_len = sizeof(scid), dcid_len = sizeof(dcid), token_len = sizeof(token);
    uint32_t version = 0;
    uint8_t type = 0;
    const uint8_t cid[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    size_t n = unknown_version_packet(pkt, sizeof(pkt));
    ssize_t vn;

#define HDR(b, bl, v, t, s, sl, d, dl, tk, tl) \
    quiche_header_info(b, bl, 16, v, t, s, sl, d, dl, tk, tl)
    CHECK(HDR(pkt, n, &version, &type, scid, &scid_len, dcid, &dcid_len, token, &token_len) == 0);
    CHECK(version == 0x1a2a3a4a && dcid_len == 8 && scid_len == 8 && dcid[0] == 0xdd);
    CHECK(!quiche_version_is_supported(version));
    CHECK(quiche_version_is_supported(QUICHE_PROTOCOL_VERSION));
    /* A NULL buffer is refused only when its capacity is not 0. */
    scid_len = sizeof(scid);
    dcid_len = sizeof(dcid);
    token_len = sizeof(token);
    CHECK(HDR(NULL, n, &version, &type, scid, &scid_len, dcid, &dcid_len, token, &token_len) < 0);
    CHECK(HDR(pkt, n, NULL, &type, scid, &scid_len, dcid, &dcid_len, token, &token_len) < 0);
    CHECK(HDR(pkt, n, &version, NULL, scid, &scid_len, dcid, &dcid_len, token, &token_len) < 0);
    CHECK(HDR(pkt, n, &version, &type, NULL, &scid_len, dcid, &dcid_len, token, &token_len) < 0);
    CHECK(HDR(pkt, n, &version, &type, scid, NULL, dcid, &dcid_len, token, &token_len) < 0);
    CHECK(HDR(pkt, n, &version, &type, scid, &scid_len, NULL, &dcid_len, token, &token_len) < 0);
    CHECK(HDR(pkt, n, &version, &type, scid, &scid_len, dcid, NULL, token, &token_len) < 0);
    CHECK(HDR(pkt, n, &version, &type, scid, &scid_len, dcid, &dcid_len, NULL, &token_len) < 0);
    CHECK(HDR(pkt, n, &version, &type, scid, &scid_len, dcid, &dcid_len, token, NULL) < 0);

    vn = quiche_negotiate_version(pkt + 15, 8, pkt + 6, 8, out, sizeof(out));
    CHECK(vn > 0);
    scid_len = sizeof(scid);
    dcid_len = sizeof(dcid);
    token_len = sizeof(token);
    CHECK(HDR(out, (size_t) vn, &version, &type, scid, &scid_len, dcid, &dcid_len, token, &token_len) == 0);
    CHECK(type == 6 && dcid_len == 8 && dcid[0] == 0x55);
    CHECK(quiche_negotiate_version(NULL, 8, cid, 8, out, sizeof(out)) < 0);
    CHECK(quiche_negotiate_version(cid, 8, NULL, 8, out, sizeof(out)) < 0);
    CHECK(quiche_negotiate_version(cid, 8, cid, 8, NULL, sizeof(out)) < 0);

    CHECK(quiche_retry(cid, 8, cid, 8, cid, 8, cid, 8, QUICHE_PROTOCOL_VERSION, out, sizeof(out)) > 0);
    CHECK(quiche_retry(NULL, 8, cid, 8, cid, 8, cid, 8, QUICHE_PROTOCOL_VERSION, out, sizeof(out)) < 0);
    CHECK(quiche_retry(cid, 8, NULL, 8, cid, 8, cid, 8, QUICHE_PROTOCOL_VERSION, out, sizeof(out)) < 0);
    CHECK(quiche_retry(cid, 8, cid, 8, NULL, 8, cid, 8, QUICHE_PROTOCOL_VERSION, out, sizeof(out)) < 0);
    CHECK(quiche_retry(cid, 8, cid, 8, cid, 8, NULL, 8, QUICHE_PROTOCOL_VERSION, out, sizeof(out)) < 0);
    CHECK(quiche_retry(cid, 8, cid, 8, cid, 8, cid, 8, QUICHE_PROTOCOL_VERSION, NULL, sizeof(out)) < 0);
#undef HDR
}

static quiche_config *client_config(void) {
    quiche_config *config = quiche_config_new(QUICHE_PROTOCOL_VERSION);
    quiche_config_set_application_protos(config, ALPN, ALPN_LEN);
    quiche_config_verify_peer(config, false);
    quiche_config_log_keys(config);
    return config;
}

static void test_creation(quiche_config *config) {
    const uint8_t cid[16] = {0};
    const struct sockaddr *l = (const struct sockaddr *) &local_addr;
    const struct sockaddr *p = (const struct sockaddr *) &peer_addr;
    size_t len = sizeof(local_addr);
    quiche_conn *conn;

    CHECK(quiche_connect("localhost", NULL, 16, l, len, p, len, config) == NULL);
    CHECK(quiche_connect("localhost", cid, 16, NULL, len, p, len, config) == NULL);
    CHECK(quiche_connect("localhost", cid, 16, l, len, NULL, len, config) == NULL);
    CHECK(quiche_connect("localhost", cid, 16, l, len, p, len, NULL) == NULL);
    /* An address shorter than its family says. */
    CHECK(quiche_connect("localhost", cid, 16, l, 4, p, len, config) == NULL);
    /* server_name is optional. */
    conn = quiche_connect(NULL, cid, 16, l, len, p, len, config);
    CHECK(conn != NULL);
    quiche_conn_free(conn);

    CHECK(quiche_accept(NULL, 16, NULL, 0, l, len, p, len, config) == NULL);
    CHECK(quiche_accept(cid, 16, NULL, 8, l, len, p, len, config) == NULL);
    CHECK(quiche_accept(cid, 16, NULL, 0, NULL, len, p, len, config) == NULL);
    CHECK(quiche_accept(cid, 16, NULL, 0, l, len, NULL, len, config) == NULL);
    CHECK(quiche_accept(cid, 16, NULL, 0, l, len, p, len, NULL) == NULL);
}

/* The ack-eliciting request and the per-path send quantum know the client's one path; the
 * descriptors handed to the _fd calls are the library's from then on (it closes them, also when
 * another argument is NULL). */
static void test_keepalive_and_fds(quiche_conn *conn) {
    const struct sockaddr *l = (const struct sockaddr *) &local_addr;
    const struct sockaddr *p = (const struct sockaddr *) &peer_addr;
    struct sockaddr_in other = peer_addr;
    socklen_t len = sizeof(local_addr);

    other.sin_port = htons(9);
    CHECK(quiche_conn_send_ack_eliciting(NULL) < 0);
    CHECK(quiche_conn_send_ack_eliciting(conn) == 0);
    CHECK(quiche_conn_send_ack_eliciting_on_path(NULL, l, len, p, len) < 0);
    CHECK(quiche_conn_send_ack_eliciting_on_path(conn, NULL, len, p, len) < 0);
    CHECK(quiche_conn_send_ack_eliciting_on_path(conn, l, len, NULL, len) < 0);
    CHECK(quiche_conn_send_ack_eliciting_on_path(conn, l, len, p, len) == 0);
    CHECK(quiche_conn_send_ack_eliciting_on_path(conn, l, len, (const struct sockaddr *) &other,
                                                 len) == QUICHE_ERR_INVALID_STATE);
    CHECK(quiche_conn_send_quantum_on_path(NULL, l, len, p, len) == 0);
    CHECK(quiche_conn_send_quantum_on_path(conn, NULL, len, p, len) == 0);
    CHECK(quiche_conn_send_quantum_on_path(conn, l, len, p, len) == quiche_conn_send_quantum(conn));
    CHECK(quiche_conn_send_quantum_on_path(conn, l, len, (const struct sockaddr *) &other, len) == 0);

    quiche_conn_set_keylog_fd(NULL, -1);
    quiche_conn_set_keylog_fd(conn, -1);
    quiche_conn_set_keylog_fd(conn, open("/dev/null", O_WRONLY));
    quiche_conn_set_qlog_fd(NULL, -1, "t", "d");
    quiche_conn_set_qlog_fd(conn, open("/dev/null", O_WRONLY), NULL, "d");
    quiche_conn_set_qlog_fd(conn, open("/dev/null", O_WRONLY), "t", NULL);
    quiche_conn_set_qlog_fd(conn, open("/dev/null", O_WRONLY), "t", "d");
}

static void test_datagrams(quiche_conn *conn) {
    uint8_t buf[1500];
    quiche_send_info si;
    quiche_recv_info ri;
    ssize_t n;

    CHECK(quiche_conn_send(NULL, buf, sizeof(buf), &si) < 0);
    CHECK(quiche_conn_send(conn, NULL, sizeof(buf), &si) < 0);
    CHECK(quiche_conn_send(conn, buf, sizeof(buf), NULL) < 0);
    /* The client's first datagram: an Initial, padded to at least 1200 bytes, to the peer. */
    n = quiche_conn_send(conn, buf, sizeof(buf), &si);
    CHECK(n >= QUICHE_MIN_CLIENT_INITIAL_LEN);
    CHECK(si.to_len == sizeof(struct sockaddr_in) && si.to.ss_family == AF_INET);
    CHECK(((struct sockaddr_in *) &si.to)->sin_port == htons(4433));
    CHECK(((struct sockaddr_in *) &si.from)->sin_port == htons(40000));
    CHECK(si.at.tv_nsec >= 0 && si.at.tv_nsec < 1000000000L);

    ri.from = (struct sockaddr *) &peer_addr;
    ri.from_len = sizeof(peer_addr);
    ri.to = (struct sockaddr *) &local_addr;
    ri.to_len = sizeof(local_addr);
    CHECK(quiche_conn_recv(NULL, buf, (size_t) n, &ri) < 0);
    CHECK(quiche_conn_recv(conn, NULL, (size_t) n, &ri) < 0);
    CHECK(quiche_conn_recv(conn, buf, (size_t) n, NULL) < 0);
    ri.from = NULL;
    CHECK(quiche_conn_recv(conn, buf, (size_t) n, &ri) < 0);
    ri.from = (struct sockaddr *) &peer_addr;
    ri.to = NULL;
    CHECK(quiche_conn_recv(conn, buf, (size_t) n, &ri) < 0);

    CHECK(quiche_conn_send_quantum(NULL) == 0);
    CHECK(quiche_conn_send_quantum(conn) > 0);
    CHECK(quiche_conn_max_send_udp_payload_size(NULL) == 0);
    CHECK(quiche_conn_max_send_udp_payload_size(conn) >= 1200);
    CHECK(quiche_conn_timeout_as_nanos(NULL) == UINT64_MAX);
    CHECK(quiche_conn_timeout_as_millis(NULL) == UINT64_MAX);
    CHECK(quiche_conn_timeout_as_nanos(conn) != UINT64_MAX);
    quiche_conn_on_timeout(NULL);
    CHECK(!quiche_conn_set_keylog_path(NULL, "/dev/null"));
    CHECK(!quiche_conn_set_keylog_path(conn, NULL));
    CHECK(quiche_conn_set_keylog_path(conn, "/dev/null"));
    CHECK(!quiche_conn_set_qlog_path(NULL, "/dev/null", "t", "d"));
    CHECK(!quiche_conn_set_qlog_path(conn, NULL, "t", "d"));
    CHECK(!quiche_conn_set_qlog_path(conn, "/dev/null", NULL, "d"));
    CHECK(!quiche_conn_set_qlog_path(conn, "/dev/null", "t", NULL));
    CHECK(quiche_conn_set_session(NULL, buf, 10) < 0);
    CHECK(quiche_conn_set_session(conn, NULL, 10) < 0);
    test_keepalive_and_fds(conn);
}

static void test_streams(quiche_conn *conn) {
    uint8_t buf[64];
    bool fin = false;
    uint64_t code = 0, id = 0;
    quiche_stream_iter *it;

    CHECK(quiche_conn_stream_recv(NULL, 0, buf, sizeof(buf), &fin, &code) < 0);
    CHECK(quiche_conn_stream_recv(conn, 0, NULL, sizeof(buf), &fin, &code) < 0);
    CHECK(quiche_conn_stream_recv(conn, 0, buf, sizeof(buf), NULL, &code) < 0);
    /* out_error_code is optional. */
    CHECK(quiche_conn_stream_recv(conn, 0, buf, sizeof(buf), &fin, NULL) < 0);
    CHECK(quiche_conn_stream_send(NULL, 0, buf, 4, false, &code) < 0);
    CHECK(quiche_conn_stream_send(conn, 0, NULL, 4, false, &code) < 0);
    CHECK(quiche_conn_stream_priority(NULL, 0, 3, true) < 0);
    CHECK(quiche_conn_stream_shutdown(NULL, 0, QUICHE_SHUTDOWN_READ, 0) < 0);
    CHECK(quiche_conn_stream_shutdown(conn, 0, (enum quiche_shutdown) 9, 0) < 0);
    CHECK(quiche_conn_stream_capacity(NULL, 0) < 0);
    CHECK(quiche_conn_stream_writable(NULL, 0, 1) < 0);
    CHECK(!quiche_conn_stream_readable(NULL, 0));
    CHECK(!quiche_conn_stream_finished(NULL, 0));
    CHECK(quiche_conn_readable(NULL) == NULL);
    CHECK(quiche_conn_writable(NULL) == NULL);
    it = quiche_conn_readable(conn);
    CHECK(it != NULL);
    CHECK(!quiche_stream_iter_next(NULL, &id));
    CHECK(!quiche_stream_iter_next(it, NULL));
    CHECK(!quiche_stream_iter_next(it, &id)); /* nothing is readable before the handshake */
    quiche_stream_iter_free(it);
    quiche_stream_iter_free(NULL);
    CHECK(quiche_conn_peer_streams_left_bidi(NULL) == 0);
    CHECK(quiche_conn_peer_streams_left_uni(NULL) == 0);
}

static void test_dgram(quiche_conn *conn) {
    uint8_t buf[16];
    CHECK(quiche_conn_dgram_max_writable_len(NULL) < 0);
    CHECK(quiche_conn_dgram_recv_front_len(NULL) < 0);
    CHECK(quiche_conn_dgram_recv_queue_len(NULL) < 0);
    CHECK(quiche_conn_dgram_recv_queue_byte_size(NULL) < 0);
    CHECK(quiche_conn_dgram_send_queue_len(NULL) < 0);
    CHECK(quiche_conn_dgram_send_queue_byte_size(NULL) < 0);
    CHECK(!quiche_conn_is_dgram_send_queue_full(NULL));
    CHECK(!quiche_conn_is_dgram_recv_queue_full(NULL));
    CHECK(quiche_conn_dgram_recv(NULL, buf, sizeof(buf)) < 0);
    CHECK(quiche_conn_dgram_recv(conn, NULL, sizeof(buf)) < 0);
    CHECK(quiche_conn_dgram_send(NULL, buf, sizeof(buf)) < 0);
    CHECK(quiche_conn_dgram_send(conn, NULL, sizeof(buf)) < 0);
    /* Nothing is known about the peer yet. */
    CHECK(quiche_conn_dgram_max_writable_len(conn) == QUICHE_ERR_DONE);
    CHECK(quiche_conn_dgram_recv_queue_len(conn) == 0);
}

typedef void (*lend_fn)(const quiche_conn *, const uint8_t **, size_t *);

static void test_lending(quiche_conn *conn) {
    lend_fn fns[4];
    const uint8_t *out = (const uint8_t *) "x";
    size_t len = 99, i;

    fns[0] = quiche_conn_trace_id;
    fns[1] = quiche_conn_source_id;
    fns[2] = quiche_conn_destination_id;
    fns[3] = quiche_conn_application_proto;
    for (i = 0; i < 4; i++) {
        out = (const uint8_t *) "x";
        len = 99;
        fns[i](NULL, &out, &len);
        CHECK(out == NULL && len == 0);
        fns[i](conn, NULL, &len);
        fns[i](conn, &out, NULL);
    }
    quiche_conn_trace_id(conn, &out, &len);
    CHECK(out != NULL && len > 0);
    quiche_conn_source_id(conn, &out, &len);
    CHECK(out != NULL && len == 16);
    quiche_conn_session(NULL, &out, &len);
    CHECK(out == NULL && len == 0);
    quiche_conn_session(conn, NULL, &len);
    quiche_conn_session(conn, &out, NULL);
}

static void test_state(quiche_conn *conn) {
    bool is_app = true;
    uint64_t code = 1;
    const uint8_t *reason = NULL;
    size_t reason_len = 0;
    quiche_stats stats;
    quiche_path_stats path;
    quiche_transport_params tp;

    CHECK(!quiche_conn_is_established(NULL));
    CHECK(!quiche_conn_is_resumed(NULL));
    CHECK(!quiche_conn_is_in_early_data(NULL));
    CHECK(!quiche_conn_is_draining(NULL));
    CHECK(!quiche_conn_is_closed(NULL));
    CHECK(!quiche_conn_is_timed_out(NULL));
    CHECK(!quiche_conn_is_server(NULL));

    memset(&stats, 0xff, sizeof(stats));
    quiche_conn_stats(NULL, &stats);
    quiche_conn_stats(conn, NULL);
    quiche_conn_stats(conn, &stats);
    CHECK(stats.sent == 1 && stats.recv == 0 && stats.sent_bytes >= 1200);
    CHECK(stats.paths_count == 1 && !stats.tx_buffered_inconsistent);
    /* Nothing from the peer yet: no transport parameters. */
    CHECK(!quiche_conn_peer_transport_params(conn, &tp));
    CHECK(!quiche_conn_peer_transport_params(NULL, &tp));
    CHECK(!quiche_conn_peer_transport_params(conn, NULL));
    CHECK(quiche_conn_path_stats(NULL, 0, &path) < 0);
    CHECK(quiche_conn_path_stats(conn, 0, NULL) < 0);
    CHECK(quiche_conn_path_stats(conn, 1, &path) < 0);
    CHECK(quiche_conn_path_stats(conn, 0, &path) == 0);
    CHECK(path.sent == 1 && path.cwnd > 0 && path.active && path.peer_addr_len > 0);

    CHECK(quiche_conn_close(NULL, true, 7, NULL, 0) < 0);
    CHECK(quiche_conn_close(conn, true, 7, NULL, 5) < 0);
    CHECK(quiche_conn_close(conn, true, 7, (const uint8_t *) "bye", 3) == 0);
    CHECK(quiche_conn_close(conn, true, 7, NULL, 0) == QUICHE_ERR_DONE);

    CHECK(!quiche_conn_peer_error(NULL, &is_app, &code, &reason, &reason_len));
    CHECK(!quiche_conn_peer_error(conn, &is_app, &code, &reason, &reason_len));
    CHECK(!quiche_conn_local_error(NULL, &is_app, &code, &reason, &reason_len));
    CHECK(!quiche_conn_local_error(conn, NULL, &code, &reason, &reason_len));
    CHECK(!quiche_conn_local_error(conn, &is_app, NULL, &reason, &reason_len));
    CHECK(!quiche_conn_local_error(conn, &is_app, &code, NULL, &reason_len));
    CHECK(!quiche_conn_local_error(conn, &is_app, &code, &reason, NULL));
    CHECK(quiche_conn_local_error(conn, &is_app, &code, &reason, &reason_len));
    CHECK(is_app && code == 7 && reason_len == 3 && memcmp(reason, "bye", 3) == 0);
}

int main(void) {
    const uint8_t cid[16] = {0x11};
    quiche_config *config;
    quiche_conn *conn;

    init_addrs();
    CHECK(quiche_version() != NULL && strlen(quiche_version()) > 0);
    CHECK(quiche_enable_debug_logging(NULL, NULL) < 0);
    CHECK(quiche_enable_debug_logging(ignore_log, NULL) == 0);
    CHECK(quiche_enable_debug_logging(ignore_log, NULL) < 0);

    test_config();
    test_packets();
    config = client_config();
    CHECK(config != NULL);
    test_creation(config);
    conn = quiche_connect("localhost", cid, sizeof(cid), (struct sockaddr *) &local_addr,
                          sizeof(local_addr), (struct sockaddr *) &peer_addr, sizeof(peer_addr),
                          config);
    quiche_config_free(config);
    CHECK(conn != NULL);
    if (conn != NULL) {
        test_datagrams(conn);
        test_streams(conn);
        test_dgram(conn);
        test_lending(conn);
        test_state(conn);
        quiche_conn_free(conn);
    }
    quiche_conn_free(NULL);

    printf("null_test: %d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
