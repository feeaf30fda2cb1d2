//! Congestion control: the controller trait and the built-in algorithms.
