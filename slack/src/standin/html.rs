//! `GET /`: a plain HTML view of the stand-in's channels and threads, so a person running
//! `firstline dev` can watch what the bot did (refreshes every 2 s while nothing is being
//! typed). Block Kit messages show their headers, sections, fields and context rather than only
//! the fallback text, and their inputs work: buttons, selects and text inputs send the bot a
//! signed `block_actions` interaction as Slack would (`POST /ui/act`), and every thread has a
//! reply box (`POST /ui/say`) — all as the on-call person, who also sees the ephemeral messages
//! shown to them in a thread. Legacy attachments show under the message; reactions show with who
//! added them; metadata shows its `event_type`.

use super::StandInState;
use super::state::{Author, Message, ONCALL_USER};
use axum::Form;
use axum::extract::State;
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::{Value, json};

/// `POST /ui/say`: the on-call person replies in a thread.
#[derive(Debug, Deserialize)]
pub struct Say {
    channel: String,
    thread_ts: String,
    text: String,
}

pub async fn say(State(state): State<StandInState>, Form(form): Form<Say>) -> Redirect {
    if !form.text.trim().is_empty() {
        state.say(
            &form.channel,
            ONCALL_USER,
            &form.text,
            Some(&form.thread_ts),
        );
    }
    Redirect::to("/")
}

/// `POST /ui/act`: the on-call person clicks a button, picks an option or submits an input.
#[derive(Debug, Deserialize)]
pub struct Act {
    channel: String,
    ts: String,
    block_id: String,
    action_id: String,
    /// `button`, `static_select` or `plain_text_input`.
    kind: String,
    value: String,
}

pub async fn act(State(state): State<StandInState>, Form(form): Form<Act>) -> Response {
    let value_key = if form.kind == "static_select" {
        json!({"selected_option": {"value": form.value,
               "text": {"type": "plain_text", "text": form.value}}})
    } else {
        json!({"value": form.value})
    };
    let mut action = json!({"type": form.kind, "block_id": form.block_id,
                            "action_id": form.action_id});
    if let (Some(action), Some(extra)) = (action.as_object_mut(), value_key.as_object()) {
        action.extend(extra.clone());
    }
    match state
        .act(&form.channel, ONCALL_USER, &form.ts, action)
        .await
    {
        Ok(_) => Redirect::to("/").into_response(),
        Err(e) => (
            axum::http::StatusCode::BAD_GATEWAY,
            format!("the bot did not take it: {e}"),
        )
            .into_response(),
    }
}

/// The page.
pub async fn page(State(state): State<StandInState>) -> Html<String> {
    let mut out = String::from(
        "<!doctype html><html><head><meta charset=utf-8>\
         <script>setInterval(()=>{const a=document.activeElement;\
         if(!a||!['INPUT','SELECT','TEXTAREA'].includes(a.tagName))location.reload()},2000)</script>\
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
            render(&mut out, &id, parent, "m");
            for reply in messages
                .iter()
                .filter(|m| m.thread_ts.as_deref() == Some(parent.ts.as_str()) && m.ts != parent.ts)
            {
                render(&mut out, &id, reply, "m r");
            }
            // What the bot showed the on-call person alone in this thread (why a click changed
            // nothing).
            for shown in
                state.workspace.ephemerals(ONCALL_USER).iter().filter(|e| {
                    e.channel == id && e.thread_ts.as_deref() == Some(parent.ts.as_str())
                })
            {
                out.push_str(&format!(
                    "<div class='m r c'>Only visible to you: {}</div>",
                    escape(&shown.text)
                ));
            }
            out.push_str(&format!(
                "<form class='m r' method=post action=/ui/say>\
                 <input type=hidden name=channel value='{}'><input type=hidden name=thread_ts value='{}'>\
                 <input name=text size=60 placeholder='Reply in the thread as {ONCALL_USER}'>\
                 <button>Reply</button></form>",
                escape(&id),
                escape(&parent.ts)
            ));
        }
    }
    out.push_str("</body></html>");
    Html(out)
}

fn render(out: &mut String, channel: &str, m: &Message, class: &str) {
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
        .map(|blocks| render_blocks(blocks, channel, &m.ts))
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

/// A form that sends `action_id` of `block_id` on message `ts` with `value` (or the field named
/// `value` inside `inner`).
fn action_form(channel: &str, ts: &str, block: &Value, element: &Value, inner: &str) -> String {
    let field = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .map(escape)
            .unwrap_or_default()
    };
    format!(
        "<form style=display:inline method=post action=/ui/act>\
         <input type=hidden name=channel value='{}'><input type=hidden name=ts value='{}'>\
         <input type=hidden name=block_id value='{}'><input type=hidden name=action_id value='{}'>\
         <input type=hidden name=kind value='{}'>{inner}</form> ",
        escape(channel),
        escape(ts),
        field(block, "block_id"),
        field(element, "action_id"),
        field(element, "type"),
    )
}

/// An input element as a working HTML control: a button, a select, a text box.
fn render_element(channel: &str, ts: &str, block: &Value, element: &Value) -> String {
    let label = |v: &Value| {
        v.pointer("/text/text")
            .or_else(|| v.pointer("/placeholder/text"))
            .and_then(Value::as_str)
            .map(escape)
            .unwrap_or_default()
    };
    match element
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "button" => {
            let value = element
                .get("value")
                .and_then(Value::as_str)
                .map(escape)
                .unwrap_or_default();
            let inner = format!(
                "<button name=value value='{value}'>{}</button>",
                label(element)
            );
            action_form(channel, ts, block, element, &inner)
        }
        "static_select" => {
            let options: String = element
                .get("options")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|o| {
                    let value = o
                        .get("value")
                        .and_then(Value::as_str)
                        .map(escape)
                        .unwrap_or_default();
                    format!("<option value='{value}'>{}</option>", label(o))
                })
                .collect();
            let inner = format!("<select name=value>{options}</select><button>Pick</button>");
            action_form(channel, ts, block, element, &inner)
        }
        "plain_text_input" => {
            let inner = format!(
                "<input name=value size=40 placeholder='{}'><button>Send</button>",
                label(element)
            );
            action_form(channel, ts, block, element, &inner)
        }
        other => format!("<span class=c>[{} element]</span>", escape(other)),
    }
}

/// Block Kit as HTML: headers bold, sections (text and fields) as text, context small, dividers
/// as rules, actions and inputs as working controls (on message `ts` in `channel`); other block
/// types are named.
fn render_blocks(blocks: &[Value], channel: &str, ts: &str) -> String {
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
            "actions" => {
                out.push_str("<div class=b>");
                for element in block
                    .get("elements")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    out.push_str(&render_element(channel, ts, block, element));
                }
                out.push_str("</div>");
            }
            "input" => {
                let label = block.get("label").map(text).unwrap_or_default();
                let element = block.get("element").cloned().unwrap_or(Value::Null);
                out.push_str(&format!(
                    "<div class=b><span class=c>{label}</span> {}</div>",
                    render_element(channel, ts, block, &element)
                ));
            }
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
        let html = render_blocks(
            &[
                json!({"type": "header", "text": {"type": "plain_text", "text": "Checkout <down>"}}),
                json!({"type": "section", "text": {"type": "mrkdwn", "text": "*Cause*: OOMKilled"},
                   "fields": [{"type": "mrkdwn", "text": "ns: shop"}]}),
                json!({"type": "divider"}),
                json!({"type": "context", "elements": [{"type": "mrkdwn", "text": "E1"}, {"type": "mrkdwn", "text": "E2"}]}),
                json!({"type": "actions", "block_id": "firstline.answer.1.0", "elements": [
                {"type": "button", "action_id": "answer_0", "value": "shop",
                 "text": {"type": "plain_text", "text": "shop"}}]}),
                json!({"type": "image"}),
            ],
            "C1",
            "1.0",
        );
        assert!(
            html.contains("<div class='b h'>Checkout &lt;down&gt;</div>"),
            "{html}"
        );
        assert!(html.contains("*Cause*: OOMKilled") && html.contains("ns: shop"));
        assert!(
            html.contains("<hr>") && html.contains("E1 · E2") && html.contains("[image block]")
        );
        // A button is a working form: it sends its block, action and value as the on-call person.
        assert!(
            html.contains("name=block_id value='firstline.answer.1.0'")
                && html.contains("name=action_id value='answer_0'")
                && html.contains("<button name=value value='shop'>shop</button>"),
            "{html}"
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
