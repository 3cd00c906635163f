//! Reading HolmesGPT's recorded tool calls (`*.txt` in `third_party/peer/holmesgpt/<case>/`).
//!
//! Each file is one call: line 1 a JSON header `{toolset_name, tool_name, match_params}`, line 2
//! a JSON status `{status, error, return_code, params, …}`, then the output. Most files put the
//! output between a `stdout:` line and a `stderr:` line; some have the bare output instead, and
//! failed calls may have a `Command … failed` line before `stdout:`. The lab's peer adapter
//! serves these as tool results; the detector tests read them as evidence.

use serde::Deserialize;

/// Why a recording could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error("recording is missing its {0} line")]
    MissingLine(&'static str),
    #[error("recording's {line} line is not valid JSON: {source}")]
    Json {
        line: &'static str,
        source: serde_json::Error,
    },
}

#[derive(Debug, Clone, Deserialize)]
struct Header {
    #[serde(default)]
    toolset_name: String,
    tool_name: String,
    #[serde(default)]
    match_params: serde_json::Value,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct Status {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    return_code: Option<i64>,
}

/// One recorded tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedToolCall {
    pub toolset_name: String,
    pub tool_name: String,
    /// The parameters their runner matches on; the adapter maps these onto our tool args.
    pub match_params: serde_json::Value,
    pub status: Option<String>,
    pub error: Option<String>,
    pub return_code: Option<i64>,
    /// Lines between the status line and `stdout:` (e.g. "Command … failed with return code 1").
    pub preamble: String,
    pub stdout: String,
    pub stderr: String,
}

impl RecordedToolCall {
    /// Parses the text of a recording.
    pub fn parse(text: &str) -> Result<Self, RecordingError> {
        let mut lines = text.split('\n');
        let header_line = lines.next().ok_or(RecordingError::MissingLine("header"))?;
        let status_line = lines.next().ok_or(RecordingError::MissingLine("status"))?;
        let header: Header =
            serde_json::from_str(header_line).map_err(|source| RecordingError::Json {
                line: "header",
                source,
            })?;
        let status: Status =
            serde_json::from_str(status_line).map_err(|source| RecordingError::Json {
                line: "status",
                source,
            })?;
        let rest: Vec<&str> = lines.collect();

        let stdout_marker = rest.iter().position(|l| l.trim_end() == "stdout:");
        let (preamble, stdout, stderr) = match stdout_marker {
            Some(start) => {
                let stderr_marker = rest
                    .iter()
                    .rposition(|l| l.trim_end() == "stderr:")
                    .filter(|&end| end > start);
                let end = stderr_marker.unwrap_or(rest.len());
                let stderr = stderr_marker.map_or(String::new(), |m| rest[m + 1..].join("\n"));
                (
                    rest[..start].join("\n"),
                    rest[start + 1..end].join("\n"),
                    stderr,
                )
            }
            None => (String::new(), rest.join("\n"), String::new()),
        };

        Ok(Self {
            toolset_name: header.toolset_name,
            tool_name: header.tool_name,
            match_params: header.match_params,
            status: status.status,
            error: status.error,
            return_code: status.return_code,
            preamble: preamble.trim().to_string(),
            stdout: stdout.trim_end().to_string(),
            stderr: stderr.trim().to_string(),
        })
    }

    /// True when the recorded call failed (their status says so, or the command exited non-zero).
    pub fn failed(&self) -> bool {
        self.status.as_deref() == Some("error")
            || self.return_code.is_some_and(|code| code != 0)
            || self.preamble.contains("failed with return code")
    }

    /// The text the tool returned: stdout when there is any, otherwise what it said on stderr
    /// (or before the markers) — for a failed `kubectl logs`, the reason it failed.
    pub fn output(&self) -> &str {
        [&self.stdout, &self.stderr, &self.preamble]
            .into_iter()
            .map(|s| s.as_str())
            .find(|s| !s.trim().is_empty())
            .unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stdout_between_markers() {
        let text = "{\"toolset_name\":\"kubernetes/core\",\"tool_name\":\"kubectl_describe\",\"match_params\":{\"kind\":\"pod\"}}\n{\"status\":\"success\",\"error\":null,\"return_code\":0}\nstdout:\nName: x\nStatus: Running\n\nstderr:\n";
        let call = RecordedToolCall::parse(text).unwrap();
        assert_eq!(call.tool_name, "kubectl_describe");
        assert_eq!(call.match_params["kind"], "pod");
        assert_eq!(call.stdout, "Name: x\nStatus: Running");
        assert_eq!(call.stderr, "");
        assert!(!call.failed());
        assert_eq!(call.output(), "Name: x\nStatus: Running");
    }

    #[test]
    fn reads_bare_output_and_failures() {
        let text = "{\"tool_name\":\"kubectl_previous_logs\"}\n{\"status\":\"error\",\"error\":\"boom\",\"return_code\":1}\nError from server (BadRequest): previous terminated container \"c\" not found";
        let call = RecordedToolCall::parse(text).unwrap();
        assert!(call.failed());
        assert!(call.output().starts_with("Error from server"));
    }

    #[test]
    fn failed_command_before_markers_is_preamble() {
        let text = "{\"tool_name\":\"fetch_pod_logs\"}\n{\"status\":\"success\",\"return_code\":0}\nCommand `kubectl logs x` failed with return code 1\nstdout:\n\nstderr:\nError from server (BadRequest): container \"exporter\" is waiting to start";
        let call = RecordedToolCall::parse(text).unwrap();
        assert!(call.failed());
        assert_eq!(call.stdout, "");
        assert!(call.output().contains("waiting to start"));
    }

    #[test]
    fn rejects_non_recordings() {
        assert!(RecordedToolCall::parse("just text").is_err());
        assert!(
            RecordedToolCall::parse("{}\n{}").is_err(),
            "tool_name is required"
        );
    }
}
