//! `GET /`: a plain HTML view of the stand-in's channels and threads, so a person running
//! `firstline dev` can watch what the bot did (refreshes every 2 s). Block Kit messages show their
//! headers, sections, fields and context rather than only the fallback text; legacy attachments
//! show under the message; reactions show with who added them; metadata shows its `event_type`.

use super::StandInState;
use super::state::{Author, Message};
use axum::extract::State;
use axum::response::Html;
use serde_json::Value;

/// The page.
pub async fn page(State(state): State<StandInState>) -> Html<String> {
    let mut out = String::from(
        "<!doctype html><html><head><meta charset=utf-8><meta http-equiv=refresh content=2>\
         <title>Slack stand-in</title><style>body{font-family:sans-serif;max-width:60em;margin:1em auto}\
         .m{margin:.3em 0}.r{margin-left:2em;border-left:3px solid #ccc;padding-left:.5em}\
         .who{font-weight:bold}.ts{color:#888;font-size:.8em}pre{white-space:pre-wrap;margin:0}\
         .h{font-weight:bold;font-size:1.1em}.c{color:#666;font-size:.85em}.b{margin:.2em 0}\
         .a{margin:.2em 0 .2em 1em;border-left:4px solid #ddd;padding-left:.5em}.t{font-weight:bold}</style>\
         </head><body><h1>Slack stand-in</h1>",
    );
    for (id, name, messages) in state.workspace.channels() {
        out.push_str(&format!(
            "<h2>#{} <span class=ts>{}</span></h2>",
            escape(&name),
            escape(&id)
        ));
        for parent in messages
            .iter()
            .filter(|m| m.thread_ts.as_ref().is_none_or(|t| *t == m.ts))
        {
            render(&mut out, parent, "m");
            for reply in messages
                .iter()
                .filter(|m| m.thread_ts.as_deref() == Some(parent.ts.as_str()) && m.ts != parent.ts)
            {
                render(&mut out, reply, "m r");
            }
        }
    }
    out.push_str("</body></html>");
    Html(out)
}

fn render(out: &mut String, m: &Message, class: &str) {
    let who = match &m.author {
        Author::User { user } => user.clone(),
        Author::Bot { username, .. } => format!("{username} (bot)"),
    };
    let mut reactions = String::new();
    for r in &m.reactions {
        reactions.push_str(&format!(" :{}: by {}", r.name, r.user));
    }
    let metadata = m
        .metadata
        .as_ref()
        .and_then(|meta| meta.get("event_type"))
        .and_then(Value::as_str)
        .map(|t| format!(" [metadata: {t}]"))
        .unwrap_or_default();
    let body = m
        .blocks
        .as_ref()
        .and_then(Value::as_array)
        .map(|blocks| render_blocks(blocks))
        .filter(|html| !html.is_empty())
        .unwrap_or_else(|| format!("<pre>{}</pre>", escape(&m.text)));
    let attachments = m
        .attachments
        .as_ref()
        .and_then(Value::as_array)
        .map(|attachments| render_attachments(attachments))
        .unwrap_or_default();
    out.push_str(&format!(
        "<div class='{class}'><span class=who>{}</span> <span class=ts>{}{}{}{}</span>{}{}</div>",
        escape(&who),
        escape(&m.ts),
        if m.edited { " (edited)" } else { "" },
        escape(&reactions),
        escape(&metadata),
        body,
        attachments
    ));
}

/// Legacy attachments as HTML: pretext, title in bold, text, then fields as `title: value`; the
/// fallback only for an attachment with none of those.
fn render_attachments(attachments: &[Value]) -> String {
    let mut out = String::new();
    for attachment in attachments {
        let part = |key: &str| {
            attachment
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(escape)
        };
        let mut inner = String::new();
        if let Some(pretext) = part("pretext") {
            inner.push_str(&format!("<pre class=b>{pretext}</pre>"));
        }
        if let Some(title) = part("title") {
            inner.push_str(&format!("<div class='b t'>{title}</div>"));
        }
        if let Some(text) = part("text") {
            inner.push_str(&format!("<pre class=b>{text}</pre>"));
        }
        for field in attachment
            .get("fields")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let get = |key: &str| {
                field
                    .get(key)
                    .and_then(Value::as_str)
                    .map(escape)
                    .unwrap_or_default()
            };
            inner.push_str(&format!(
                "<pre class=b><span class=t>{}</span>: {}</pre>",
                get("title"),
                get("value")
            ));
        }
        if inner.is_empty()
            && let Some(fallback) = part("fallback")
        {
            inner.push_str(&format!("<pre class=b>{fallback}</pre>"));
        }
        out.push_str(&format!("<div class=a>{inner}</div>"));
    }
    out
}

/// Block Kit as HTML: headers bold, sections (text and fields) as text, context small, dividers
/// as rules; other block types are named.
fn render_blocks(blocks: &[Value]) -> String {
    let text = |v: &Value| {
        v.get("text")
            .and_then(Value::as_str)
            .map(escape)
            .unwrap_or_default()
    };
    let mut out = String::new();
    for block in blocks {
        match block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "header" => {
                let t = block.get("text").map(text).unwrap_or_default();
                out.push_str(&format!("<div class='b h'>{t}</div>"));
            }
            "section" => {
                if let Some(t) = block.get("text").map(text) {
                    out.push_str(&format!("<pre class=b>{t}</pre>"));
                }
                for field in block
                    .get("fields")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    out.push_str(&format!("<pre class=b>{}</pre>", text(field)));
                }
            }
            "context" => {
                let parts: Vec<String> = block
                    .get("elements")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(text)
                    .filter(|t| !t.is_empty())
                    .collect();
                out.push_str(&format!("<div class='b c'>{}</div>", parts.join(" · ")));
            }
            "divider" => out.push_str("<hr>"),
            other => out.push_str(&format!("<div class='b c'>[{} block]</div>", escape(other))),
        }
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\'', "&#39;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_render_readably_and_escaped() {
        let html = render_blocks(&[
            json!({"type": "header", "text": {"type": "plain_text", "text": "Checkout <down>"}}),
            json!({"type": "section", "text": {"type": "mrkdwn", "text": "*Cause*: OOMKilled"},
                   "fields": [{"type": "mrkdwn", "text": "ns: shop"}]}),
            json!({"type": "divider"}),
            json!({"type": "context", "elements": [{"type": "mrkdwn", "text": "E1"}, {"type": "mrkdwn", "text": "E2"}]}),
            json!({"type": "actions", "elements": []}),
        ]);
        assert!(
            html.contains("<div class='b h'>Checkout &lt;down&gt;</div>"),
            "{html}"
        );
        assert!(html.contains("*Cause*: OOMKilled") && html.contains("ns: shop"));
        assert!(
            html.contains("<hr>") && html.contains("E1 · E2") && html.contains("[actions block]")
        );
    }

    #[test]
    fn attachments_render_their_parts_and_the_fallback_only_alone() {
        let html = render_attachments(&[
            json!({"pretext": "Grafana", "title": "[FIRING:1] HighLatency <checkout>",
                   "text": "p99 > 2s", "fields": [{"title": "namespace", "value": "shop"}],
                   "fallback": "not shown", "color": "danger"}),
            json!({"fallback": "[RESOLVED] DiskFull"}),
        ]);
        assert!(
            html.contains("<div class='b t'>[FIRING:1] HighLatency &lt;checkout&gt;</div>"),
            "{html}"
        );
        assert!(html.contains("Grafana") && html.contains("p99 &gt; 2s"));
        assert!(html.contains("<span class=t>namespace</span>: shop"));
        assert!(!html.contains("not shown") && html.contains("[RESOLVED] DiskFull"));
    }
}
