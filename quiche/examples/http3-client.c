/*
 * http3-client.c: downloads one file over HTTP/3 (ALPN "h3") with the quiche C API, a UDP
 * socket and poll(). No other dependency.
 *
 *   http3-client [-o FILE] (-c CA_FILE | -k) [-s SERVER_NAME] HOST PORT PATH
 *
 * The body goes to FILE (standard output by default). The exit status is 0 once the whole
 * body of a 2xx response arrived, 1 otherwise. SSLKEYLOGFILE names a file to append TLS
 * secrets to; QUICHE_DEBUG=1 prints the library's log on standard error.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <quiche.h>

/* The largest UDP payload there is: what a receive buffer must hold. */
#define MAX_DATAGRAM 65535
/* The UDP payload we send: fits the usual 1500-byte MTU with room for IPv6 and UDP headers. */
#define SEND_PAYLOAD 1350
#define CID_LEN 16
#define SOCKET_BUFFER (4 * 1024 * 1024)

struct client {
    int fd;
    struct sockaddr_storage local;
    socklen_t local_len;
    struct sockaddr_storage peer;
    socklen_t peer_len;
    quiche_conn *conn;
    quiche_h3_conn *h3;
    const char *host;
    const char *path;
    int64_t stream_id;
    int status;
    FILE *out;
    bool request_sent;
    bool complete;
    bool failed;
    uint64_t body_bytes;
    uint8_t buf[MAX_DATAGRAM];
};

static void debug_log(const char *line, void *argp) {
    (void) argp;
    fprintf(stderr, "%s\n", line);
}

static void usage(void) {
    fprintf(stderr, "usage: http3-client [-o FILE] (-c CA_FILE | -k) [-s SERVER_NAME] HOST PORT PATH\n");
}

static double seconds_since(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double) (now.tv_sec - start->tv_sec) + (double) (now.tv_nsec - start->tv_nsec) / 1e9;
}

/* Random bytes for connection IDs. */
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

/* A non-blocking UDP socket connected to HOST:PORT. */
static int open_socket(struct client *c, const char *host, const char *port) {
    struct addrinfo hints, *res, *ai;
    int rc, size = SOCKET_BUFFER;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "%s:%s: %s\n", host, port, gai_strerror(rc));
        return -1;
    }
    c->fd = -1;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) {
            continue;
        }
        if (fcntl(fd, F_SETFL, O_NONBLOCK) == 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            memcpy(&c->peer, ai->ai_addr, ai->ai_addrlen);
            c->peer_len = ai->ai_addrlen;
            c->fd = fd;
            break;
        }
        close(fd);
    }
    freeaddrinfo(res);
    if (c->fd < 0) {
        fprintf(stderr, "%s:%s: cannot connect a UDP socket\n", host, port);
        return -1;
    }
    /* Larger buffers absorb the bursts of a fast transfer; the kernel may cap them. */
    setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    c->local_len = sizeof(c->local);
    if (getsockname(c->fd, (struct sockaddr *) &c->local, &c->local_len) != 0) {
        perror("getsockname");
        return -1;
    }
    return 0;
}

static quiche_config *make_config(const char *ca_file, bool insecure) {
    quiche_config *config = quiche_config_new(QUICHE_PROTOCOL_VERSION);
    if (config == NULL) {
        fprintf(stderr, "quiche_config_new failed\n");
        return NULL;
    }
    if (quiche_config_set_application_protos(config, (const uint8_t *) QUICHE_H3_APPLICATION_PROTOCOL,
                                             sizeof(QUICHE_H3_APPLICATION_PROTOCOL) - 1) != 0) {
        fprintf(stderr, "cannot set the ALPN\n");
        quiche_config_free(config);
        return NULL;
    }
    if (insecure) {
        quiche_config_verify_peer(config, false);
    } else if (quiche_config_load_verify_locations_from_file(config, ca_file) != 0) {
        fprintf(stderr, "%s: cannot load CA certificates\n", ca_file);
        quiche_config_free(config);
        return NULL;
    }
    quiche_config_set_max_idle_timeout(config, 30000);
    quiche_config_set_max_recv_udp_payload_size(config, MAX_DATAGRAM);
    quiche_config_set_max_send_udp_payload_size(config, SEND_PAYLOAD);
    quiche_config_set_initial_max_data(config, 16 * 1024 * 1024);
    quiche_config_set_initial_max_stream_data_bidi_local(config, 4 * 1024 * 1024);
    quiche_config_set_initial_max_stream_data_bidi_remote(config, 4 * 1024 * 1024);
    quiche_config_set_initial_max_stream_data_uni(config, 1024 * 1024);
    quiche_config_set_initial_max_streams_bidi(config, 16);
    quiche_config_set_initial_max_streams_uni(config, 16);
    quiche_config_set_disable_active_migration(config, true);
    if (getenv("SSLKEYLOGFILE") != NULL) {
        quiche_config_log_keys(config);
    }
    return config;
}

/* Sends every datagram the connection has ready. */
static int flush_egress(struct client *c) {
    static uint8_t out[SEND_PAYLOAD];
    quiche_send_info info;

    for (;;) {
        ssize_t n = quiche_conn_send(c->conn, out, sizeof(out), &info);
        if (n == QUICHE_ERR_DONE) {
            return 0;
        }
        if (n < 0) {
            fprintf(stderr, "quiche_conn_send: %zd\n", n);
            return -1;
        }
        /* The socket is connected to info.to already. A full socket buffer drops the
         * datagram, which QUIC's loss recovery repairs like any other loss. */
        if (send(c->fd, out, (size_t) n, 0) < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            perror("send");
            return -1;
        }
    }
}

/* Hands every datagram waiting on the socket to the connection. */
static int read_datagrams(struct client *c) {
    for (;;) {
        struct sockaddr_storage from;
        socklen_t from_len = sizeof(from);
        quiche_recv_info info;
        ssize_t done, n;

        n = recvfrom(c->fd, c->buf, sizeof(c->buf), 0, (struct sockaddr *) &from, &from_len);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return 0;
            }
            if (errno == EINTR) {
                continue;
            }
            /* E.g. ECONNREFUSED from an ICMP error: the timers will give up in time. */
            return 0;
        }
        info.from = (struct sockaddr *) &from;
        info.from_len = from_len;
        info.to = (struct sockaddr *) &c->local;
        info.to_len = c->local_len;
        done = quiche_conn_recv(c->conn, c->buf, (size_t) n, &info);
        if (done < 0 && done != QUICHE_ERR_DONE) {
            fprintf(stderr, "quiche_conn_recv: %zd\n", done);
        }
    }
}

static quiche_h3_header make_header(const char *name, const char *value) {
    quiche_h3_header h;
    h.name = (const uint8_t *) name;
    h.name_len = strlen(name);
    h.value = (const uint8_t *) value;
    h.value_len = strlen(value);
    return h;
}

static void fail(struct client *c) {
    c->failed = true;
    quiche_conn_close(c->conn, true, 0x100, NULL, 0); /* H3_NO_ERROR */
}

/* Starts HTTP/3 and sends the GET request once the handshake is complete. */
static void send_request(struct client *c) {
    quiche_h3_header headers[5];
    quiche_h3_config *config;

    if (c->h3 == NULL) {
        config = quiche_h3_config_new();
        if (config == NULL) {
            fail(c);
            return;
        }
        c->h3 = quiche_h3_conn_new_with_transport(c->conn, config);
        quiche_h3_config_free(config);
        if (c->h3 == NULL) {
            fprintf(stderr, "cannot start HTTP/3\n");
            fail(c);
            return;
        }
    }
    headers[0] = make_header(":method", "GET");
    headers[1] = make_header(":scheme", "https");
    headers[2] = make_header(":authority", c->host);
    headers[3] = make_header(":path", c->path);
    headers[4] = make_header("user-agent", "quiche-rs-c");
    c->stream_id = quiche_h3_send_request(c->h3, c->conn, headers, 5, true);
    if (c->stream_id >= 0) {
        c->request_sent = true;
    } else if (c->stream_id != QUICHE_H3_ERR_STREAM_BLOCKED) {
        fprintf(stderr, "sending the request failed: %" PRId64 "\n", c->stream_id);
        fail(c);
    }
}

/* quiche_h3_event_for_each_header callback: keeps :status. */
static int on_header(uint8_t *name, size_t name_len, uint8_t *value, size_t value_len, void *argp) {
    struct client *c = argp;
    if (name_len == 7 && memcmp(name, ":status", 7) == 0 && value_len == 3) {
        int status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
        /* Interim (1xx) responses precede the final one. */
        if (status >= 200 || c->status == 0) {
            c->status = status;
        }
    }
    return 0;
}

/* Handles the response: status, body bytes into the output, the end of the stream. */
static void read_streams(struct client *c) {
    if (c->h3 == NULL) {
        return;
    }
    for (;;) {
        quiche_h3_event *ev = NULL;
        int64_t id = quiche_h3_conn_poll(c->h3, c->conn, &ev);
        if (id < 0) {
            if (id != QUICHE_H3_ERR_DONE) {
                fprintf(stderr, "HTTP/3 error %" PRId64 "\n", id);
                c->failed = true;
            }
            return;
        }
        switch (quiche_h3_event_type(ev)) {
        case QUICHE_H3_EVENT_HEADERS:
            quiche_h3_event_for_each_header(ev, on_header, c);
            break;
        case QUICHE_H3_EVENT_DATA:
            for (;;) {
                ssize_t n = quiche_h3_recv_body(c->h3, c->conn, (uint64_t) id, c->buf, sizeof(c->buf));
                if (n <= 0) {
                    break;
                }
                if (id == c->stream_id && fwrite(c->buf, 1, (size_t) n, c->out) != (size_t) n) {
                    perror("writing the body");
                    fail(c);
                    break;
                }
                c->body_bytes += (uint64_t) n;
            }
            break;
        case QUICHE_H3_EVENT_FINISHED:
            if (id == c->stream_id) {
                c->complete = c->status >= 200 && c->status < 300;
                if (!c->complete) {
                    fprintf(stderr, "the server answered with status %d\n", c->status);
                }
                quiche_conn_close(c->conn, true, 0x100, NULL, 0);
            }
            break;
        case QUICHE_H3_EVENT_RESET:
            if (id == c->stream_id) {
                fprintf(stderr, "the server reset the request\n");
                fail(c);
            }
            break;
        case QUICHE_H3_EVENT_GOAWAY:
        case QUICHE_H3_EVENT_PRIORITY_UPDATE:
            break;
        }
        quiche_h3_event_free(ev);
    }
}

/* The poll() timeout in milliseconds, rounded up so that the timer has expired on return. */
static int poll_timeout(const quiche_conn *conn) {
    uint64_t ns = quiche_conn_timeout_as_nanos(conn);
    uint64_t ms;
    if (ns == UINT64_MAX) {
        return -1;
    }
    ms = ns / 1000000 + (ns % 1000000 != 0);
    return ms > INT_MAX ? INT_MAX : (int) ms;
}

static int run(struct client *c) {
    while (!quiche_conn_is_closed(c->conn)) {
        struct pollfd pfd;
        int rc;

        if (flush_egress(c) != 0) {
            return -1;
        }
        if (quiche_conn_is_closed(c->conn)) {
            break;
        }
        pfd.fd = c->fd;
        pfd.events = POLLIN;
        pfd.revents = 0;
        rc = poll(&pfd, 1, poll_timeout(c->conn));
        if (rc < 0 && errno != EINTR) {
            perror("poll");
            return -1;
        }
        if (rc > 0) {
            read_datagrams(c);
        }
        if (quiche_conn_timeout_as_nanos(c->conn) == 0) {
            quiche_conn_on_timeout(c->conn);
        }
        if (quiche_conn_is_established(c->conn) && !c->request_sent && !c->failed) {
            send_request(c);
        }
        read_streams(c);
    }
    return 0;
}

static void report(const struct client *c, double secs) {
    bool is_app = false;
    uint64_t code = 0;
    const uint8_t *reason = NULL;
    size_t reason_len = 0;
    quiche_stats stats;

    quiche_conn_stats(c->conn, &stats);
    fprintf(stderr, "received %" PRIu64 " body bytes in %.3f s; packets sent=%zu recv=%zu lost=%zu\n",
            c->body_bytes, secs, stats.sent, stats.recv, stats.lost);
    if (quiche_conn_peer_error(c->conn, &is_app, &code, &reason, &reason_len)) {
        fprintf(stderr, "peer closed with %s error 0x%" PRIx64 " %.*s\n",
                is_app ? "application" : "transport", code, (int) reason_len,
                reason != NULL ? (const char *) reason : "");
    }
    if (quiche_conn_is_timed_out(c->conn)) {
        fprintf(stderr, "the connection timed out\n");
    }
}

int main(int argc, char **argv) {
    static struct client c;
    const char *out_path = NULL, *ca_file = NULL, *server_name = NULL;
    bool insecure = false;
    quiche_config *config;
    uint8_t scid[CID_LEN];
    struct timespec start;
    const char *keylog;
    int opt, status = 1;

    while ((opt = getopt(argc, argv, "o:c:ks:")) != -1) {
        switch (opt) {
        case 'o': out_path = optarg; break;
        case 'c': ca_file = optarg; break;
        case 'k': insecure = true; break;
        case 's': server_name = optarg; break;
        default: usage(); return 2;
        }
    }
    if (argc - optind != 3 || (ca_file == NULL) == !insecure) {
        usage();
        return 2;
    }
    if (server_name == NULL) {
        server_name = argv[optind];
    }
    c.host = server_name;
    c.path = argv[optind + 2];
    if (getenv("QUICHE_DEBUG") != NULL) {
        quiche_enable_debug_logging(debug_log, NULL);
    }
    if (open_socket(&c, argv[optind], argv[optind + 1]) != 0 || random_bytes(scid, sizeof(scid)) != 0) {
        return 1;
    }
    config = make_config(ca_file, insecure);
    if (config == NULL) {
        close(c.fd);
        return 1;
    }
    c.conn = quiche_connect(server_name, scid, sizeof(scid), (struct sockaddr *) &c.local,
                            c.local_len, (struct sockaddr *) &c.peer, c.peer_len, config);
    /* Connections keep what they need: the configuration can go now. */
    quiche_config_free(config);
    if (c.conn == NULL) {
        fprintf(stderr, "quiche_connect failed\n");
        close(c.fd);
        return 1;
    }
    keylog = getenv("SSLKEYLOGFILE");
    if (keylog != NULL && !quiche_conn_set_keylog_path(c.conn, keylog)) {
        fprintf(stderr, "%s: cannot log keys\n", keylog);
    }
    c.out = out_path != NULL ? fopen(out_path, "wb") : stdout;
    if (c.out == NULL) {
        perror(out_path);
    } else {
        clock_gettime(CLOCK_MONOTONIC, &start);
        if (run(&c) == 0 && c.complete && !c.failed) {
            status = 0;
        }
        report(&c, seconds_since(&start));
        if (fflush(c.out) != 0 || (c.out != stdout && fclose(c.out) != 0)) {
            perror("closing the output");
            status = 1;
        }
    }
    if (c.h3 != NULL) {
        quiche_h3_conn_free(c.h3);
    }
    quiche_conn_free(c.conn);
    close(c.fd);
    return status;
}
