//! An independent check of our wire format: real first flights of a TLS 1.3 handshake, protected
//! into Initial and Handshake packets by our packet layer, plus a Retry and a Version
//! Negotiation packet, are written to a pcap and dissected by tshark with the key log.
//! Wireshark's QUIC dissector must decrypt every packet and report no malformed packet and no
//! expert error or warning.
//!
//! tshark is installed by `tools/test.sh`; without it this test fails rather than skipping.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use quiche::crypto::initial_keys;
use quiche::frame::encode_crypto_header;
use quiche::packet::{encrypt_pkt, Header};
use quiche::testing::pcap::PcapWriter;
use quiche::tls::{Handshake, HandshakeEvent, TlsConfig};
use quiche::transport_params::TransportParams;
use quiche::{ConnectionId, Type};

#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn certs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/certs")
}

/// Builds one protected long-header packet carrying `crypto` (at `offset`) into `out`,
/// padded to `pad_to` bytes in total. Returns its length.
#[allow(clippy::too_many_arguments)]
fn long_packet(
    ty: Type,
    dcid: &[u8],
    scid: &[u8],
    pn: u64,
    offset: u64,
    crypto: &[u8],
    pad_to: usize,
    keys: &quiche::tls::DirectionalKeys,
    out: &mut [u8],
) -> usize {
    let token = (ty == Type::Initial).then(Vec::new);
    let mut hdr = Header::new_long(
        ty,
        quiche::PROTOCOL_VERSION,
        ConnectionId::from_ref(dcid),
        ConnectionId::from_ref(scid),
        token,
    );
    hdr.pkt_num = pn;
    hdr.pkt_num_len = 2;
    let tag_len = keys.packet.tag_len();
    let (pn_offset, mut payload_len) = {
        let mut b = octets::OctetsMut::with_slice(out);
        let pn_offset = hdr.to_bytes(&mut b).unwrap();
        let start = b.off();
        encode_crypto_header(offset, crypto.len(), &mut b).unwrap();
        b.put_bytes(crypto).unwrap();
        (pn_offset, b.off() - start)
    };
    let hdr_len = pn_offset + 2;
    if hdr_len + payload_len + tag_len < pad_to {
        let pad = pad_to - (hdr_len + payload_len + tag_len);
        out[hdr_len + payload_len..hdr_len + payload_len + pad].fill(0);
        payload_len += pad;
    }
    encrypt_pkt(
        out,
        pn,
        pn_offset,
        2,
        payload_len,
        &*keys.header,
        &*keys.packet,
    )
    .unwrap()
}

fn drain(hs: &mut Handshake) -> Vec<HandshakeEvent> {
    let mut events = Vec::new();
    while let Some(ev) = hs.next_event().unwrap() {
        events.push(ev);
    }
    events
}

/// Our first flights, as a real handshake between our TLS adapter and our packet code builds
/// them, plus a Retry and a Version Negotiation packet: the capture (pcap bytes) and the key log
/// that decrypts it.
fn capture_flights() -> (Vec<u8>, Vec<u8>) {
    let client_addr: SocketAddr = "127.0.0.1:51000".parse().unwrap();
    let server_addr: SocketAddr = "127.0.0.1:443".parse().unwrap();
    let dcid = [0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08];
    let client_scid = [0xc1; 8];
    let server_scid = [0x5e; 8];
    let keylog = SharedBuf::default();

    let mut client_cfg = TlsConfig::new().unwrap();
    client_cfg.verify_peer(false);
    client_cfg.log_keys();
    client_cfg.set_application_protos(&[b"hq-interop"]).unwrap();
    // A ClientHello that fits one Initial packet (BoringSSL's default post-quantum key share
    // would make it two).
    client_cfg.set_curves_list("X25519").unwrap();
    let mut server_cfg = TlsConfig::new().unwrap();
    server_cfg
        .load_cert_chain_from_pem_file(certs().join("cert.crt").to_str().unwrap())
        .unwrap();
    server_cfg
        .load_priv_key_from_pem_file(certs().join("cert.key").to_str().unwrap())
        .unwrap();
    server_cfg.set_application_protos(&[b"hq-interop"]).unwrap();
    server_cfg.log_keys();

    let client_tp = TransportParams {
        initial_source_connection_id: Some(ConnectionId::from_vec(client_scid.to_vec())),
        initial_max_data: 1 << 20,
        ..TransportParams::default()
    };
    let server_tp = TransportParams {
        original_destination_connection_id: Some(ConnectionId::from_vec(dcid.to_vec())),
        initial_source_connection_id: Some(ConnectionId::from_vec(server_scid.to_vec())),
        initial_max_data: 1 << 20,
        ..TransportParams::default()
    };
    let mut client = Handshake::new_client(
        &mut client_cfg,
        Some("localhost"),
        client_tp.encode_to_vec(false).unwrap(),
    )
    .unwrap();
    client.set_keylog(Box::new(keylog.clone())).unwrap();
    let mut server =
        Handshake::new_server(&mut server_cfg, server_tp.encode_to_vec(true).unwrap()).unwrap();
    server.set_keylog(Box::new(keylog.clone())).unwrap();

    let mut pcap = PcapWriter::new(Vec::new()).unwrap();
    let mut buf = [0u8; 1500];

    // Client Initial: the ClientHello, padded to 1200 bytes.
    let (_, client_seal) = initial_keys(&dcid, false).unwrap();
    let client_hello = match drain(&mut client).remove(0) {
        HandshakeEvent::Data { data, .. } => data,
        other => panic!("expected ClientHello, got {other:?}"),
    };
    let n = long_packet(
        Type::Initial,
        &dcid,
        &client_scid,
        0,
        0,
        &client_hello,
        1200,
        &client_seal,
        &mut buf,
    );
    assert_eq!(n, 1200);
    pcap.write_datagram(Duration::ZERO, client_addr, server_addr, &buf[..n])
        .unwrap();

    // Server Initial (ServerHello) and Handshake (EncryptedExtensions ... Finished), coalesced.
    server
        .provide_data(quiche::packet::Epoch::Initial, &client_hello)
        .unwrap();
    let (_, server_seal) = initial_keys(&dcid, true).unwrap();
    let mut hs_keys = None;
    let mut initial_data = Vec::new();
    let mut handshake_data = Vec::new();
    for ev in drain(&mut server) {
        match ev {
            HandshakeEvent::Data {
                epoch: quiche::packet::Epoch::Initial,
                data,
            } => initial_data.extend(data),
            HandshakeEvent::Data { data, .. } => handshake_data.extend(data),
            HandshakeEvent::HandshakeKeys(keys) => hs_keys = Some(keys),
            HandshakeEvent::OneRttKeys { .. } => {}
        }
    }
    let hs_keys = hs_keys.expect("server derived Handshake keys");
    let mut datagram = Vec::new();
    let n = long_packet(
        Type::Initial,
        &client_scid,
        &server_scid,
        0,
        0,
        &initial_data,
        0,
        &server_seal,
        &mut buf,
    );
    datagram.extend_from_slice(&buf[..n]);
    let n = long_packet(
        Type::Handshake,
        &client_scid,
        &server_scid,
        0,
        0,
        &handshake_data,
        0,
        &hs_keys.local,
        &mut buf,
    );
    datagram.extend_from_slice(&buf[..n]);
    pcap.write_datagram(
        Duration::from_millis(10),
        server_addr,
        client_addr,
        &datagram,
    )
    .unwrap();

    // Retry and Version Negotiation, as a server would send them.
    let n = quiche::retry(
        &ConnectionId::from_ref(&client_scid),
        &ConnectionId::from_ref(&dcid),
        &ConnectionId::from_ref(&server_scid),
        b"an address validation token",
        quiche::PROTOCOL_VERSION,
        &mut buf,
    )
    .unwrap();
    pcap.write_datagram(
        Duration::from_millis(20),
        server_addr,
        client_addr,
        &buf[..n],
    )
    .unwrap();
    let n = quiche::negotiate_version(
        &ConnectionId::from_ref(&client_scid),
        &ConnectionId::from_ref(&dcid),
        &mut buf,
    )
    .unwrap();
    pcap.write_datagram(
        Duration::from_millis(30),
        server_addr,
        client_addr,
        &buf[..n],
    )
    .unwrap();

    let keys = keylog.0.lock().unwrap().clone();
    (pcap.into_inner().unwrap(), keys)
}

#[test]
fn tshark_dissects_our_packets_without_errors() {
    let (pcap, keylog) = capture_flights();
    let dir = std::env::temp_dir().join(format!("quiche-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap_path = dir.join("flights.pcap");
    let keylog_path = dir.join("keylog.txt");
    std::fs::write(&pcap_path, pcap).unwrap();
    std::fs::write(&keylog_path, keylog).unwrap();

    let tshark = |extra: &[&str]| -> String {
        let out = Command::new("tshark")
            .arg("-n")
            .arg("-r")
            .arg(&pcap_path)
            .arg("-o")
            .arg(format!("tls.keylog_file:{}", keylog_path.display()))
            .args(["-d", "udp.port==443,quic"])
            .args(extra)
            .output()
            .expect("tshark must be installed (tools/test.sh installs it)");
        assert!(out.status.success(), "tshark failed: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    let verbose = tshark(&["-V"]);
    assert!(
        !verbose.contains("Malformed"),
        "tshark found a malformed packet:\n{verbose}"
    );

    let expert = tshark(&["-q", "-z", "expert,warn"]);
    assert!(
        !expert.contains("Error") && !expert.contains("Warning"),
        "tshark reported expert errors or warnings:\n{expert}"
    );

    // What tshark decoded must be what we built: the packet types in order, both connection
    // IDs, and every TLS handshake message (so the Handshake packet was decrypted too).
    let fields = tshark(&[
        "-T",
        "fields",
        "-e",
        "quic.long.packet_type",
        "-e",
        "quic.dcid",
        "-e",
        "tls.handshake.type",
    ]);
    let lines: Vec<&str> = fields.lines().collect();
    assert_eq!(lines.len(), 4, "four datagrams:\n{fields}");
    assert!(
        lines[0].starts_with("0\t8394c8f03e515708\t1"),
        "{}",
        lines[0]
    );
    assert!(lines[1].starts_with("0,2\t"), "{}", lines[1]);
    assert!(lines[1].contains("c1c1c1c1c1c1c1c1"), "{}", lines[1]);
    for msg in ["2", "8", "11", "15", "20"] {
        assert!(
            lines[1]
                .split('\t')
                .nth(2)
                .is_some_and(|t| t.split(',').any(|m| m == msg)),
            "handshake message {msg} missing: {}",
            lines[1]
        );
    }
    assert!(lines[2].starts_with("3\t"), "Retry: {}", lines[2]);

    let retry_check = tshark(&["-V", "-Y", "quic.long.packet_type == 3"]);
    assert!(
        retry_check.contains("Retry Integrity Tag") && retry_check.contains("[verified]"),
        "retry tag:\n{retry_check}"
    );
    if std::env::var_os("KEEP_PCAP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
