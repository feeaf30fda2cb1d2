//! One program written against quiche 0.30's public API, built either against quiche 0.30.0
//! (feature `upstream`) or against this repository's crate (feature `ours`). It runs a client
//! and a server over loopback UDP in one process and prints one `name: value` line per check.
//! Every printed value is meant to be the same for both builds: counts that legitimately differ
//! between two QUIC stacks (packets sent, exact RTTs) are printed as booleans. The script
//! `tools/compat/api-check.sh` builds both, runs both and diffs the outputs.
//!
//! Usage: `quiche-api-check CERT_DIR OUT_DIR` (certificates from quiche/tests/certs; the keylog
//! and qlog files are written in OUT_DIR).

// A program on real sockets: it reads the clock to bound its phases (the repository's
// clippy.toml keeps the clock out of the library core, not out of programs like this one).
#![allow(clippy::disallowed_methods)]

#[cfg(all(feature = "ours", feature = "upstream"))]
compile_error!("choose one of the features `ours` and `upstream`");
#[cfg(not(any(feature = "ours", feature = "upstream")))]
compile_error!("choose one of the features `ours` and `upstream`");

#[cfg(feature = "ours")]
use quiche_ours as quiche;
#[cfg(all(feature = "upstream", not(feature = "ours")))]
use quiche_upstream as quiche;

#[cfg(feature = "boringssl")]
mod boring;
mod calls;
mod extras;
mod h3check;
mod loopback;
mod transport;
mod zerocopy;

use std::path::PathBuf;

/// Where the checks print: one `name: value` line each, in a fixed order.
pub struct Report {
    lines: usize,
}

impl Report {
    /// Prints one check's result.
    pub fn line(&mut self, name: &str, value: impl std::fmt::Display) {
        println!("{name}: {value}");
        self.lines += 1;
    }
}

/// The files the checks read and write.
pub struct Paths {
    /// The directory holding cert.crt, cert.key and rootca.crt.
    pub certs: PathBuf,
    /// Where the keylog and qlog files go.
    pub out: PathBuf,
}

impl Paths {
    /// A certificate file's path as the `&str` quiche's loaders take.
    pub fn cert(&self, name: &str) -> String {
        self.certs.join(name).to_string_lossy().into_owned()
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(certs), Some(out)) = (args.next(), args.next()) else {
        eprintln!("usage: quiche-api-check CERT_DIR OUT_DIR");
        std::process::exit(2);
    };
    let paths = Paths {
        certs: certs.into(),
        out: out.into(),
    };
    let mut report = Report { lines: 0 };

    report.line(
        "version_is_supported(PROTOCOL_VERSION)",
        quiche::version_is_supported(quiche::PROTOCOL_VERSION),
    );
    report.line(
        "version_is_supported(0xbabababa)",
        quiche::version_is_supported(0xbaba_baba),
    );
    report.line("MAX_CONN_ID_LEN", quiche::MAX_CONN_ID_LEN);

    transport::run(&paths, &mut report);
    h3check::run(&paths, &mut report);
    zerocopy::run(&paths, &mut report);
    #[cfg(feature = "boringssl")]
    boring::run(&paths, &mut report);
    eprintln!("{} checks printed", report.lines);
}
