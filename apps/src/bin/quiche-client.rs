//! `quiche-client`: downloads URLs over HTTP/0.9 on QUIC. See `quiche-client --help`.

use std::process::ExitCode;

use quiche_apps::args::{self, Command};
use quiche_apps::client::{self, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use quiche_apps::common;

fn exit(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn main() -> ExitCode {
    let args = match args::parse_client(std::env::args().skip(1)) {
        Ok(Command::Run(args)) => args,
        Ok(Command::Help) => {
            print!("{}", args::client_help());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("quiche-client: {e} (see --help)");
            return exit(EXIT_USAGE);
        }
    };
    common::init_logging();
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
