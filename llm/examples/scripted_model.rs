//! A scripted OpenAI-compatible model that answers any Firstline round, for measuring the model
//! path's plumbing (calls, tokens, latency) over many cases without a real model:
//!
//! ```sh
//! cargo run -p firstline-llm --features scripted --example scripted_model -- 127.0.0.1:8089 &
//! FIRSTLINE_LLM__BASE_URL=http://127.0.0.1:8089/v1 FIRSTLINE_LLM__MODEL=scripted \
//!   firstline eval lab/scenarios --no-db --model
//! ```
//!
//! An investigation step reads nothing more; the summary adds nothing; the verdict says post.
//! Usage reports the prompt at about four characters a token, so token counts follow what the
//! model path really sends. Stops on Ctrl-C.

use firstline_llm::scripted::{RecordedRequest, ScriptedReply, ScriptedServer};
use serde_json::json;

fn respond(request: &RecordedRequest) -> ScriptedReply {
    let prompt_chars: usize = request
        .messages()
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::len))
        .sum();
    let prompt_tokens = u32::try_from(prompt_chars / 4).unwrap_or(u32::MAX);
    let schema = request
        .response_format()
        .and_then(|f| f["json_schema"]["name"].as_str())
        .unwrap_or_default()
        .to_string();
    let reply = match schema.as_str() {
        "summarise" => ScriptedReply::json(&json!({"causes": [], "observations": []})),
        "judge" => ScriptedReply::json(&json!({
            "decision": "post", "questions": [], "confidence": "medium",
            "reason": "the deterministic cause stands"
        })),
        _ => ScriptedReply::text("Nothing more to read."),
    };
    reply.with_usage(prompt_tokens, 20)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8089".to_string());
    let server = ScriptedServer::responding(addr, Box::new(respond)).await?;
    eprintln!("scripted model at {}", server.base_url());
    tokio::signal::ctrl_c().await?;
    eprintln!("{} requests answered", server.request_count());
    Ok(())
}
