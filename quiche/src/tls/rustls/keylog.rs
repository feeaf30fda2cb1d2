//! rustls's key log hook, fed into the connection's own key log.

use rustls::KeyLog;

use crate::tls::keylog::ConnKeyLog;

impl KeyLog for ConnKeyLog {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        self.log_secret(label, client_random, secret);
    }

    fn will_log(&self, _label: &str) -> bool {
        true
    }
}
