//! `quiche-client`: downloads URLs over HTTP/3 or HTTP/0.9 on QUIC. See `quiche-client --help`.

use std::process::ExitCode;

use quiche_apps::args;
use quiche_apps::client::{self, EXIT_FAILED, EXIT_OK};
use quiche_apps::setup;

fn exit(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn main() -> ExitCode {
    // Usage errors exit with status 2 (clap's), --help and --version with 0.
    let args = args::parse_client(std::env::args().skip(1)).unwrap_or_else(|e| e.exit());
    setup::init_logging();
    match client::run(&args) {
        Ok(summary) => {
            println!("{}", summary.line());
            exit(if summary.success {
                EXIT_OK
            } else {
                EXIT_FAILED
            })
        }
        Err(e) => {
            eprintln!("quiche-client: {e}");
            exit(e.exit_code())
        }
    }
}
