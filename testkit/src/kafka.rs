//! Reading a topic back to check what was published: from earliest, in a fresh consumer group, closed
//! explicitly off the async runtime with a timeout (never by watermarks).

use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// `(key, value)` of every record in `topic`, read until `enough` says so of the records so far
/// or `timeout` passed, then for one second more.
pub async fn read_topic(
    brokers: &str,
    topic: &str,
    enough: impl Fn(&[(String, String)]) -> bool + Send + 'static,
    timeout: Duration,
) -> Vec<(String, String)> {
    let (brokers, topic) = (brokers.to_string(), topic.to_string());
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &brokers)
            .set("group.id", crate::unique_name("fl-test-reader"))
            .set("group.protocol", "classic")
            .set("auto.offset.reset", "earliest")
            .set("enable.auto.commit", "false")
            .create()
            .expect("consumer");
        consumer.subscribe(&[&topic]).expect("subscribe");
        let deadline = Instant::now() + timeout;
        let mut records = Vec::new();
        while !enough(&records) && Instant::now() < deadline {
            if let Some(Ok(m)) = consumer.poll(Duration::from_millis(200)) {
                records.push(key_and_value(&m));
            }
        }
        // Read a little longer: a duplicate would show up here.
        let linger = Instant::now() + Duration::from_secs(1);
        while Instant::now() < linger {
            if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
                records.push(key_and_value(&m));
            }
        }
        consumer.unsubscribe();
        let _ = tx.send(records);
        drop(consumer);
    });
    tokio::time::timeout(timeout + Duration::from_secs(15), rx)
        .await
        .expect("the topic reader finished in time")
        .expect("the topic reader thread")
}

/// A record's key and payload as text.
fn key_and_value(m: &rdkafka::message::BorrowedMessage<'_>) -> (String, String) {
    let text = |bytes: Option<&[u8]>| {
        bytes
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    (text(m.key()), text(m.payload()))
}

/// How many records each key has.
pub fn count_by_key(records: &[(String, String)]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for (key, _) in records {
        *counts.entry(key.clone()).or_default() += 1;
    }
    counts
}
