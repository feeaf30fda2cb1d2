/*
 * http3-server.c: serves the files of a directory over HTTP/3 (ALPN "h3") with the quiche C
 * API, one UDP socket and poll(). No other dependency. Several connections at once, each with
 * several requests.
 *
 *   http3-server -c CERT -k KEY -r ROOT [-l ADDRESS] [-p PORT] [-n CONNECTIONS]
 *
 * GET and HEAD of a file under ROOT are answered with status 200 and content-length, anything
 * else with 404 (or 405 for other methods). It prints "listening on ADDRESS:PORT" once bound
 * (port 0 picks a free port). With -n it exits after that many connections have closed;
 * SIGINT and SIGTERM end it too, freeing everything. SSLKEYLOGFILE and QUICHE_DEBUG=1 work as
 * in client.c.
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <quiche.h>

#define MAX_DATAGRAM 65535
#define SEND_PAYLOAD 1350
/* The length of the connection IDs we issue: short headers are routed by their first bytes. */
#define CID_LEN 16
#define MAX_TOKEN_LEN 256
#define MAX_PATH_LEN 2048
#define CHUNK (64 * 1024)
#define SOCKET_BUFFER (4 * 1024 * 1024)
/* H3_INTERNAL_ERROR (RFC 9114 section 8.1), for a response that cannot go on. */
#define H3_INTERNAL_ERROR 0x102

/* A request and, once it is complete, the response being sent. */
struct stream {
    uint64_t id;
    char method[16];
    char path[MAX_PATH_LEN];
    bool answered;        /* the response headers went out */
    int status;           /* the response status, 0 before the request is complete */
    int fd;               /* the file being sent; -1 for no body */
    uint64_t size;        /* the file's size */
    uint64_t chunk_start; /* the file offset of the chunk */
    uint8_t *chunk;       /* the file bytes read last; those before chunk_off were accepted */
    size_t chunk_len;
    size_t chunk_off;
    struct stream *next;
};

struct client {
    uint8_t cid[CID_LEN];
    /* The destination ID of the client's first Initial: its packets carry it until the
     * client learns ours. */
    uint8_t odcid[QUICHE_MAX_CONN_ID_LEN];
    size_t odcid_len;
    quiche_conn *conn;
    quiche_h3_conn *h3; /* NULL until the handshake completes */
    struct sockaddr_storage peer;
    socklen_t peer_len;
    struct stream *streams;
    struct client *next;
};

struct server {
    int fd;
    struct sockaddr_storage local;
    socklen_t local_len;
    quiche_config *config;
    quiche_h3_config *h3_config;
    const char *root;
    struct client *clients;
    unsigned long closed;
    unsigned long max_connections;
    uint8_t buf[MAX_DATAGRAM];
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
    (void) sig;
    stop_requested = 1;
}

static void debug_log(const char *line, void *argp) {
    (void) argp;
    fprintf(stderr, "%s\n", line);
}

static void usage(void) {
    fprintf(stderr, "usage: http3-server -c CERT -k KEY -r ROOT [-l ADDRESS] [-p PORT] [-n CONNECTIONS]\n");
}

static int random_bytes(uint8_t *out, size_t len) {
    FILE *f = fopen("/dev/urandom", "rb");
    size_t got;
    if (f == NULL) {
        perror("/dev/urandom");
        return -1;
    }
    got = fread(out, 1, len, f);
    fclose(f);
    return got == len ? 0 : -1;
}

static void print_trace_id(FILE *f, const quiche_conn *conn) {
    const uint8_t *id = NULL;
    size_t len = 0;
    quiche_conn_trace_id(conn, &id, &len);
    fprintf(f, "%.*s", (int) len, id != NULL ? (const char *) id : "");
}

/* ------------------------------------------------------------------------------------------ */
/* Responses.                                                                                  */

static void free_stream(struct stream *s) {
    if (s->fd >= 0) {
        close(s->fd);
    }
    free(s->chunk);
    free(s);
}

static struct stream *find_stream(struct client *c, uint64_t id, bool create) {
    struct stream *s;
    for (s = c->streams; s != NULL; s = s->next) {
        if (s->id == id) {
            return s;
        }
    }
    if (!create) {
        return NULL;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    s->id = id;
    s->fd = -1;
    s->next = c->streams;
    c->streams = s;
    return s;
}

static void remove_stream(struct client *c, struct stream *gone) {
    struct stream **p;
    for (p = &c->streams; *p != NULL; p = &(*p)->next) {
        if (*p == gone) {
            *p = gone->next;
            free_stream(gone);
            return;
        }
    }
}

/* Whether a request path stays below the root: absolute, no ".." segment. */
static bool path_is_safe(const char *path) {
    const char *dots;
    if (path[0] != '/') {
        return false;
    }
    for (dots = strstr(path, "/.."); dots != NULL; dots = strstr(dots + 1, "/..")) {
        if (dots[3] == '/' || dots[3] == '\0') {
            return false;
        }
    }
    return true;
}

/* Copies a header value into a NUL-terminated buffer if it fits. */
static void copy_value(char *out, size_t out_len, const uint8_t *value, size_t len) {
    if (len < out_len) {
        memcpy(out, value, len);
        out[len] = '\0';
    }
}

/* quiche_h3_event_for_each_header callback: keeps :method and :path. */
static int on_header(uint8_t *name, size_t name_len, uint8_t *value, size_t value_len, void *argp) {
    struct stream *s = argp;
    if (name_len == 7 && memcmp(name, ":method", 7) == 0) {
        copy_value(s->method, sizeof(s->method), value, value_len);
    } else if (name_len == 5 && memcmp(name, ":path", 5) == 0) {
        copy_value(s->path, sizeof(s->path), value, value_len);
    }
    return 0;
}

/* Decides the response to a complete request: opens the file, or picks an error status. */
static void prepare_response(struct server *srv, struct stream *s) {
    char file[PATH_MAX];
    struct stat st;
    int n;
    char *query;
    bool head = strcmp(s->method, "HEAD") == 0;

    if (!head && strcmp(s->method, "GET") != 0) {
        s->status = 405;
        return;
    }
    query = strpbrk(s->path, "?#");
    if (query != NULL) {
        *query = '\0';
    }
    n = snprintf(file, sizeof(file), "%s%s", srv->root, s->path);
    if (!path_is_safe(s->path) || n < 0 || (size_t) n >= sizeof(file)) {
        s->status = 404;
        return;
    }
    s->fd = open(file, O_RDONLY);
    if (s->fd < 0 || fstat(s->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "%s %s: not found\n", s->method, s->path);
        if (s->fd >= 0) {
            close(s->fd);
            s->fd = -1;
        }
        s->status = 404;
        return;
    }
    s->status = 200;
    s->size = (uint64_t) st.st_size;
    if (head) {
        close(s->fd);
        s->fd = -1;
        return;
    }
    s->chunk = malloc(CHUNK);
    if (s->chunk == NULL) {
        close(s->fd);
        s->fd = -1;
        s->status = 500;
    }
}

/* Sends the response headers; false while the stream has no room for them. */
static bool send_headers(struct client *c, struct stream *s) {
    char status[8], length[24];
    quiche_h3_header headers[3];
    bool fin = s->fd < 0;
    int rc;

    snprintf(status, sizeof(status), "%d", s->status);
    snprintf(length, sizeof(length), "%" PRIu64, s->status == 200 ? s->size : (uint64_t) 0);
    headers[0].name = (const uint8_t *) ":status";
    headers[0].name_len = 7;
    headers[0].value = (const uint8_t *) status;
    headers[0].value_len = strlen(status);
    headers[1].name = (const uint8_t *) "server";
    headers[1].name_len = 6;
    headers[1].value = (const uint8_t *) "quiche-rs-c";
    headers[1].value_len = 11;
    headers[2].name = (const uint8_t *) "content-length";
    headers[2].name_len = 14;
    headers[2].value = (const uint8_t *) length;
    headers[2].value_len = strlen(length);
    rc = quiche_h3_send_response(c->h3, c->conn, s->id, headers, 3, fin);
    if (rc == QUICHE_H3_ERR_STREAM_BLOCKED || rc == QUICHE_H3_ERR_DONE) {
        return false;
    }
    if (rc < 0) {
        fprintf(stderr, "stream %" PRIu64 ": send_response: %d\n", s->id, rc);
    }
    s->answered = true;
    return true;
}

/*
 * Sends headers, then as much of the file as the connection accepts. Returns true when the
 * stream is finished with (all sent with FIN, or failed) and can be forgotten.
 */
static bool continue_response(struct client *c, struct stream *s) {
    if (!s->answered && !send_headers(c, s)) {
        return false;
    }
    if (s->fd < 0) {
        return true;
    }
    for (;;) {
        size_t left;
        bool fin;
        ssize_t n;

        if (s->chunk_off == s->chunk_len && s->chunk_start + s->chunk_len < s->size) {
            ssize_t r = read(s->fd, s->chunk, CHUNK);
            if (r <= 0) {
                fprintf(stderr, "stream %" PRIu64 ": reading the file failed\n", s->id);
                quiche_conn_stream_shutdown(c->conn, s->id, QUICHE_SHUTDOWN_WRITE, H3_INTERNAL_ERROR);
                return true;
            }
            s->chunk_start += s->chunk_len;
            s->chunk_len = (size_t) r;
            s->chunk_off = 0;
        }
        left = s->chunk_len - s->chunk_off;
        fin = s->chunk_start + s->chunk_len == s->size;
        n = quiche_h3_send_body(c->h3, c->conn, s->id, s->chunk + s->chunk_off, left, fin);
        if (n == QUICHE_H3_ERR_DONE) {
            return false;
        }
        if (n < 0) {
            fprintf(stderr, "stream %" PRIu64 ": send_body error %zd\n", s->id, n);
            return true;
        }
        s->chunk_off += (size_t) n;
        if ((size_t) n < left) {
            return false; /* flow or congestion control: wait until writable again */
        }
        if (fin) {
            return true;
        }
    }
}

/* Handles the client's HTTP/3 events: requests, request bodies (discarded), ends, resets. */
static void read_requests(struct server *srv, struct client *c) {
    if (c->h3 == NULL) {
        c->h3 = quiche_h3_conn_new_with_transport(c->conn, srv->h3_config);
        if (c->h3 == NULL) {
            fprintf(stderr, "cannot start HTTP/3\n");
            quiche_conn_close(c->conn, true, 0x101, NULL, 0);
            return;
        }
    }
    for (;;) {
        quiche_h3_event *ev = NULL;
        int64_t id = quiche_h3_conn_poll(c->h3, c->conn, &ev);
        struct stream *s;

        if (id < 0) {
            break; /* QUICHE_H3_ERR_DONE, or an error that closed the connection */
        }
        switch (quiche_h3_event_type(ev)) {
        case QUICHE_H3_EVENT_HEADERS:
            s = find_stream(c, (uint64_t) id, true);
            if (s != NULL && s->status == 0) {
                quiche_h3_event_for_each_header(ev, on_header, s);
                prepare_response(srv, s);
                if (continue_response(c, s)) {
                    remove_stream(c, s);
                }
            }
            break;
        case QUICHE_H3_EVENT_DATA:
            /* Request bodies are not used: read and drop them. */
            while (quiche_h3_recv_body(c->h3, c->conn, (uint64_t) id, srv->buf, sizeof(srv->buf)) > 0) {
            }
            break;
        case QUICHE_H3_EVENT_RESET:
            s = find_stream(c, (uint64_t) id, false);
            if (s != NULL) {
                remove_stream(c, s);
            }
            break;
        case QUICHE_H3_EVENT_FINISHED:
        case QUICHE_H3_EVENT_GOAWAY:
        case QUICHE_H3_EVENT_PRIORITY_UPDATE:
            break;
        }
        quiche_h3_event_free(ev);
    }
}

/* Continues the responses of the streams that accept data again. */
static void write_responses(struct client *c) {
    quiche_stream_iter *it;
    uint64_t id;

    if (c->h3 == NULL) {
        return;
    }
    it = quiche_conn_writable(c->conn);
    if (it == NULL) {
        return;
    }
    while (quiche_stream_iter_next(it, &id)) {
        struct stream *s = find_stream(c, id, false);
        if (s != NULL && s->status != 0 && continue_response(c, s)) {
            remove_stream(c, s);
        }
    }
    quiche_stream_iter_free(it);
}

/* ------------------------------------------------------------------------------------------ */
/* Connections.                                                                                */

static struct client *find_client(struct server *srv, const uint8_t *dcid, size_t dcid_len) {
    struct client *c;
    for (c = srv->clients; c != NULL; c = c->next) {
        if ((dcid_len == CID_LEN && memcmp(c->cid, dcid, CID_LEN) == 0) ||
            (dcid_len == c->odcid_len && memcmp(c->odcid, dcid, dcid_len) == 0)) {
            return c;
        }
    }
    return NULL;
}

static struct client *new_client(struct server *srv, const uint8_t *dcid, size_t dcid_len,
                                 const struct sockaddr_storage *peer, socklen_t peer_len) {
    struct client *c = calloc(1, sizeof(*c));
    const char *keylog = getenv("SSLKEYLOGFILE");

    if (c == NULL || random_bytes(c->cid, CID_LEN) != 0) {
        free(c);
        return NULL;
    }
    c->conn = quiche_accept(c->cid, CID_LEN, NULL, 0, (const struct sockaddr *) &srv->local,
                            srv->local_len, (const struct sockaddr *) peer, peer_len, srv->config);
    if (c->conn == NULL) {
        fprintf(stderr, "quiche_accept failed\n");
        free(c);
        return NULL;
    }
    if (keylog != NULL) {
        quiche_conn_set_keylog_path(c->conn, keylog);
    }
    memcpy(c->odcid, dcid, dcid_len);
    c->odcid_len = dcid_len;
    memcpy(&c->peer, peer, peer_len);
    c->peer_len = peer_len;
    c->next = srv->clients;
    srv->clients = c;
    fprintf(stderr, "new connection ");
    print_trace_id(stderr, c->conn);
    fprintf(stderr, "\n");
    return c;
}

static void free_client(struct client *c) {
    while (c->streams != NULL) {
        struct stream *next = c->streams->next;
        free_stream(c->streams);
        c->streams = next;
    }
    if (c->h3 != NULL) {
        quiche_h3_conn_free(c->h3);
    }
    quiche_conn_free(c->conn);
    free(c);
}

/* Routes one datagram: to its connection, to a new one, or to Version Negotiation. */
static void handle_datagram(struct server *srv, size_t len, const struct sockaddr_storage *from,
                            socklen_t from_len) {
    uint8_t scid[QUICHE_MAX_CONN_ID_LEN], dcid[QUICHE_MAX_CONN_ID_LEN], token[MAX_TOKEN_LEN];
    size_t scid_len = sizeof(scid), dcid_len = sizeof(dcid), token_len = sizeof(token);
    uint32_t version = 0;
    uint8_t type = 0;
    quiche_recv_info info;
    struct client *c;
    ssize_t rc;

    rc = quiche_header_info(srv->buf, len, CID_LEN, &version, &type, scid, &scid_len, dcid,
                            &dcid_len, token, &token_len);
    if (rc < 0) {
        return; /* not a QUIC packet we can parse: drop it */
    }
    c = find_client(srv, dcid, dcid_len);
    if (c == NULL) {
        if (type != 5 && type != 6 && !quiche_version_is_supported(version)) {
            uint8_t out[SEND_PAYLOAD];
            ssize_t n = quiche_negotiate_version(scid, scid_len, dcid, dcid_len, out, sizeof(out));
            if (n > 0) {
                sendto(srv->fd, out, (size_t) n, 0, (const struct sockaddr *) from, from_len);
            }
            return;
        }
        if (type != 1) {
            return; /* only an Initial packet may start a connection */
        }
        c = new_client(srv, dcid, dcid_len, from, from_len);
        if (c == NULL) {
            return;
        }
    }
    info.from = (struct sockaddr *) from;
    info.from_len = from_len;
    info.to = (struct sockaddr *) &srv->local;
    info.to_len = srv->local_len;
    rc = quiche_conn_recv(c->conn, srv->buf, len, &info);
    if (rc < 0 && rc != QUICHE_ERR_DONE) {
        fprintf(stderr, "quiche_conn_recv: %zd\n", rc);
    }
    if (quiche_conn_is_established(c->conn)) {
        read_requests(srv, c);
    }
}

static void read_datagrams(struct server *srv) {
    for (;;) {
        struct sockaddr_storage from;
        socklen_t from_len = sizeof(from);
        ssize_t n = recvfrom(srv->fd, srv->buf, sizeof(srv->buf), 0, (struct sockaddr *) &from,
                             &from_len);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return; /* EAGAIN: all read */
        }
        handle_datagram(srv, (size_t) n, &from, from_len);
    }
}

static int flush_egress(struct server *srv, struct client *c) {
    static uint8_t out[SEND_PAYLOAD];
    quiche_send_info info;

    for (;;) {
        ssize_t n = quiche_conn_send(c->conn, out, sizeof(out), &info);
        if (n == QUICHE_ERR_DONE) {
            return 0;
        }
        if (n < 0) {
            fprintf(stderr, "quiche_conn_send: %zd\n", n);
            quiche_conn_close(c->conn, false, 0x1, NULL, 0);
            return -1;
        }
        /* A full socket buffer drops the datagram; loss recovery repairs it. */
        if (sendto(srv->fd, out, (size_t) n, 0, (const struct sockaddr *) &info.to, info.to_len) < 0 &&
            errno != EAGAIN && errno != EWOULDBLOCK) {
            perror("sendto");
        }
    }
}

/* Frees the closed connections; prints their statistics. */
static void reap_closed(struct server *srv) {
    struct client **p = &srv->clients;
    while (*p != NULL) {
        struct client *c = *p;
        quiche_stats stats;
        if (!quiche_conn_is_closed(c->conn)) {
            p = &c->next;
            continue;
        }
        quiche_conn_stats(c->conn, &stats);
        fprintf(stderr, "connection ");
        print_trace_id(stderr, c->conn);
        fprintf(stderr, " closed: sent=%zu recv=%zu lost=%zu retrans=%zu sent_bytes=%" PRIu64 "\n",
                stats.sent, stats.recv, stats.lost, stats.retrans, stats.sent_bytes);
        *p = c->next;
        free_client(c);
        srv->closed++;
    }
}

/* The poll() timeout in milliseconds: the nearest timer, rounded up. */
static int poll_timeout(const struct server *srv) {
    uint64_t best = UINT64_MAX, ms;
    const struct client *c;
    for (c = srv->clients; c != NULL; c = c->next) {
        uint64_t ns = quiche_conn_timeout_as_nanos(c->conn);
        if (ns < best) {
            best = ns;
        }
    }
    if (best == UINT64_MAX) {
        return -1;
    }
    ms = best / 1000000 + (best % 1000000 != 0);
    return ms > INT_MAX ? INT_MAX : (int) ms;
}

static void run(struct server *srv) {
    while (!stop_requested) {
        struct pollfd pfd;
        struct client *c;
        int rc;

        for (c = srv->clients; c != NULL; c = c->next) {
            flush_egress(srv, c);
        }
        reap_closed(srv);
        if (srv->max_connections > 0 && srv->closed >= srv->max_connections) {
            return;
        }
        pfd.fd = srv->fd;
        pfd.events = POLLIN;
        pfd.revents = 0;
        rc = poll(&pfd, 1, poll_timeout(srv));
        if (rc < 0 && errno != EINTR) {
            perror("poll");
            return;
        }
        if (rc > 0) {
            read_datagrams(srv);
        }
        for (c = srv->clients; c != NULL; c = c->next) {
            if (quiche_conn_timeout_as_nanos(c->conn) == 0) {
                quiche_conn_on_timeout(c->conn);
            }
            write_responses(c);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Setup.                                                                                      */

static int open_socket(struct server *srv, const char *address, const char *port) {
    struct addrinfo hints, *res;
    char host[INET6_ADDRSTRLEN], serv[16];
    int rc, size = SOCKET_BUFFER;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
    rc = getaddrinfo(address, port, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "%s:%s: %s\n", address, port, gai_strerror(rc));
        return -1;
    }
    srv->fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
    if (srv->fd < 0 || fcntl(srv->fd, F_SETFL, O_NONBLOCK) != 0 ||
        bind(srv->fd, res->ai_addr, res->ai_addrlen) != 0) {
        perror("binding the UDP socket");
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    setsockopt(srv->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    setsockopt(srv->fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    srv->local_len = sizeof(srv->local);
    if (getsockname(srv->fd, (struct sockaddr *) &srv->local, &srv->local_len) != 0 ||
        getnameinfo((struct sockaddr *) &srv->local, srv->local_len, host, sizeof(host), serv,
                    sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        perror("getsockname");
        return -1;
    }
    printf(srv->local.ss_family == AF_INET6 ? "listening on [%s]:%s\n" : "listening on %s:%s\n",
           host, serv);
    fflush(stdout);
    return 0;
}

static quiche_config *make_config(const char *cert, const char *key) {
    quiche_config *config = quiche_config_new(QUICHE_PROTOCOL_VERSION);
    if (config == NULL) {
        return NULL;
    }
    if (quiche_config_load_cert_chain_from_pem_file(config, cert) != 0 ||
        quiche_config_load_priv_key_from_pem_file(config, key) != 0) {
        fprintf(stderr, "cannot load %s and %s\n", cert, key);
        quiche_config_free(config);
        return NULL;
    }
    if (quiche_config_set_application_protos(config, (const uint8_t *) QUICHE_H3_APPLICATION_PROTOCOL,
                                             sizeof(QUICHE_H3_APPLICATION_PROTOCOL) - 1) != 0) {
        quiche_config_free(config);
        return NULL;
    }
    quiche_config_set_max_idle_timeout(config, 30000);
    quiche_config_set_max_recv_udp_payload_size(config, MAX_DATAGRAM);
    quiche_config_set_max_send_udp_payload_size(config, SEND_PAYLOAD);
    quiche_config_set_initial_max_data(config, 1024 * 1024);
    quiche_config_set_initial_max_stream_data_bidi_local(config, 256 * 1024);
    quiche_config_set_initial_max_stream_data_bidi_remote(config, 256 * 1024);
    quiche_config_set_initial_max_stream_data_uni(config, 256 * 1024);
    quiche_config_set_initial_max_streams_bidi(config, 100);
    quiche_config_set_initial_max_streams_uni(config, 100);
    quiche_config_set_disable_active_migration(config, true);
    if (getenv("SSLKEYLOGFILE") != NULL) {
        quiche_config_log_keys(config);
    }
    return config;
}

int main(int argc, char **argv) {
    static struct server srv;
    const char *cert = NULL, *key = NULL, *address = "127.0.0.1", *port = "4433";
    struct sigaction sa;
    int opt;

    while ((opt = getopt(argc, argv, "c:k:r:l:p:n:")) != -1) {
        switch (opt) {
        case 'c': cert = optarg; break;
        case 'k': key = optarg; break;
        case 'r': srv.root = optarg; break;
        case 'l': address = optarg; break;
        case 'p': port = optarg; break;
        case 'n': srv.max_connections = strtoul(optarg, NULL, 10); break;
        default: usage(); return 2;
        }
    }
    if (cert == NULL || key == NULL || srv.root == NULL || optind != argc) {
        usage();
        return 2;
    }
    if (getenv("QUICHE_DEBUG") != NULL) {
        quiche_enable_debug_logging(debug_log, NULL);
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    srv.config = make_config(cert, key);
    srv.h3_config = quiche_h3_config_new();
    if (srv.config == NULL || srv.h3_config == NULL) {
        return 1;
    }
    if (open_socket(&srv, address, port) != 0) {
        quiche_config_free(srv.config);
        quiche_h3_config_free(srv.h3_config);
        return 1;
    }
    run(&srv);
    while (srv.clients != NULL) {
        struct client *next = srv.clients->next;
        free_client(srv.clients);
        srv.clients = next;
    }
    quiche_config_free(srv.config);
    quiche_h3_config_free(srv.h3_config);
    close(srv.fd);
    return 0;
}
