// cpp_smoke.cpp: quiche.h from C++. It includes the header (which must declare everything
// with C linkage), builds a configuration and a client connection, and checks what the first
// datagram looks like. Exit status 0 on success.

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <quiche.h>

namespace {

struct ConfigDeleter {
    void operator()(quiche_config *c) const { quiche_config_free(c); }
};
struct ConnDeleter {
    void operator()(quiche_conn *c) const { quiche_conn_free(c); }
};

sockaddr_in loopback(uint16_t port) {
    sockaddr_in a;
    std::memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

}  // namespace

int main() {
    std::string version = quiche_version();
    std::unique_ptr<quiche_config, ConfigDeleter> config(quiche_config_new(QUICHE_PROTOCOL_VERSION));
    if (version.empty() || !config || !quiche_version_is_supported(QUICHE_PROTOCOL_VERSION)) {
        std::fprintf(stderr, "no configuration\n");
        return 1;
    }
    const std::string alpn = "\x0ahq-interop";
    if (quiche_config_set_application_protos(
            config.get(), reinterpret_cast<const uint8_t *>(alpn.data()), alpn.size()) != 0 ||
        quiche_config_set_cc_algorithm_name(config.get(), "cubic") != 0) {
        std::fprintf(stderr, "configuration refused\n");
        return 1;
    }
    quiche_config_set_cc_algorithm(config.get(), QUICHE_CC_RENO);
    quiche_config_verify_peer(config.get(), false);

    const sockaddr_in local = loopback(40001), peer = loopback(4433);
    const std::vector<uint8_t> scid(16, 0x42);
    std::unique_ptr<quiche_conn, ConnDeleter> conn(quiche_connect(
        "localhost", scid.data(), scid.size(), reinterpret_cast<const sockaddr *>(&local),
        sizeof(local), reinterpret_cast<const sockaddr *>(&peer), sizeof(peer), config.get()));
    if (!conn) {
        std::fprintf(stderr, "quiche_connect failed\n");
        return 1;
    }

    std::vector<uint8_t> out(1500);
    quiche_send_info info;
    const ssize_t n = quiche_conn_send(conn.get(), out.data(), out.size(), &info);
    uint8_t type = 0;
    uint32_t pkt_version = 0;
    uint8_t s[QUICHE_MAX_CONN_ID_LEN], d[QUICHE_MAX_CONN_ID_LEN], token[64];
    size_t s_len = sizeof(s), d_len = sizeof(d), token_len = sizeof(token);
    if (n < QUICHE_MIN_CLIENT_INITIAL_LEN ||
        quiche_header_info(out.data(), static_cast<size_t>(n), 16, &pkt_version, &type, s, &s_len,
                           d, &d_len, token, &token_len) != 0 ||
        type != 1 || pkt_version != QUICHE_PROTOCOL_VERSION ||
        std::vector<uint8_t>(s, s + s_len) != scid) {
        std::fprintf(stderr, "unexpected first datagram (%zd bytes)\n", n);
        return 1;
    }

    quiche_stats stats;
    quiche_conn_stats(conn.get(), &stats);
    std::printf("cpp_smoke: quiche %s, first datagram %zd bytes, %zu packet(s) sent\n",
                version.c_str(), n, stats.sent);
    return stats.sent == 1 ? 0 : 1;
}
