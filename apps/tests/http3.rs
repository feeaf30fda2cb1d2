//! `quiche-server` and `quiche-client` speaking HTTP/3 over loopback UDP: downloads, HEAD,
//! missing files, uploads, extra headers, and HTTP/0.9 still served on the same port.

// These tests bound real processes by wall-clock deadlines, like the apps they test.
#![allow(clippy::disallowed_methods)]

use std::fs;

mod common;

use common::{client, client_args, data, describe, sha256, summary_field, Server, TempDir};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn http3_downloads_several_files_on_one_connection() {
    let dir = TempDir::new("h3-get");
    let mut total = 0;
    let mut bodies = Vec::new();
    for (i, len) in [0usize, 1, 1500, 100_000, 3 << 20].into_iter().enumerate() {
        let body = data(len, i as u64 + 40);
        total += len;
        fs::write(dir.root().join(format!("f{i}.bin")), &body).unwrap();
        bodies.push(body);
    }
    let server = Server::start(&dir, &["--no-retry"]);
    let urls = (0..bodies.len()).map(|i| server.url(&format!("/f{i}.bin")));
    let out = client(&client_args(Some(&dir.out()), urls));
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(summary_field(&out.stdout, "bytes"), total.to_string());
    for (i, body) in bodies.iter().enumerate() {
        let got = fs::read(dir.out().join(format!("f{i}.bin"))).unwrap();
        assert!(got == *body, "file {i} differs");
    }
    assert_eq!(server.log().matches("new connection from").count(), 1);
}

#[test]
fn http3_head_gets_no_body_and_missing_files_fail_with_404() {
    let dir = TempDir::new("h3-head");
    fs::write(dir.root().join("page.html"), b"<html></html>").unwrap();
    let server = Server::start(&dir, &["--no-retry"]);

    let mut args = client_args(None, [server.url("/page.html")]);
    args.extend(["--method".to_string(), "HEAD".to_string()]);
    let out = client(&args);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(summary_field(&out.stdout, "bytes"), "0");

    let out = client(&client_args(None, [server.url("/missing.bin")]));
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("status 404"), "{stderr}");
}

#[test]
fn http3_upload_is_answered_with_its_size_and_sha256() {
    let dir = TempDir::new("h3-post");
    let body = data(2 << 20, 77);
    let upload = dir.0.join("upload.bin");
    fs::write(&upload, &body).unwrap();
    let server = Server::start(&dir, &["--no-retry"]);

    let mut args = client_args(Some(&dir.out()), [server.url("/upload")]);
    args.extend([
        "--body".to_string(),
        upload.display().to_string(),
        "--header".to_string(),
        "X-Test: yes".to_string(),
    ]);
    let out = client(&args);
    assert!(out.status.success(), "{}", describe(&out));
    let answer = fs::read_to_string(dir.out().join("upload")).unwrap();
    assert_eq!(answer, format!("{} {}\n", body.len(), hex(&sha256(&body))));
    // Both directions' body bytes count.
    let bytes: usize = summary_field(&out.stdout, "bytes").parse().unwrap();
    assert_eq!(bytes, body.len() + answer.len());
}

#[test]
fn http09_is_still_served_on_the_same_port() {
    let dir = TempDir::new("h3-and-hq");
    let body = data(200_000, 5);
    fs::write(dir.root().join("x.bin"), &body).unwrap();
    let server = Server::start(&dir, &["--no-retry"]);
    let mut args = client_args(Some(&dir.out()), [server.url("/x.bin")]);
    args.push("--http09".into());
    let out = client(&args);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        sha256(&fs::read(dir.out().join("x.bin")).unwrap()),
        sha256(&body)
    );
}
