//! `GET /`: a plain HTML view of the stand-in's channels and threads, so a person running
//! `firstline dev` can watch what the bot did (refreshes every 2 s).

use super::StandInState;
use super::state::{Author, Message};
use axum::extract::State;
use axum::response::Html;

/// The page.
pub async fn page(State(state): State<StandInState>) -> Html<String> {
    let mut out = String::from(
        "<!doctype html><html><head><meta charset=utf-8><meta http-equiv=refresh content=2>\
         <title>Slack stand-in</title><style>body{font-family:sans-serif;max-width:60em;margin:1em auto}\
         .m{margin:.3em 0}.r{margin-left:2em;border-left:3px solid #ccc;padding-left:.5em}\
         .who{font-weight:bold}.ts{color:#888;font-size:.8em}pre{white-space:pre-wrap;margin:0}</style>\
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
    let reactions = if m.reactions.is_empty() {
        String::new()
    } else {
        format!(" [:{}:]", m.reactions.join(": :"))
    };
    out.push_str(&format!(
        "<div class='{class}'><span class=who>{}</span> <span class=ts>{}{}{}</span><pre>{}</pre></div>",
        escape(&who),
        escape(&m.ts),
        if m.edited { " (edited)" } else { "" },
        escape(&reactions),
        escape(&m.text)
    ));
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\'', "&#39;")
}
