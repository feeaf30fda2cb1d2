//! What a client's streams become when the server rejects 0-RTT (RFC 9001 §4.6.2).
//!
//! The application wrote under the remembered transport parameters; the server saw none of it
//! and its new parameters may be lower (RFC 9000 §7.4.1 binds the server only when it accepts).
//! Data that fits the new limits is kept and sent again in 1-RTT, as quiche's API has no way
//! to tell the application to write it again. A stream beyond the new limits is given up: reset
//! with final size 0 if the peer may know its ID, forgotten if even its ID is beyond the new
//! stream limit (mentioning it in any frame would be a STREAM_LIMIT_ERROR, §4.6).

use crate::error::Result;
use crate::stream::control::CtlKey;
use crate::stream::{dir_index, is_bidi, PeerParams, StreamMap};

/// Application error code of the RESET_STREAM of a stream that the new limits leave no room
/// for: the peer never saw any of its data.
pub(crate) const ZERO_RTT_REJECTED_RESET_CODE: u64 = 0;

impl StreamMap {
    /// Applies the transport parameters of a server that rejected 0-RTT in place of the
    /// remembered ones, lower values included, and decides the fate of each stream we opened
    /// (see the module documentation). Returns the bytes still to be sent over all streams,
    /// which the connection counts against the new `initial_max_data` (`max_data`).
    /// `InvalidTransportParam` if a stream count exceeds 2^60 (§4.6).
    pub fn on_zero_rtt_rejected(
        &mut self,
        initial_max_stream_data_bidi_local: u64,
        initial_max_stream_data_bidi_remote: u64,
        initial_max_stream_data_uni: u64,
        initial_max_streams_bidi: u64,
        initial_max_streams_uni: u64,
        max_data: u64,
    ) -> Result<u64> {
        let credit = PeerParams {
            bidi_local: initial_max_stream_data_bidi_local,
            bidi_remote: initial_max_stream_data_bidi_remote,
            uni: initial_max_stream_data_uni,
        };
        self.take_peer_limits(
            credit,
            [initial_max_streams_bidi, initial_max_streams_uni],
            true,
        )?;
        let mut ids: Vec<u64> = self
            .streams
            .keys()
            .copied()
            .filter(|&id| self.is_local(id))
            .collect();
        // Lower IDs were opened first: they keep their data when the connection window is short.
        ids.sort_unstable();
        let mut kept = 0u64;
        for id in ids {
            if id >> 2 >= self.dirs[dir_index(is_bidi(id))].peer_max_streams {
                self.collect(id);
                continue;
            }
            let window = self.peer_send_window(id);
            let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
                continue;
            };
            match send.on_zero_rtt_rejected(window, max_data.saturating_sub(kept)) {
                Some(written) => kept = kept.saturating_add(written),
                None => {
                    if send.reset(ZERO_RTT_REJECTED_RESET_CODE).is_some() {
                        self.queue_control(CtlKey::Reset(id));
                    }
                }
            }
            self.refresh(id);
        }
        Ok(kept)
    }
}
