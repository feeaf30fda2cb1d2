//! `early_data_reason` on each TLS backend of the build, in every case the pipe can produce:
//! BoringSSL's `ssl_early_data_reason_t` numbering, as quiche 0.30 reports it (BoringSSL's
//! `ssl.h`: 1 disabled, 2 accepted, 4 peer declined, 5 no session offered, 6 session not
//! resumed, 7 unsupported for session, 9 ALPN mismatch).

use std::time::Duration;

use super::cert_path;
use crate::testing::Pipe;
use crate::tls::TlsBackend;
use crate::Config;

#[cfg(feature = "boringssl-boring-crate")]
use crate::tls::early_data_reason::ALPN_MISMATCH;
use crate::tls::early_data_reason::{
    ACCEPTED, DISABLED, NO_SESSION_OFFERED, PEER_DECLINED, SESSION_NOT_RESUMED,
    UNSUPPORTED_FOR_SESSION,
};

fn config(backend: TlsBackend, early_data: bool) -> Config {
    let mut c = Config::with_tls_backend(crate::PROTOCOL_VERSION, backend).unwrap();
    c.set_application_protos(&[b"hq-interop"]).unwrap();
    c.set_initial_max_data(1 << 20);
    c.set_initial_max_stream_data_bidi_local(1 << 20);
    c.set_initial_max_stream_data_bidi_remote(1 << 20);
    c.set_initial_max_streams_bidi(10);
    if early_data {
        c.enable_early_data();
    }
    c
}

fn client(backend: TlsBackend, early_data: bool) -> Config {
    let mut c = config(backend, early_data);
    c.verify_peer(false);
    c
}

fn server(backend: TlsBackend, early_data: bool) -> Config {
    let mut c = config(backend, early_data);
    c.load_cert_chain_from_pem_file(&cert_path("cert.crt"))
        .unwrap();
    c.load_priv_key_from_pem_file(&cert_path("cert.key"))
        .unwrap();
    c
}

/// A handshake between the two configs, the client resuming `session` if given; returns the
/// pipe once both sides completed it.
fn handshake(client: &mut Config, server: &mut Config, session: Option<&[u8]>) -> Pipe {
    let mut pipe = Pipe::new(client, server).unwrap();
    if let Some(session) = session {
        pipe.client.set_session(session).unwrap();
    }
    pipe.handshake().unwrap();
    pipe
}

/// The client's session after a full handshake with `server`.
fn session(client: &mut Config, server: &mut Config) -> Vec<u8> {
    let mut pipe = handshake(client, server, None);
    pipe.run_until(Duration::from_secs(5), |p| p.client.session().is_some())
        .unwrap();
    pipe.client.session().unwrap().to_vec()
}

fn reasons(pipe: &Pipe) -> (u32, u32) {
    (
        pipe.client.early_data_reason(),
        pipe.server.early_data_reason(),
    )
}

#[test]
fn no_session_offered() {
    for &backend in TlsBackend::ALL {
        let pipe = handshake(&mut client(backend, true), &mut server(backend, true), None);
        assert!(!pipe.client.is_resumed());
        let want = (NO_SESSION_OFFERED, NO_SESSION_OFFERED);
        assert_eq!(reasons(&pipe), want, "{backend:?}");
    }
}

#[test]
fn disabled_on_either_side() {
    for &backend in TlsBackend::ALL {
        let pipe = handshake(
            &mut client(backend, false),
            &mut server(backend, false),
            None,
        );
        assert_eq!(reasons(&pipe), (DISABLED, DISABLED), "{backend:?}");
        // The server does not allow early data, the client offers no session: each says why
        // from its own side.
        let pipe = handshake(
            &mut client(backend, true),
            &mut server(backend, false),
            None,
        );
        assert_eq!(
            reasons(&pipe),
            (NO_SESSION_OFFERED, DISABLED),
            "{backend:?}"
        );
    }
}

#[test]
fn accepted() {
    for &backend in TlsBackend::ALL {
        let (mut c, mut s) = (client(backend, true), server(backend, true));
        let ticket = session(&mut c, &mut s);
        let mut pipe = Pipe::new(&mut c, &mut s).unwrap();
        pipe.client.set_session(&ticket).unwrap();
        let mut out = [0; 1500];
        pipe.client.send_at(&mut out, pipe.now).unwrap();
        assert!(pipe.client.is_in_early_data(), "{backend:?}");
        pipe.handshake().unwrap();
        assert_eq!(reasons(&pipe), (ACCEPTED, ACCEPTED), "{backend:?}");
    }
}

#[test]
fn session_not_resumed_by_a_server_that_cannot_read_the_ticket() {
    for &backend in TlsBackend::ALL {
        let (mut c, mut s) = (client(backend, true), server(backend, true));
        let ticket = session(&mut c, &mut s);
        // A restarted server: a new config with keys that know nothing of the ticket.
        let pipe = handshake(&mut c, &mut server(backend, true), Some(&ticket));
        assert!(!pipe.client.is_resumed(), "{backend:?}");
        let want = (SESSION_NOT_RESUMED, SESSION_NOT_RESUMED);
        assert_eq!(reasons(&pipe), want, "{backend:?}");
    }
}

#[test]
fn unsupported_for_a_session_issued_without_early_data() {
    for &backend in TlsBackend::ALL {
        // The ticket was issued by a server that did not allow early data.
        let (mut c, mut s) = (client(backend, true), server(backend, false));
        let ticket = session(&mut c, &mut s);
        let pipe = handshake(&mut c, &mut s, Some(&ticket));
        assert!(pipe.client.is_resumed(), "{backend:?}");
        let want = (UNSUPPORTED_FOR_SESSION, DISABLED);
        assert_eq!(reasons(&pipe), want, "{backend:?}");
    }
}

#[test]
fn another_alpn_than_the_tickets() {
    for &backend in TlsBackend::ALL {
        let (mut c, mut s) = (client(backend, true), server(backend, true));
        let ticket = session(&mut c, &mut s);
        // The server now prefers another protocol the client also offers: the session resumes,
        // early data is refused (RFC 8446 §4.2.10).
        s.set_application_protos(&[b"hq-next", b"hq-interop"])
            .unwrap();
        c.set_application_protos(&[b"hq-interop", b"hq-next"])
            .unwrap();
        let pipe = handshake(&mut c, &mut s, Some(&ticket));
        assert!(pipe.server.is_resumed(), "{backend:?}");
        // The client only sees the refusal; the server knows why, which BoringSSL names and
        // rustls does not tell (there it is the generic "declined").
        let server_reason = match backend {
            TlsBackend::Rustls => PEER_DECLINED,
            #[cfg(feature = "boringssl-boring-crate")]
            TlsBackend::BoringSsl => ALPN_MISMATCH,
        };
        assert_eq!(
            reasons(&pipe),
            (PEER_DECLINED, server_reason),
            "{backend:?}"
        );
    }
}
