//! Statistics of latency samples: an allocation-free log-linear histogram ([`histogram`]) and
//! the percentile summary computed from it ([`summary`]).

pub mod histogram;
pub mod summary;
