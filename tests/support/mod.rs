//! Harnesses shared by the workspace's end-to-end tests.

pub mod paraphrases;
pub mod round_app;
pub mod tcp_front;
