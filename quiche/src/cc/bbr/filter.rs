//! Windowed max filters for BBR's model (draft-ietf-ccwg-bbr-06 §5.5.5, §5.5.9): the best
//! value seen over the last `window` units of a virtual clock (ProbeBW cycles or round trips).
//!
//! Kathleen Nichols' three-sample scheme: the best, second-best and third-best values of
//! successively later sub-windows are kept, so that when the best ages out the next one is
//! already known. Constant memory, no allocation.

/// One filter sample: the value and the virtual time it was taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Sample {
    value: u64,
    time: u64,
}

/// A max filter over a window of virtual time.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct WindowedMax {
    s: [Sample; 3],
}

impl WindowedMax {
    /// The best value in the window.
    pub(crate) fn get(&self) -> u64 {
        self.s[0].value
    }

    /// Forgets everything and starts over from `value` at `time`.
    pub(crate) fn reset(&mut self, value: u64, time: u64) {
        self.s = [Sample { value, time }; 3];
    }

    /// Adds a sample taken at `time` (non-decreasing) to a filter of length `window`; returns
    /// the best value in the window.
    pub(crate) fn update(&mut self, value: u64, time: u64, window: u64) -> u64 {
        let new = Sample { value, time };
        if value >= self.s[0].value || time.saturating_sub(self.s[2].time) > window {
            // A new best, or nothing in the window: start over.
            self.reset(value, time);
            return value;
        }
        if value >= self.s[1].value {
            self.s[1] = new;
            self.s[2] = new;
        } else if value >= self.s[2].value {
            self.s[2] = new;
        }
        self.age(new, window)
    }

    /// Lets the best samples expire as the window slides.
    fn age(&mut self, new: Sample, window: u64) -> u64 {
        let dt = new.time.saturating_sub(self.s[0].time);
        if dt > window {
            // The best expired: promote the others, the newest fills in.
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = new;
            if new.time.saturating_sub(self.s[0].time) > window {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = new;
            }
        } else if self.s[1].time == self.s[0].time && dt > window / 4 {
            // A quarter of the window passed with no second-best: take one.
            self.s[1] = new;
            self.s[2] = new;
        } else if self.s[2].time == self.s[1].time && dt > window / 2 {
            // Half the window passed with no third-best: take one.
            self.s[2] = new;
        }
        self.s[0].value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_value_holds_for_the_window_then_expires() {
        let mut f = WindowedMax::default();
        assert_eq!(f.update(100, 0, 10), 100);
        assert_eq!(f.update(50, 3, 10), 100);
        assert_eq!(f.update(70, 6, 10), 100);
        assert_eq!(f.update(60, 10, 10), 100);
        // At time 11 the 100 taken at 0 is out of the window; a later second-best takes over.
        let v = f.update(40, 11, 10);
        assert!(v == 70 || v == 60, "{v}");
        assert!(v < 100);
        // Much later, only the newest sample is left.
        assert_eq!(f.update(10, 100, 10), 10);
        // A larger sample always wins at once.
        assert_eq!(f.update(500, 101, 10), 500);
    }

    #[test]
    fn a_window_of_one_keeps_the_current_and_previous_unit() {
        let mut f = WindowedMax::default();
        f.update(100, 0, 1);
        assert_eq!(f.update(30, 1, 1), 100);
        assert_eq!(f.update(20, 2, 1), 30);
    }
}
