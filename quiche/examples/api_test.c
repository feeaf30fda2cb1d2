/*
 * api_test.c: a client and a server connection joined in memory through the C API only: the
 * handshake, a request and a response on a stream, DATAGRAM frames, a qlog file, session
 * resumption, statistics, an application close seen by the peer, and the timers up to the
 * closed state. Run it from the repository root (it loads quiche/tests/certs).
 * Exit status 0 when every check passed.
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

#define ALPN "\x0ahq-interop"
#define RESPONSE_LEN (300 * 1000)

static struct sockaddr_in client_addr, server_addr;
static uint8_t buf[65536];

static struct sockaddr_in loopback(uint16_t port) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

/* Moves every datagram `from` has to send into `to`; returns how many, or -1 on an error. */
static int pump(quiche_conn *from, const struct sockaddr_in *from_addr, quiche_conn *to,
                const struct sockaddr_in *to_addr) {
    int moved = 0;
    for (;;) {
        quiche_send_info si;
        quiche_recv_info ri;
        ssize_t n = quiche_conn_send(from, buf, sizeof(buf), &si);
        ssize_t r;
        if (n == QUICHE_ERR_DONE) {
            return moved;
        }
        if (n < 0) {
            fprintf(stderr, "send: %zd\n", n);
            return -1;
        }
        if (memcmp(&si.to, to_addr, sizeof(*to_addr)) != 0) {
            fprintf(stderr, "send_info.to is not the peer's address\n");
            return -1;
        }
        ri.from = (struct sockaddr *) from_addr;
        ri.from_len = sizeof(*from_addr);
        ri.to = (struct sockaddr *) to_addr;
        ri.to_len = sizeof(*to_addr);
        r = quiche_conn_recv(to, buf, (size_t) n, &ri);
        if (r < 0 && r != QUICHE_ERR_DONE) {
            fprintf(stderr, "recv: %zd\n", r);
            return -1;
        }
        moved++;
    }
}

/* Exchanges datagrams both ways until neither side has anything to send. */
static int settle(quiche_conn *client, quiche_conn *server) {
    int round;
    for (round = 0; round < 1000; round++) {
        int a = pump(client, &client_addr, server, &server_addr);
        int b = pump(server, &server_addr, client, &client_addr);
        if (a < 0 || b < 0) {
            return -1;
        }
        if (a == 0 && b == 0) {
            return 0;
        }
    }
    return -1;
}

static quiche_config *config(bool server) {
    quiche_config *c = quiche_config_new(QUICHE_PROTOCOL_VERSION);
    CHECK(quiche_config_set_application_protos(c, (const uint8_t *) ALPN, 11) == 0);
    if (server) {
        CHECK(quiche_config_load_cert_chain_from_pem_file(c, "quiche/tests/certs/cert.crt") == 0);
        CHECK(quiche_config_load_priv_key_from_pem_file(c, "quiche/tests/certs/cert.key") == 0);
    } else {
        CHECK(quiche_config_load_verify_locations_from_file(c, "quiche/tests/certs/rootca.crt") == 0);
    }
    quiche_config_set_initial_max_data(c, 1000000);
    quiche_config_set_initial_max_stream_data_bidi_local(c, 500000);
    quiche_config_set_initial_max_stream_data_bidi_remote(c, 500000);
    quiche_config_set_initial_max_streams_bidi(c, 10);
    quiche_config_set_max_idle_timeout(c, 5000);
    quiche_config_enable_dgram(c, true, 8, 8);
    return c;
}

static quiche_conn *accept_client(quiche_config *server_config) {
    const uint8_t scid[16] = {0x5e, 0x27, 0xe2};
    return quiche_accept(scid, sizeof(scid), NULL, 0, (struct sockaddr *) &server_addr,
                         sizeof(server_addr), (struct sockaddr *) &client_addr,
                         sizeof(client_addr), server_config);
}

static quiche_conn *connect_server(quiche_config *client_config) {
    const uint8_t scid[16] = {0xc1, 0x1e, 0x27};
    return quiche_connect("localhost", scid, sizeof(scid), (struct sockaddr *) &client_addr,
                          sizeof(client_addr), (struct sockaddr *) &server_addr,
                          sizeof(server_addr), client_config);
}

/* The client sends "GET /x" on stream 0; the server answers RESPONSE_LEN bytes with FIN. */
static void exchange_stream(quiche_conn *client, quiche_conn *server) {
    static uint8_t response[RESPONSE_LEN];
    size_t sent = 0, received = 0;
    bool fin = false, request_done = false;
    uint64_t err = 0, id;
    int round;
    quiche_stream_iter *it;

    memset(response, 'r', sizeof(response));
    CHECK(quiche_conn_stream_send(client, 0, (const uint8_t *) "GET /x\r\n", 8, true, &err) == 8);
    CHECK(settle(client, server) == 0);
    it = quiche_conn_readable(server);
    CHECK(quiche_stream_iter_next(it, &id) && id == 0);
    quiche_stream_iter_free(it);
    CHECK(quiche_conn_stream_readable(server, 0));
    CHECK(quiche_conn_stream_recv(server, 0, buf, sizeof(buf), &fin, &err) == 8 && fin);
    CHECK(memcmp(buf, "GET /x\r\n", 8) == 0 && quiche_conn_stream_finished(server, 0));

    for (round = 0; round < 1000 && !request_done; round++) {
        while (sent < RESPONSE_LEN) {
            ssize_t n = quiche_conn_stream_send(server, 0, response + sent, RESPONSE_LEN - sent,
                                                true, &err);
            if (n <= 0) {
                break;
            }
            sent += (size_t) n;
        }
        if (pump(server, &server_addr, client, &client_addr) < 0) {
            break;
        }
        for (;;) {
            ssize_t n = quiche_conn_stream_recv(client, 0, buf, sizeof(buf), &fin, &err);
            if (n < 0) {
                break;
            }
            received += (size_t) n;
            if (fin) {
                request_done = true;
            }
        }
        if (pump(client, &client_addr, server, &server_addr) < 0) {
            break;
        }
    }
    CHECK(request_done && received == RESPONSE_LEN && sent == RESPONSE_LEN);
}

static void exchange_datagrams(quiche_conn *client, quiche_conn *server) {
    ssize_t max = quiche_conn_dgram_max_writable_len(client);
    CHECK(max > 100);
    CHECK(quiche_conn_dgram_send(client, (const uint8_t *) "ping", 4) == 4);
    CHECK(quiche_conn_dgram_send_queue_len(client) == 1);
    CHECK(quiche_conn_dgram_send_queue_byte_size(client) == 4);
    CHECK(!quiche_conn_is_dgram_send_queue_full(client));
    CHECK(quiche_conn_dgram_send(client, buf, (size_t) max + 1) == QUICHE_ERR_BUFFER_TOO_SHORT);
    CHECK(settle(client, server) == 0);
    CHECK(quiche_conn_dgram_recv_queue_len(server) == 1);
    CHECK(quiche_conn_dgram_recv_queue_byte_size(server) == 4);
    CHECK(quiche_conn_dgram_recv_front_len(server) == 4);
    CHECK(!quiche_conn_is_dgram_recv_queue_full(server));
    CHECK(quiche_conn_dgram_recv(server, buf, 2) == QUICHE_ERR_BUFFER_TOO_SHORT);
    CHECK(quiche_conn_dgram_recv(server, buf, sizeof(buf)) == 4 && memcmp(buf, "ping", 4) == 0);
    CHECK(quiche_conn_dgram_recv(server, buf, sizeof(buf)) == QUICHE_ERR_DONE);
    CHECK(quiche_conn_dgram_recv_front_len(server) == QUICHE_ERR_DONE);
}

/* Calls on_timeout until the connection is closed (bounded: about 120 s of 5 ms sleeps). The
 * draining period is three PTOs of the RTT measured here: under valgrind on a loaded machine
 * that RTT is seconds, and the period was seen at over 15 s. */
static bool run_timers_until_closed(quiche_conn *conn) {
    int i;
    for (i = 0; i < 24000 && !quiche_conn_is_closed(conn); i++) {
        uint64_t ns = quiche_conn_timeout_as_nanos(conn);
        struct timespec ts;
        if (ns == UINT64_MAX) {
            return false;
        }
        ns = ns < 5000000 ? ns : 5000000;
        ts.tv_sec = 0;
        ts.tv_nsec = (long) ns;
        nanosleep(&ts, NULL);
        if (quiche_conn_timeout_as_nanos(conn) == 0) {
            quiche_conn_on_timeout(conn);
        }
    }
    return quiche_conn_is_closed(conn);
}

static bool file_contains(const char *path, const char *needle) {
    static char text[1 << 16];
    FILE *f = fopen(path, "rb");
    size_t n;
    if (f == NULL) {
        return false;
    }
    n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    return strstr(text, needle) != NULL;
}

int main(int argc, char **argv) {
    quiche_config *client_config, *server_config;
    quiche_conn *client, *server;
    const uint8_t *proto = NULL, *session = NULL, *reason = NULL;
    size_t proto_len = 0, session_len = 0, reason_len = 0;
    uint8_t *saved_session;
    bool is_app = false;
    uint64_t code = 0;
    quiche_stats stats;
    quiche_path_stats path;
    quiche_transport_params tp;
    const char *qlog = argc > 1 ? argv[1] : "api_test.sqlog";

    client_addr = loopback(40100);
    server_addr = loopback(4433);
    client_config = config(false);
    server_config = config(true);

    /* First connection: everything but resumption. */
    client = connect_server(client_config);
    CHECK(client != NULL);
    CHECK(quiche_conn_set_qlog_path(client, qlog, "api_test", "the client of api_test"));
    server = accept_client(server_config);
    CHECK(server != NULL && quiche_conn_is_server(server) && !quiche_conn_is_server(client));
    CHECK(settle(client, server) == 0);
    CHECK(quiche_conn_is_established(client) && quiche_conn_is_established(server));
    CHECK(!quiche_conn_is_resumed(client));
    quiche_conn_application_proto(server, &proto, &proto_len);
    CHECK(proto_len == 10 && memcmp(proto, "hq-interop", 10) == 0);

    exchange_stream(client, server);
    exchange_datagrams(client, server);

    quiche_conn_stats(client, &stats);
    CHECK(stats.recv > 0 && stats.sent > 0 && stats.recv_bytes > RESPONSE_LEN);
    CHECK(stats.paths_count == 1);
    CHECK(quiche_conn_peer_transport_params(client, &tp));
    CHECK(tp.peer_initial_max_data == 1000000 && tp.peer_max_idle_timeout == 5000);
    CHECK(tp.peer_max_datagram_frame_size > 0);
    CHECK(quiche_conn_path_stats(client, 0, &path) == 0);
    CHECK(path.rtt > 0 && path.min_rtt > 0 && path.cwnd > 0 && path.recv == stats.recv);
    CHECK(path.validation_state == 3 && path.sent_bytes == stats.sent_bytes);

    quiche_conn_session(client, &session, &session_len);
    CHECK(session != NULL && session_len > 0);
    saved_session = malloc(session_len > 0 ? session_len : 1);
    if (session_len > 0) {
        memcpy(saved_session, session, session_len);
    }

    CHECK(quiche_conn_close(client, true, 42, (const uint8_t *) "done", 4) == 0);
    CHECK(settle(client, server) == 0);
    CHECK(quiche_conn_peer_error(server, &is_app, &code, &reason, &reason_len));
    CHECK(is_app && code == 42 && reason_len == 4 && memcmp(reason, "done", 4) == 0);
    CHECK(quiche_conn_is_draining(server));
    CHECK(quiche_conn_is_draining(client)); /* closed by us, CONNECTION_CLOSE sent */
    CHECK(run_timers_until_closed(client) && run_timers_until_closed(server));
    quiche_conn_free(client);
    quiche_conn_free(server);
    /* The qlog file is complete once the connection is freed. */
    CHECK(file_contains(qlog, "\"qlog_version\":\"0.3\"") || file_contains(qlog, "\"qlog_version\": \"0.3\""));
    CHECK(file_contains(qlog, "transport:packet_sent"));

    /* Second connection: resumes the first one's session. */
    client = connect_server(client_config);
    CHECK(client != NULL);
    CHECK(quiche_conn_set_session(client, saved_session, session_len) == 0);
    server = accept_client(server_config);
    CHECK(settle(client, server) == 0);
    CHECK(quiche_conn_is_established(client) && quiche_conn_is_resumed(client));
    quiche_conn_free(client);
    quiche_conn_free(server);
    free(saved_session);

    quiche_config_free(client_config);
    quiche_config_free(server_config);
    printf("api_test: %d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
