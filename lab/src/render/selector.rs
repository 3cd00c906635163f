//! Kubernetes label and field selectors, for the tools and the fake API that filter lists.
//!
//! Labels: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x,y)`, `a` (exists), `!a` (absent),
//! comma-separated, all must hold. Fields: `a=b`, `a==b`, `a!=b` on dotted paths
//! (`involvedObject.name`, `spec.nodeName`, `status.phase`); a missing field is empty, as in
//! Kubernetes (`spec.nodeName=` selects unscheduled pods).

use serde_json::Value;

/// Splits on commas outside parentheses (`a in (x,y),b=c` is two terms).
fn terms(selector: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&selector[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect()
}

/// `a=b` / `a==b` / `a!=b` → (key, value, negated).
fn equality(term: &str) -> Option<(&str, &str, bool)> {
    if let Some((k, v)) = term.split_once("!=") {
        return Some((k.trim(), v.trim(), true));
    }
    term.split_once("==")
        .or_else(|| term.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim(), false))
}

/// `a in (x,y)` / `a notin (x,y)` → (key, values, negated).
fn set_based(term: &str) -> Option<(&str, Vec<&str>, bool)> {
    let open = term.find('(')?;
    let close = term.rfind(')')?;
    let head = term[..open].trim();
    let values: Vec<&str> = term[open + 1..close].split(',').map(str::trim).collect();
    if let Some(key) = head.strip_suffix("notin") {
        return Some((key.trim(), values, true));
    }
    head.strip_suffix(" in")
        .map(|key| (key.trim(), values, false))
}

/// Whether `labels` satisfy a label selector (`None` selects everything).
pub(crate) fn labels_match(selector: Option<&str>, label: impl Fn(&str) -> Option<String>) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    terms(selector).into_iter().all(|term| {
        if let Some((key, values, negated)) = set_based(term) {
            let found = label(key).is_some_and(|v| values.contains(&v.as_str()));
            return found != negated;
        }
        if let Some((key, value, negated)) = equality(term) {
            return (label(key).as_deref() == Some(value)) != negated;
        }
        match term.strip_prefix('!') {
            Some(key) => label(key.trim()).is_none(),
            None => label(term).is_some(),
        }
    })
}

/// Whether fields satisfy a field selector (`None` selects everything; a term that is not an
/// equality selects nothing).
pub(crate) fn fields_match(selector: Option<&str>, field: impl Fn(&str) -> Option<String>) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    terms(selector)
        .into_iter()
        .all(|term| match equality(term) {
            Some((key, value, negated)) => (field(key).unwrap_or_default() == value) != negated,
            None => false,
        })
}

/// The value at a dotted path (`metadata.name`, `spec.nodeName`) as text.
pub(crate) fn field_at(object: &Value, path: &str) -> Option<String> {
    let mut at = object;
    for key in path.split('.') {
        at = at.get(key)?;
    }
    match at {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// An object's label, for [`labels_match`].
pub(crate) fn object_label(object: &Value, key: &str) -> Option<String> {
    object["metadata"]["labels"]
        .get(key)
        .and_then(Value::as_str)
        .map(String::from)
}

/// An object passes both selectors.
pub(crate) fn object_matches(object: &Value, labels: Option<&str>, fields: Option<&str>) -> bool {
    labels_match(labels, |k| object_label(object, k))
        && fields_match(fields, |path| field_at(object, path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors_match_like_kubernetes() {
        let pod = json!({"metadata": {"labels": {"app": "x", "tier": "web"}}});
        let m = |s| labels_match(Some(s), |k| object_label(&pod, k));
        assert!(m("app=x") && m("app==x") && m("app!=y") && m("team!=a"));
        assert!(m("app=x,tier=web") && !m("app=x,tier=db"));
        assert!(m("app in (x, y)") && !m("app in (y,z)") && m("app notin (y)"));
        assert!(m("tier in (web),app") && m("!team") && !m("!app") && !m("team"));
        assert!(labels_match(None, |_| None));
    }

    #[test]
    fn field_selectors_read_dotted_paths_and_missing_is_empty() {
        let event =
            json!({"involvedObject": {"name": "p", "kind": "Pod"}, "type": "Warning", "spec": {}});
        let f = |s| fields_match(Some(s), |path| field_at(&event, path));
        assert!(f("involvedObject.name=p") && f("involvedObject.name==p,type=Warning"));
        assert!(!f("involvedObject.name=q") && f("type!=Normal"));
        assert!(!f("involvedObject.name=p,type=Normal"));
        assert!(f("spec.nodeName=") && !f("spec.nodeName=n1") && !f("type"));
    }
}
