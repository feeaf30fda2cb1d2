//! What the application asks of a path beyond data: an ack-eliciting packet (a liveness check,
//! or to learn the RTT on an idle connection) and the size of the burst it may send on it.

use std::net::SocketAddr;

use super::Connection;
use crate::buffers::BufFactory;
use crate::error::{Error, Result};

impl<F: BufFactory> Connection<F> {
    /// Makes the next packet sent on the active path ack-eliciting: if it would carry no
    /// ack-eliciting frame, a PING goes in it (RFC 9000 §19.2). Calling it again before
    /// [`send`](Self::send) changes nothing; on a closing or draining connection it does
    /// nothing.
    pub fn send_ack_eliciting(&mut self) -> Result<()> {
        if self.lifecycle.is_closing_or_draining() || self.lifecycle.is_closed() {
            return Ok(());
        }
        self.paths.active_mut().request_ack_eliciting();
        Ok(())
    }

    /// [`send_ack_eliciting`](Self::send_ack_eliciting) on the path between `local` and
    /// `peer`; [`Error::InvalidState`] if the connection has no such path. On a path other
    /// than the active one the PING goes in a probe packet, which
    /// [`send_on_path`](Self::send_on_path) (or `send`) writes.
    pub fn send_ack_eliciting_on_path(
        &mut self,
        local: SocketAddr,
        peer: SocketAddr,
    ) -> Result<()> {
        if self.lifecycle.is_closing_or_draining() || self.lifecycle.is_closed() {
            return Ok(());
        }
        let id = self.paths.find(local, peer).ok_or(Error::InvalidState)?;
        if let Some(path) = self.paths.get_mut(id) {
            path.request_ack_eliciting();
        }
        Ok(())
    }

    /// The send quantum ([`send_quantum`](Self::send_quantum)) of the path between
    /// `local_addr` and `peer_addr`: the active path's, one datagram on another path (only
    /// probes go there until the connection migrates to it), 0 for a path the connection does
    /// not have.
    pub fn send_quantum_on_path(&self, local_addr: SocketAddr, peer_addr: SocketAddr) -> usize {
        match self.paths.find(local_addr, peer_addr) {
            Some(id) if id == self.paths.active_id() => self.send_quantum(),
            Some(_) => self.sender().max_datagram_size(),
            None => 0,
        }
    }
}
