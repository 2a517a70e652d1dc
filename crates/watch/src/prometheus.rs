//! The `/metrics` endpoint of `nodelay watch --prometheus ADDR` (to be written).
