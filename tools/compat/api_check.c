// The C twin of tools/compat/api-check: one program on quiche.h's API (HTTP/0.9 level: config,
// header_info, version negotiation, connect/accept, streams, close and drain, stats), compiled
// once against this repository's include/quiche.h and once against the quiche.h shipped with
// quiche 0.30.0, both linked with this repository's library. Both must print the same lines.
//
//   api_check CERT_DIR

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <quiche.h>

#ifdef API_CHECK_BORINGSSL
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#endif

#define MAX_DATAGRAM 1350
#define CID_LEN 20
#define RESERVED_VERSION 0xbabababaU

struct side {
    int fd;
    struct sockaddr_in addr;
    quiche_conn *conn;
};

static struct side client, server;
static quiche_config *server_config;
static uint8_t server_scid[CID_LEN];
static int vn_sent, accepted;

static void bind_side(struct side *s) {
    s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    memset(&s->addr, 0, sizeof(s->addr));
    s->addr.sin_family = AF_INET;
    s->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(s->addr);
    if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&s->addr, len) != 0 ||
        getsockname(s->fd, (struct sockaddr *)&s->addr, &len) != 0) {
        perror("socket");
        exit(1);
    }
}

static quiche_config *make_config(const char *certs, uint32_t version, bool is_server) {
    char path[4096];
    quiche_config *c = quiche_config_new(version);
    if (c == NULL) {
        fprintf(stderr, "quiche_config_new failed\n");
        exit(1);
    }
    const char *side = is_server ? "server" : "client";
    if (is_server) {
        snprintf(path, sizeof(path), "%s/cert.crt", certs);
        printf("config.server.load_cert_chain: %d\n", quiche_config_load_cert_chain_from_pem_file(c, path));
        snprintf(path, sizeof(path), "%s/cert.key", certs);
        printf("config.server.load_priv_key: %d\n", quiche_config_load_priv_key_from_pem_file(c, path));
        quiche_config_verify_peer(c, false);
    } else {
        snprintf(path, sizeof(path), "%s/rootca.crt", certs);
        printf("config.client.load_verify_locations: %d\n", quiche_config_load_verify_locations_from_file(c, path));
        quiche_config_verify_peer(c, true);
    }
    printf("config.%s.set_application_protos: %d\n", side,
           quiche_config_set_application_protos(c, (const uint8_t *)"\x0ahq-interop", 11));
    quiche_config_set_max_idle_timeout(c, 5000);
    quiche_config_set_max_recv_udp_payload_size(c, MAX_DATAGRAM);
    quiche_config_set_max_send_udp_payload_size(c, MAX_DATAGRAM);
    quiche_config_set_initial_max_data(c, 10000000);
    quiche_config_set_initial_max_stream_data_bidi_local(c, 1000000);
    quiche_config_set_initial_max_stream_data_bidi_remote(c, 1000000);
    quiche_config_set_initial_max_stream_data_uni(c, 1000000);
    quiche_config_set_initial_max_streams_bidi(c, 100);
    quiche_config_set_initial_max_streams_uni(c, 100);
    quiche_config_enable_dgram(c, true, 16, 16);
    // The tuning setters: values that change nothing printed here.
    quiche_config_set_max_amplification_factor(c, 3);
    quiche_config_set_max_pacing_rate(c, UINT64_C(1) << 30);
    quiche_config_set_disable_dcid_reuse(c, false);
    quiche_config_set_enable_cubic_idle_restart_fix(c, true);
    quiche_config_set_use_initial_max_data_as_flow_control_win(c, false);
    if (is_server) {
        uint8_t token[16];
        memset(token, 0x5a, sizeof(token));
        quiche_config_set_stateless_reset_token(c, token);
    }
    return c;
}

static void flush(struct side *s) {
    uint8_t out[MAX_DATAGRAM];
    quiche_send_info info;
    if (s->conn == NULL) return;
    for (;;) {
        ssize_t n = quiche_conn_send(s->conn, out, sizeof(out), &info);
        if (n < 0) break;
        sendto(s->fd, out, (size_t)n, 0, (struct sockaddr *)&info.to, info.to_len);
    }
}

static void server_handle(uint8_t *buf, size_t len, struct sockaddr_in *from) {
    uint32_t version;
    uint8_t type;
    uint8_t scid[QUICHE_MAX_CONN_ID_LEN], dcid[QUICHE_MAX_CONN_ID_LEN], token[256];
    size_t scid_len = sizeof(scid), dcid_len = sizeof(dcid), token_len = sizeof(token);
    if (quiche_header_info(buf, len, CID_LEN, &version, &type, scid, &scid_len, dcid, &dcid_len,
                           token, &token_len) < 0) {
        return;
    }
    if (server.conn == NULL) {
        printf("header_info: type=%u version=%#x dcid_len=%zu scid_len=%zu\n", type, version,
               dcid_len, scid_len);
        if (!quiche_version_is_supported(version)) {
            uint8_t out[MAX_DATAGRAM];
            ssize_t n = quiche_negotiate_version(scid, scid_len, dcid, dcid_len, out, sizeof(out));
            if (n > 0) {
                vn_sent++;
                sendto(server.fd, out, (size_t)n, 0, (struct sockaddr *)from, sizeof(*from));
            }
            return;
        }
        for (size_t i = 0; i < CID_LEN; i++) server_scid[i] = (uint8_t)(0xa0 + i);
        server.conn = quiche_accept(server_scid, CID_LEN, NULL, 0, (struct sockaddr *)&server.addr,
                                    sizeof(server.addr), (struct sockaddr *)from, sizeof(*from),
                                    server_config);
        accepted++;
    }
    quiche_recv_info info = {(struct sockaddr *)from, sizeof(*from),
                             (struct sockaddr *)&server.addr, sizeof(server.addr)};
    if (server.conn != NULL) quiche_conn_recv(server.conn, buf, len, &info);
}

static bool read_side(struct side *s, bool is_server) {
    uint8_t buf[65535];
    bool any = false;
    for (;;) {
        struct sockaddr_in from;
        socklen_t from_len = sizeof(from);
        ssize_t n = recvfrom(s->fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &from_len);
        if (n < 0) break;
        any = true;
        if (is_server) {
            server_handle(buf, (size_t)n, &from);
        } else {
            quiche_recv_info info = {(struct sockaddr *)&from, from_len,
                                     (struct sockaddr *)&s->addr, sizeof(s->addr)};
            quiche_conn_recv(s->conn, buf, (size_t)n, &info);
        }
    }
    return any;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef bool (*step_fn)(void *arg);

// Runs both sides until `step` returns true or ten seconds pass.
static bool pump(step_fn step, void *arg) {
    double deadline = now_s() + 10.0;
    for (;;) {
        if (step(arg)) {
            flush(&client);
            flush(&server);
            return true;
        }
        if (now_s() > deadline) return false;
        flush(&client);
        flush(&server);
        bool any = read_side(&server, true);
        any |= read_side(&client, false);
        if (!any) {
            usleep(1000);
            if (quiche_conn_timeout_as_nanos(client.conn) == 0) quiche_conn_on_timeout(client.conn);
            if (server.conn && quiche_conn_timeout_as_nanos(server.conn) == 0)
                quiche_conn_on_timeout(server.conn);
        }
    }
}

static bool both_established(void *arg) {
    (void)arg;
    return server.conn && quiche_conn_is_established(client.conn) &&
           quiche_conn_is_established(server.conn);
}

struct reader {
    quiche_conn *conn;
    uint64_t id;
    uint8_t data[40000];
    size_t len;
    size_t want; // done once this many bytes are read (0: only at fin)
    bool fin;
    ssize_t last;
    uint64_t err;
};

static bool read_until_fin(void *arg) {
    struct reader *r = arg;
    // A stream the peer has not opened yet is not an error to wait on.
    if (!quiche_conn_stream_readable(r->conn, r->id)) return false;
    for (;;) {
        bool fin = false;
        uint64_t err = 0;
        ssize_t n = quiche_conn_stream_recv(r->conn, r->id, r->data + r->len, sizeof(r->data) - r->len,
                                            &fin, &err);
        r->last = n;
        r->err = err;
        if (n < 0) return n != QUICHE_ERR_DONE;
        r->len += (size_t)n;
        if (r->want > 0 && r->len >= r->want) return true;
        if (fin) {
            r->fin = true;
            return true;
        }
    }
}

static bool server_conn_closed(void *arg) {
    (void)arg;
    return quiche_conn_is_closed(client.conn) && quiche_conn_is_closed(server.conn);
}

static bool server_draining(void *arg) {
    (void)arg;
    return quiche_conn_is_draining(server.conn);
}

struct stopped {
    ssize_t rc;
    uint64_t err;
};

static bool client_sees_stop(void *arg) {
    struct stopped *s = arg;
    s->rc = quiche_conn_stream_send(client.conn, 4, (const uint8_t *)"more", 4, false, &s->err);
    return s->rc == QUICHE_ERR_STREAM_STOPPED;
}

static bool server_readable_8(void *arg) {
    (void)arg;
    quiche_stream_iter *it = quiche_conn_readable(server.conn);
    uint64_t id;
    bool found = false;
    while (quiche_stream_iter_next(it, &id)) found |= id == 8;
    quiche_stream_iter_free(it);
    return found;
}

static void print_error(const char *name, quiche_conn *conn, bool local) {
    bool is_app = false;
    uint64_t code = 0;
    const uint8_t *reason = NULL;
    size_t reason_len = 0;
    bool has = local ? quiche_conn_local_error(conn, &is_app, &code, &reason, &reason_len)
                     : quiche_conn_peer_error(conn, &is_app, &code, &reason, &reason_len);
    if (has)
        printf("%s: is_app=%d error_code=%#llx reason=%.*s\n", name, is_app, (unsigned long long)code,
               (int)reason_len, (const char *)reason);
    else
        printf("%s: none\n", name);
}

static bool purge_two(uint8_t *buf, size_t len) {
    return len == 3 && memcmp(buf, "two", 3) == 0;
}

static bool server_dgram(void *arg) {
    (void)arg;
    return quiche_conn_dgram_recv_front_len(server.conn) >= 0;
}

static bool server_readable_16(void *arg) {
    (void)arg;
    return quiche_conn_stream_readable(server.conn, 16);
}

/* The stream and CID iterators, the varint helpers, the DATAGRAM purge, send_ack_eliciting,
   send_quantum_on_path and is_readable. */
static void calls_beyond_the_examples(void) {
    uint8_t v[8] = {0};
    uint64_t val = 0;
    /* The call first: the order in which a call's arguments are evaluated is unspecified. */
    int put = quiche_put_varint(v, sizeof(v), 15293);
    printf("put_varint(15293): %d %02x%02x\n", put, v[0], v[1]);
    printf("get_varint: %zd %llu\n", quiche_get_varint(v, sizeof(v), &val), (unsigned long long)val);
    printf("put_varint(2^62, short buffer): %d\n", quiche_put_varint(v, 4, UINT64_C(1) << 62));
    printf("get_varint(empty): %zd\n", quiche_get_varint(v, 0, &val));

    uint64_t err = 0;
    printf("calls.client.is_readable: %d\n", quiche_conn_is_readable(client.conn));
    printf("calls.client.stream_send(16): %zd\n",
           quiche_conn_stream_send(client.conn, 16, (const uint8_t *)"sixteen", 7, true, &err));
    bool writable16 = false;
    int64_t id;
    while ((id = quiche_conn_stream_writable_next(client.conn)) >= 0) writable16 |= id == 16;
    printf("calls.client.stream_writable_next has 16: %d\n", writable16);
    pump(server_readable_16, NULL);
    printf("calls.server.is_readable: %d\n", quiche_conn_is_readable(server.conn));
    bool readable16 = false;
    while ((id = quiche_conn_stream_readable_next(server.conn)) >= 0) readable16 |= id == 16;
    printf("calls.server.stream_readable_next has 16: %d\n", readable16);

    quiche_conn_dgram_send(client.conn, (const uint8_t *)"one", 3);
    quiche_conn_dgram_send(client.conn, (const uint8_t *)"two", 3);
    quiche_conn_dgram_purge_outgoing(client.conn, purge_two);
    printf("calls.client.dgram_send_queue_len after purge: %zd\n",
           quiche_conn_dgram_send_queue_len(client.conn));
    pump(server_dgram, NULL);
    uint8_t d[16];
    ssize_t dn = quiche_conn_dgram_recv(server.conn, d, sizeof(d));
    printf("calls.server.dgram_recv: %zd %.*s\n", dn, dn > 0 ? (int)dn : 0, (const char *)d);

    printf("calls.client.send_ack_eliciting: %zd\n", quiche_conn_send_ack_eliciting(client.conn));
    printf("calls.client.send_quantum_on_path>0: %d\n",
           quiche_conn_send_quantum_on_path(client.conn, (struct sockaddr *)&client.addr,
                                            sizeof(client.addr), (struct sockaddr *)&server.addr,
                                            sizeof(server.addr)) > 0);

    size_t n = 0;
    quiche_connection_id_iter *it = quiche_conn_source_ids(client.conn);
    const uint8_t *cid;
    size_t cid_len;
    while (quiche_connection_id_iter_next(it, &cid, &cid_len)) n++;
    quiche_connection_id_iter_free(it);
    printf("calls.client.source_ids>=1: %d\n", n >= 1);
    printf("calls.client.active_scids>=1: %d\n", quiche_conn_active_scids(client.conn) >= 1);
    printf("calls.client.retired_scids: %zu\n", quiche_conn_retired_scids(client.conn));
    it = quiche_conn_retired_scid_iter(client.conn);
    n = 0;
    while (quiche_connection_id_iter_next(it, &cid, &cid_len)) n++;
    quiche_connection_id_iter_free(it);
    printf("calls.client.retired_scid_iter: %zu\n", n);
    printf("calls.client.set_max_idle_timeout: %d\n", quiche_conn_set_max_idle_timeout(client.conn, 5000));
}

#ifdef API_CHECK_BORINGSSL
// quiche 0.30's BoringSSL-only C API (API_CHECK_BORINGSSL: built with BoringSSL's headers and
// linked with a libquiche built with boringssl-boring-crate): connections on the
// application's own SSL, a ticket key, a CA directory, the curves list, the peer's
// certificate, the server name, and a session resumed on a second connection. Every line
// starts with "boringssl.".

static bool client_has_session(void *arg) {
    (void)arg;
    const uint8_t *out;
    size_t len;
    quiche_conn_session(client.conn, &out, &len);
    return len > 0;
}

static bool both_closed(void *arg) {
    (void)arg;
    return quiche_conn_is_closed(client.conn) && (server.conn == NULL || quiche_conn_is_closed(server.conn));
}

// A directory in OpenSSL's hashed layout holding the test CA (<subject hash>.0).
static void ca_directory(const char *certs, char *dir, size_t dir_len) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/rootca.crt", certs);
    FILE *f = fopen(path, "r");
    X509 *ca = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
    if (f) fclose(f);
    snprintf(dir, dir_len, "/tmp/api-check-ca.XXXXXX");
    if (ca == NULL || mkdtemp(dir) == NULL) {
        fprintf(stderr, "cannot make the CA directory\n");
        exit(1);
    }
    snprintf(path, sizeof(path), "%s/%08lx.0", dir, (unsigned long)X509_subject_name_hash(ca));
    FILE *out = fopen(path, "w");
    if (out == NULL || !PEM_write_X509(out, ca)) {
        fprintf(stderr, "cannot write the CA\n");
        exit(1);
    }
    fclose(out);
    X509_free(ca);
}

// A client SSL of the application's own, as curl makes one.
static SSL *client_ssl(SSL_CTX *ctx) {
    SSL *ssl = SSL_new(ctx);
    SSL_set_tlsext_host_name(ssl, "quic.tech");
    SSL_set_alpn_protos(ssl, (const uint8_t *)"\x0ahq-interop", 11);
    return ssl;
}

// Ends the client's connection and the server's, then forgets both.
static void end_connection(void) {
    quiche_conn_close(client.conn, true, 0, NULL, 0);
    pump(both_closed, NULL);
    quiche_conn_free(client.conn);
    client.conn = NULL;
    if (server.conn) quiche_conn_free(server.conn);
    server.conn = NULL;
}

static void boringssl_part(const char *certs) {
    server_config = make_config(certs, QUICHE_PROTOCOL_VERSION, true);
    uint8_t key[48];
    memset(key, 0x42, sizeof(key));
    printf("boringssl.server.set_ticket_key: %d\n", quiche_config_set_ticket_key(server_config, key, sizeof(key)));
    quiche_config_enable_early_data(server_config);

    quiche_config *config = quiche_config_new(QUICHE_PROTOCOL_VERSION);
    char dir[256];
    ca_directory(certs, dir, sizeof(dir));
    printf("boringssl.client.load_verify_locations_from_directory: %d\n",
           quiche_config_load_verify_locations_from_directory(config, dir));
    quiche_config_verify_peer(config, true);
    printf("boringssl.client.set_curves_list(X25519:P-256): %d\n", quiche_config_set_curves_list(config, "X25519:P-256"));
    printf("boringssl.client.set_curves_list(no-such-curve)<0: %d\n", quiche_config_set_curves_list(config, "no-such-curve") < 0);
    quiche_config_set_application_protos(config, (const uint8_t *)"\x0ahq-interop", 11);
    quiche_config_set_max_idle_timeout(config, 5000);
    quiche_config_set_initial_max_data(config, 1000000);
    quiche_config_set_initial_max_stream_data_bidi_local(config, 100000);
    quiche_config_set_initial_max_streams_bidi(config, 100);
    quiche_config_enable_early_data(config);

    // The application's context verifies the server (quiche_conn_new_with_tls takes the
    // SSL as configured).
    SSL_CTX *ctx = SSL_CTX_new(TLS_method());
    char path[4096];
    snprintf(path, sizeof(path), "%s/rootca.crt", certs);
    SSL_CTX_load_verify_locations(ctx, path, NULL);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT);

    uint8_t scid[CID_LEN];
    for (size_t i = 0; i < CID_LEN; i++) scid[i] = (uint8_t)(0x30 + i);
    accepted = 0;
    client.conn = quiche_conn_new_with_tls(scid, CID_LEN, NULL, 0, (struct sockaddr *)&client.addr,
                                           sizeof(client.addr), (struct sockaddr *)&server.addr,
                                           sizeof(server.addr), config, client_ssl(ctx), false);
    printf("boringssl.conn_new_with_tls: %s\n", client.conn ? "ok" : "null");
    if (client.conn == NULL) return;
    printf("boringssl.handshake.established: %d\n", pump(both_established, NULL));
    if (server.conn == NULL) return;
    const uint8_t *out;
    size_t len;
    quiche_conn_peer_cert(client.conn, &out, &len);
    printf("boringssl.client.peer_cert.len>0: %d\n", len > 0);
    quiche_conn_peer_cert(server.conn, &out, &len);
    printf("boringssl.server.peer_cert.len (client sent none): %zu\n", len);
    quiche_conn_server_name(server.conn, &out, &len);
    printf("boringssl.server.server_name: %.*s\n", (int)len, (const char *)out);
    end_connection();

    // A session from a connection on the config's own context (an application's SSL_CTX
    // has no session callback of quiche's: it keeps its sessions itself, as curl does).
    scid[1] ^= 0xff;
    client.conn = quiche_connect("quic.tech", scid, CID_LEN, (struct sockaddr *)&client.addr,
                                 sizeof(client.addr), (struct sockaddr *)&server.addr,
                                 sizeof(server.addr), config);
    printf("boringssl.session.established: %d\n", pump(both_established, NULL));
    printf("boringssl.client.session: %d\n", pump(client_has_session, NULL));
    quiche_conn_session(client.conn, &out, &len);
    uint8_t *session = malloc(len);
    size_t session_len = len;
    memcpy(session, out, len);
    end_connection();

    // Resumption, on a client whose first Destination Connection ID is its own.
    uint8_t dcid[CID_LEN];
    for (size_t i = 0; i < CID_LEN; i++) dcid[i] = (uint8_t)(0x50 + i);
    scid[0] ^= 0xff;
    client.conn = quiche_conn_new_with_tls_and_client_dcid(
        scid, CID_LEN, dcid, CID_LEN, (struct sockaddr *)&client.addr, sizeof(client.addr),
        (struct sockaddr *)&server.addr, sizeof(server.addr), config, client_ssl(ctx));
    printf("boringssl.conn_new_with_tls_and_client_dcid: %s\n", client.conn ? "ok" : "null");
    if (client.conn == NULL) return;
    printf("boringssl.resume.set_session: %d\n", quiche_conn_set_session(client.conn, session, session_len));
    printf("boringssl.resume.established: %d\n", pump(both_established, NULL));
    printf("boringssl.resume.client.is_resumed: %d\n", quiche_conn_is_resumed(client.conn));
    printf("boringssl.resume.server.is_resumed: %d\n", server.conn && quiche_conn_is_resumed(server.conn));
    end_connection();
    free(session);
    SSL_CTX_free(ctx);
    quiche_config_free(config);
    quiche_config_free(server_config);
}
#endif

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: api_check CERT_DIR\n");
        return 2;
    }
    printf("version_is_supported(QUICHE_PROTOCOL_VERSION): %d\n", quiche_version_is_supported(QUICHE_PROTOCOL_VERSION));
    printf("version_is_supported(0xbabababa): %d\n", quiche_version_is_supported(RESERVED_VERSION));
    bind_side(&client);
    bind_side(&server);
    server_config = make_config(argv[1], QUICHE_PROTOCOL_VERSION, true);
    quiche_config *client_config = make_config(argv[1], RESERVED_VERSION, false);

    uint8_t client_scid[CID_LEN];
    for (size_t i = 0; i < CID_LEN; i++) client_scid[i] = (uint8_t)(0x10 + i);
    client.conn = quiche_connect("quic.tech", client_scid, CID_LEN, (struct sockaddr *)&client.addr,
                                 sizeof(client.addr), (struct sockaddr *)&server.addr,
                                 sizeof(server.addr), client_config);
    printf("connect: %s\n", client.conn ? "ok" : "null");
    if (client.conn == NULL) return 1;
    printf("handshake.established: %d\n", pump(both_established, NULL));
    printf("server.vn_sent>0: %d\n", vn_sent > 0);
    printf("server.accepted: %d\n", accepted);
    if (server.conn == NULL) return 1;
    const uint8_t *proto;
    size_t proto_len;
    quiche_conn_application_proto(server.conn, &proto, &proto_len);
    printf("server.application_proto: %.*s\n", (int)proto_len, (const char *)proto);
    printf("server.is_server: %d client.is_server: %d\n", quiche_conn_is_server(server.conn),
           quiche_conn_is_server(client.conn));

    // Stream 0: 30000 bytes with fin, read by the server.
    static uint8_t request[30000];
    for (size_t i = 0; i < sizeof(request); i++) request[i] = (uint8_t)(i * 31 + 1);
    uint64_t err = 0;
    printf("stream.0.capacity(before open)<0: %d\n", quiche_conn_stream_capacity(client.conn, 0) < 0);
    ssize_t sent = quiche_conn_stream_send(client.conn, 0, request, sizeof(request), true, &err);
    printf("stream.0.client.stream_send>0: %d\n", sent > 0);
    static struct reader r;
    r.conn = NULL;
    // The whole request may not fit the first flight: send the rest while the server reads.
    size_t off = sent > 0 ? (size_t)sent : 0;
    double deadline = now_s() + 10.0;
    r.id = 0;
    while (!r.fin && now_s() < deadline) {
        if (off < sizeof(request)) {
            ssize_t n = quiche_conn_stream_send(client.conn, 0, request + off, sizeof(request) - off, true, &err);
            if (n > 0) off += (size_t)n;
        }
        r.conn = server.conn;
        pump(read_until_fin, &r);
    }
    printf("stream.0.server_received: %d\n", r.fin && r.len == sizeof(request) &&
                                                 memcmp(r.data, request, sizeof(request)) == 0);
    printf("stream.0.server.stream_finished: %d\n", quiche_conn_stream_finished(server.conn, 0));

    // Echo back on stream 0.
    sent = quiche_conn_stream_send(server.conn, 0, (const uint8_t *)"echo", 4, true, &err);
    printf("stream.0.server.stream_send: %zd\n", sent);
    static struct reader back;
    back.conn = client.conn;
    back.id = 0;
    pump(read_until_fin, &back);
    printf("stream.0.client_received: %d %.*s\n", back.fin, (int)back.len, (const char *)back.data);

    // Stream 4: STOP_SENDING(42) from the server.
    sent = quiche_conn_stream_send(client.conn, 4, (const uint8_t *)"partial", 7, false, &err);
    printf("stream.4.client.stream_send: %zd\n", sent);
    static struct reader r4;
    r4.conn = server.conn;
    r4.id = 4;
    r4.want = 7;
    pump(read_until_fin, &r4);
    printf("stream.4.server.shutdown(read, 42): %d\n",
           quiche_conn_stream_shutdown(server.conn, 4, QUICHE_SHUTDOWN_READ, 42));
    struct stopped st = {0, 0};
    pump(client_sees_stop, &st);
    printf("stream.4.client.stream_send_after_stop: %zd error_code=%llu\n", st.rc, (unsigned long long)st.err);

    // Stream 8: RESET_STREAM(7) from the client.
    sent = quiche_conn_stream_send(client.conn, 8, (const uint8_t *)"doomed", 6, false, &err);
    printf("stream.8.client.stream_send: %zd\n", sent);
    pump(server_readable_8, NULL);
    printf("stream.8.client.shutdown(write, 7): %d\n",
           quiche_conn_stream_shutdown(client.conn, 8, QUICHE_SHUTDOWN_WRITE, 7));
    static struct reader r8;
    r8.conn = server.conn;
    r8.id = 8;
    pump(read_until_fin, &r8);
    printf("stream.8.server.stream_recv_after_reset: %zd error_code=%llu\n", r8.last, (unsigned long long)r8.err);
    printf("stream.3.client.stream_send(server uni): %zd\n",
           quiche_conn_stream_send(client.conn, 3, (const uint8_t *)"x", 1, false, &err));

    calls_beyond_the_examples();

    // Stats.
    quiche_stats s;
    quiche_conn_stats(client.conn, &s);
    printf("stats.client.sent>0: %d recv>0: %d sent_bytes>0: %d recv_bytes>0: %d paths_count: %zu\n",
           s.sent > 0, s.recv > 0, s.sent_bytes > 0, s.recv_bytes > 0, s.paths_count);
    quiche_path_stats ps;
    int prc = quiche_conn_path_stats(client.conn, 0, &ps);
    printf("path_stats.client(0): %d\n", prc);
    if (prc == 0) {
        printf("path_stats.client.sent>0: %d recv>0: %d rtt>0: %d cwnd>0: %d pmtu: %zu\n", ps.sent > 0,
               ps.recv > 0, ps.rtt > 0, ps.cwnd > 0, ps.pmtu);
        struct sockaddr_in *local = (struct sockaddr_in *)&ps.local_addr;
        struct sockaddr_in *peer = (struct sockaddr_in *)&ps.peer_addr;
        printf("path_stats.client.addrs_match: %d\n",
               local->sin_port == client.addr.sin_port && peer->sin_port == server.addr.sin_port);
    }
    printf("path_stats.client(1): %d\n", quiche_conn_path_stats(client.conn, 1, &ps));

    // Close and drain.
    printf("close.client.close: %d\n", quiche_conn_close(client.conn, true, 0x42, (const uint8_t *)"bye", 3));
    printf("close.client.close(again): %d\n", quiche_conn_close(client.conn, true, 0x43, (const uint8_t *)"x", 1));
    flush(&client);
    printf("close.client.is_draining: %d is_closed: %d timeout_set: %d\n", quiche_conn_is_draining(client.conn),
           quiche_conn_is_closed(client.conn), quiche_conn_timeout_as_nanos(client.conn) != UINT64_MAX);
    print_error("close.client.local_error", client.conn, true);
    print_error("close.client.peer_error", client.conn, false);
    printf("close.server.is_draining: %d\n", pump(server_draining, NULL));
    print_error("close.server.peer_error", server.conn, false);
    printf("close.both.is_closed: %d\n", pump(server_conn_closed, NULL));
    printf("close.client.timeout_after_closed: %llu\n", (unsigned long long)quiche_conn_timeout_as_nanos(client.conn));
    printf("close.client.is_timed_out: %d\n", quiche_conn_is_timed_out(client.conn));

    quiche_conn_free(client.conn);
    quiche_conn_free(server.conn);
    quiche_config_free(client_config);
    quiche_config_free(server_config);
#ifdef API_CHECK_BORINGSSL
    client.conn = NULL;
    server.conn = NULL;
    boringssl_part(argv[1]);
#endif
    close(client.fd);
    close(server.fd);
    return 0;
}
