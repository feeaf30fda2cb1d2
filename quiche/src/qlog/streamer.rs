//! quiche's `Connection::qlog_streamer`: a `qlog::streamer::QlogStreamer` through which the
//! application adds its own events to the connection's trace. Its records are held back and
//! written into the trace, in order, before the logger's next record (or at a flush); its
//! header record is dropped, the trace having one already. Its event times count from the
//! trace's start, like the connection's own.

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use ::qlog::events::EventImportance;
use ::qlog::streamer::QlogStreamer;
use ::qlog::{TraceSeq, VantagePoint, VantagePointType};

/// Bytes the streamer wrote that wait to join the trace.
#[derive(Clone, Default)]
struct Pending(Arc<Mutex<Vec<u8>>>);

impl Pending {
    fn lock(&self) -> MutexGuard<'_, Vec<u8>> {
        // A panic while the lock was held leaves only bytes behind: still usable.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Write for Pending {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The streamer and what it wrote.
pub(super) struct StreamerBridge {
    streamer: QlogStreamer,
    pending: Pending,
}

impl StreamerBridge {
    /// A started streamer timing events from `start`, keeping events of `level` and above.
    pub(super) fn new(start: Instant, level: EventImportance, ty: VantagePointType) -> Self {
        let pending = Pending::default();
        let trace = TraceSeq {
            vantage_point: VantagePoint {
                name: None,
                ty,
                flow: None,
            },
            title: None,
            description: None,
            configuration: None,
            common_fields: None,
        };
        let mut streamer = QlogStreamer::new(
            super::QLOG_VERSION.to_string(),
            None,
            None,
            None,
            start,
            trace,
            level,
            Box::new(pending.clone()),
        );
        // The header goes into `pending` and is dropped: the trace has its own.
        let _ = streamer.start_log();
        pending.lock().clear();
        StreamerBridge { streamer, pending }
    }

    pub(super) fn streamer(&mut self) -> &mut QlogStreamer {
        &mut self.streamer
    }

    /// Writes what the streamer wrote since the last call to `out`.
    pub(super) fn drain_into(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let mut pending = self.pending.lock();
        if pending.is_empty() {
            return Ok(());
        }
        let result = out.write_all(&pending);
        pending.clear();
        result
    }
}
