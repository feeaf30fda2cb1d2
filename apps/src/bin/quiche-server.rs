//! `quiche-server`: serves files over HTTP/0.9 on QUIC. See `quiche-server --help`.

use std::io::Write;
use std::process::ExitCode;

use quiche_apps::args::{self, Command};
use quiche_apps::common;
use quiche_apps::server::Server;

fn main() -> ExitCode {
    let args = match args::parse_server(std::env::args().skip(1)) {
        Ok(Command::Run(args)) => args,
        Ok(Command::Help) => {
            print!("{}", args::server_help());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("quiche-server: {e} (see --help)");
            return ExitCode::from(2);
        }
    };
    common::init_logging();
    let mut server = match Server::new(&args) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("quiche-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Scripts and tests read the bound address (useful with port 0) from this line.
    println!("listening on {}", server.local_addr());
    let _ = std::io::stdout().flush();
    match server.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("quiche-server: {e}");
            ExitCode::FAILURE
        }
    }
}
