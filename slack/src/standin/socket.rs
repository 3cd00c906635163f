//! The Socket Mode websocket (`/socket`, the URL `apps.connections.open` returns): sends
//! `hello`, then wraps each event in an `events_api` envelope and each interaction
//! (`block_actions`) in an `interactive` one and each slash command in a `slash_commands` one; an envelope not acked within 3 s is sent again with
//! `retry_attempt` + 1 (up to 3 times), as Slack does.

use super::StandInState;
use super::delivery::Envelope;
use axum::extract::State;
use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

const ACK_DEADLINE: Duration = Duration::from_secs(3);
const RETRIES: u64 = 3;

/// `GET /socket`.
pub async fn upgrade(State(state): State<StandInState>, ws: WebSocketUpgrade) -> Response {
    ws.on_upgrade(move |socket| serve(state, socket))
}

async fn serve(state: StandInState, mut socket: WebSocket) {
    let (tx, mut rx) = mpsc::unbounded_channel::<Envelope>();
    state.deliverer.add_socket(tx);
    let hello = json!({"type": "hello", "num_connections": 1,
        "connection_info": {"app_id": super::state::APP_ID},
        "debug_info": {"host": "standin", "approximate_connection_time": 3600}});
    if socket
        .send(WsMessage::Text(hello.to_string().into()))
        .await
        .is_err()
    {
        return;
    }
    // envelope id → (payload, attempt, deadline)
    let mut unacked: HashMap<String, (Envelope, u64, Instant)> = HashMap::new();
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    loop {
        tokio::select! {
            _ = state.cancel.cancelled() => break,
            payload = rx.recv() => {
                let Some(payload) = payload else { break };
                let id = uuid::Uuid::new_v4().to_string();
                if send(&mut socket, &id, &payload, 0).await.is_err() { break; }
                unacked.insert(id, (payload, 0, Instant::now() + ACK_DEADLINE));
            }
            incoming = socket.recv() => match incoming {
                Some(Ok(WsMessage::Text(text))) => {
                    if let Ok(ack) = serde_json::from_str::<Value>(&text)
                        && let Some(id) = ack.get("envelope_id").and_then(Value::as_str)
                    {
                        unacked.remove(id);
                    }
                }
                Some(Ok(WsMessage::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            },
            _ = tick.tick() => {
                let now = Instant::now();
                let due: Vec<String> = unacked.iter().filter(|(_, (_, _, d))| *d <= now).map(|(k, _)| k.clone()).collect();
                for id in due {
                    if let Some((payload, attempt, _)) = unacked.remove(&id)
                        && attempt < RETRIES
                    {
                        if send(&mut socket, &id, &payload, attempt + 1).await.is_err() { return; }
                        unacked.insert(id, (payload, attempt + 1, now + ACK_DEADLINE));
                    }
                }
            }
        }
    }
}

async fn send(
    socket: &mut WebSocket,
    id: &str,
    payload: &Envelope,
    attempt: u64,
) -> Result<(), axum::Error> {
    let (kind, accepts_response) = payload.kind();
    let payload = payload.payload();
    let envelope = json!({
        "envelope_id": id, "type": kind, "accepts_response_payload": accepts_response,
        "retry_attempt": attempt, "retry_reason": if attempt > 0 { "timeout" } else { "" },
        "payload": payload,
    });
    socket
        .send(WsMessage::Text(envelope.to_string().into()))
        .await
}
