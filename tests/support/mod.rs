//! Harnesses shared by the workspace's end-to-end tests.

pub mod round_app;
