//! Paces `chat.postMessage` to about one per second per channel (Slack's documented rate), so a
//! burst of posts waits here instead of collecting 429s.

use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;

/// Per-channel spacing of posts.
#[derive(Debug)]
pub struct Pacer {
    interval: Duration,
    next: Mutex<HashMap<String, Instant>>,
}

impl Pacer {
    /// At most one post per `interval` per channel.
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            next: Mutex::new(HashMap::new()),
        }
    }

    /// Waits until `channel` may be posted to, and books the following slot.
    pub async fn wait(&self, channel: &str) {
        let slot = {
            let mut next = self.next.lock().await;
            let now = Instant::now();
            let slot = next
                .get(channel)
                .copied()
                .filter(|t| *t > now)
                .unwrap_or(now);
            next.insert(channel.to_string(), slot + self.interval);
            if next.len() > 10_000 {
                next.retain(|_, t| *t > now);
            }
            slot
        };
        tokio::time::sleep_until(slot).await;
    }

    /// Pushes `channel`'s next slot at least `delay` into the future (after a 429).
    pub async fn back_off(&self, channel: &str, delay: Duration) {
        let mut next = self.next.lock().await;
        let until = Instant::now() + delay;
        let entry = next.entry(channel.to_string()).or_insert(until);
        if *entry < until {
            *entry = until;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn posts_to_one_channel_are_spaced_and_channels_are_independent() {
        let pacer = Pacer::new(Duration::from_secs(1));
        let start = Instant::now();
        pacer.wait("C1").await;
        pacer.wait("C2").await;
        assert!(start.elapsed() < Duration::from_millis(10));
        pacer.wait("C1").await;
        assert!(start.elapsed() >= Duration::from_secs(1));
        pacer.wait("C1").await;
        assert!(start.elapsed() >= Duration::from_secs(2));
    }
}
