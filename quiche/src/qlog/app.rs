//! The trace's door for the layers above the transport (HTTP/3, an application's own events).
//!
//! [`crate::Connection::app_qlog`] hands out an [`AppQlog`] only while a trace is being
//! written, stamped with the connection's clock (the `now` of the last `recv`/`send`/
//! `on_timeout` call: the layers above the transport are never handed a time), so their events
//! fall in order between the transport's. This module knows nothing of those layers: they build
//! their events themselves (HTTP/3's are in `h3/qlog/`) and keep what they need to remember
//! between events in [`AppQlog::state`], which lives as long as the trace.

use std::any::Any;
use std::time::Instant;

use ::qlog::events::EventData;

use super::QlogLogger;

/// The connection's qlog trace, for events of the layers above the transport, timed with the
/// connection's clock. See the module documentation.
pub struct AppQlog<'a> {
    logger: &'a mut QlogLogger,
    now: Option<Instant>,
}

impl QlogLogger {
    /// A handle for events of the layers above the transport, stamped `now` (when `None`: the
    /// time of the last event); `None` once the trace is switched off.
    pub fn app(&mut self, now: Option<Instant>) -> Option<AppQlog<'_>> {
        self.is_enabled().then_some(AppQlog { logger: self, now })
    }
}

impl AppQlog<'_> {
    /// Appends any event (an application's own, say) at the connection's time.
    pub fn event(&mut self, data: EventData) {
        let now = self.now.unwrap_or(self.logger.start);
        self.logger.write_event(now, data);
    }

    /// The state of type `T` a layer keeps with this trace (to log only what changed, say),
    /// created with `T::default()` on first use; one per trace, of the type last asked for.
    pub fn state<T: Any + Default + Send + Sync>(&mut self) -> &mut T {
        let slot = &mut self.logger.app_state;
        if !slot.as_ref().is_some_and(|s| s.is::<T>()) {
            *slot = Some(Box::new(T::default()));
        }
        slot.as_mut()
            .and_then(|s| s.downcast_mut::<T>())
            .expect("the state was just set to a T")
    }
}
