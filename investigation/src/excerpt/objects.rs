//! Excerpts of Kubernetes objects as YAML (a pod list, a Node) that stay YAML: every kept line
//! keeps the lines that open its mapping and list item, and an omitted stretch is marked by a
//! comment, so a cut excerpt still parses, item by item, into the objects it shows. In a list,
//! each item's identity — its name, owner, revision label, node, phase and its containers'
//! readiness, restarts and reasons — is kept before anything else, one item at a time: a pod
//! list cut to fit still says which pod runs where and how it is doing.

use std::sync::LazyLock;

use regex::Regex;

/// `key:` or `key: value`, after any `- `.
static KEY: LazyLock<Regex> = regex!(r"^(?:- )?([A-Za-z0-9_./-]+):(?:\s|$)");

/// Paths (list items as `[]`) of a list item's identity, each ending the path of a line: first
/// what every item needs to be compared (a pod's node and state, a node's taints), then why its
/// containers stopped and where a node stands (zone, instance type, node group), then who owns
/// it.
const IDENTITY: [&[&str]; 3] = [
    &[
        "[].metadata.name",
        "[].metadata.namespace",
        "[].metadata.creationTimestamp",
        "[].metadata.labels.pod-template-hash",
        "[].metadata.labels.controller-revision-hash",
        "[].metadata.labels.job-name",
        "[].spec.nodeName",
        "[].status.phase",
        "[].status.reason",
        "[].status.containerStatuses.[].ready",
        "[].status.containerStatuses.[].restartCount",
        "[].spec.volumes.[].persistentVolumeClaim.claimName",
        "[].spec.unschedulable",
        "[].spec.taints.[].key",
        "[].spec.taints.[].value",
        "[].spec.taints.[].effect",
    ],
    &[
        "[].metadata.labels.topology.kubernetes.io/zone",
        "[].metadata.labels.node.kubernetes.io/instance-type",
        "[].metadata.labels.kubernetes.io/arch",
        "[].metadata.labels.eks.amazonaws.com/nodegroup",
        "[].metadata.labels.karpenter.sh/nodepool",
        "[].metadata.labels.cloud.google.com/gke-nodepool",
        "[].status.containerStatuses.[].state.running.startedAt",
        "[].status.containerStatuses.[].state.waiting.reason",
        "[].status.containerStatuses.[].state.terminated.reason",
        "[].status.containerStatuses.[].lastState.terminated.reason",
        "[].status.containerStatuses.[].lastState.terminated.finishedAt",
    ],
    &[
        "[].metadata.ownerReferences.[].kind",
        "[].metadata.ownerReferences.[].name",
    ],
];

/// The parsed shape of an object text: for each line, the lines that open it (outermost first)
/// and its path.
pub(super) struct Shape {
    parents: Vec<Vec<usize>>,
    paths: Vec<String>,
    /// The first line of each top-level list item.
    items: Vec<usize>,
}

/// One open mapping key or list item.
struct Open {
    line: usize,
    indent: usize,
    /// A list item (`- `): its keys sit at `indent + 2`.
    dash: bool,
    /// The path segment it adds for the lines under it.
    segment: String,
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

impl Shape {
    /// The shape of `lines` when they are Kubernetes objects as YAML (the first line opens an
    /// object or a list of them); `None` for anything else.
    pub(super) fn of(lines: &[String]) -> Option<Shape> {
        let first = lines.iter().find(|l| !l.trim().is_empty())?;
        let opens_object = ["apiVersion: ", "kind: ", "- apiVersion: ", "- kind: "]
            .iter()
            .any(|p| first.starts_with(p));
        if !opens_object {
            return None;
        }
        let mut stack: Vec<Open> = Vec::new();
        let mut parents = Vec::with_capacity(lines.len());
        let mut paths = Vec::with_capacity(lines.len());
        let mut items = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            let body = line.trim_start();
            if body.is_empty() || body.starts_with('#') {
                parents.push(stack.iter().map(|o| o.line).collect());
                paths.push(String::new());
                continue;
            }
            let at = indent(line);
            let dash = body.starts_with("- ") || body == "-";
            // Close what this line is not inside of.
            while let Some(top) = stack.last() {
                let inside = if dash {
                    top.indent < at || (top.indent == at && !top.dash)
                } else {
                    top.indent < at && (!top.dash || top.indent + 2 <= at)
                };
                if inside {
                    break;
                }
                stack.pop();
            }
            if dash && at == 0 {
                items.push(i);
            }
            let key = KEY
                .captures(body)
                .and_then(|c| c.get(1))
                .map(|m| m.as_str().to_string());
            let prefix: Vec<&str> = stack.iter().map(|o| o.segment.as_str()).collect();
            let mut path = prefix.join(".");
            if dash {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str("[]");
            }
            if let Some(key) = &key {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            parents.push(stack.iter().map(|o| o.line).collect());
            paths.push(path);
            if dash {
                stack.push(Open {
                    line: i,
                    indent: at,
                    dash: true,
                    segment: "[]".into(),
                });
            }
            if let Some(key) = key {
                // The key of a list item's first line sits at the item's content indentation.
                let key_indent = if dash { at + 2 } else { at };
                stack.push(Open {
                    line: i,
                    indent: key_indent,
                    dash: false,
                    segment: key,
                });
            }
        }
        Some(Shape {
            parents,
            paths,
            items,
        })
    }

    /// `chosen` with the lines that open each chosen line added.
    pub(super) fn close(&self, chosen: &mut [bool]) {
        for i in 0..chosen.len() {
            if chosen[i] {
                for &p in &self.parents[i] {
                    chosen[p] = true;
                }
            }
        }
    }

    /// For each top-level list item (when there are two or more), the lines of its identity:
    /// every item's first tier, then every item's second.
    pub(super) fn identities(&self) -> Vec<Vec<usize>> {
        if self.items.len() < 2 {
            return Vec::new();
        }
        let mut out = Vec::new();
        for tier in IDENTITY {
            for (n, &start) in self.items.iter().enumerate() {
                let end = self.items.get(n + 1).copied().unwrap_or(self.paths.len());
                let lines: Vec<usize> = (start..end)
                    .filter(|&i| tier.contains(&self.paths[i].as_str()))
                    .collect();
                if !lines.is_empty() {
                    out.push(lines);
                }
            }
        }
        out
    }
}

/// Whether `text` is a YAML list of two or more Kubernetes objects.
pub(super) fn is_object_list(text: &str) -> bool {
    let item = |l: &&str| l.starts_with("- apiVersion: ") || l.starts_with("- kind: ");
    text.lines().next().as_ref().is_some_and(item) && text.lines().filter(item).nth(1).is_some()
}

/// Omitted stretches no longer than their marker would be, kept instead: they cost nothing.
pub(super) fn fill_small_gaps(lines: &[String], chosen: &mut [bool]) {
    let mut i = 0;
    while i < lines.len() {
        if chosen[i] {
            i += 1;
            continue;
        }
        let end = (i..lines.len()).find(|&j| chosen[j]).unwrap_or(lines.len());
        let gap: usize = lines[i..end].iter().map(|l| l.chars().count() + 1).sum();
        let marker = comment_marker(end - i);
        if gap <= marker.chars().count() + 1 {
            chosen[i..end].iter_mut().for_each(|c| *c = true);
        }
        i = end;
    }
}

/// The marker for `n` omitted lines: a short YAML comment (markers add up over a long list,
/// and a comment parses wherever it stands).
pub(super) fn comment_marker(n: usize) -> String {
    format!("# … [{n} omitted]")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    const LIST: &str = "\
- apiVersion: v1
  kind: Pod
  metadata:
    labels:
      app: api
      pod-template-hash: 7d9f8c6b5
    name: api-7d9f8c6b5-x2k4q
    ownerReferences:
    - apiVersion: apps/v1
      kind: ReplicaSet
      name: api-7d9f8c6b5
  spec:
    containers:
    - image: registry.example.com/api:1
      name: api
    nodeName: worker-3
  status:
    containerStatuses:
    - image: registry.example.com/api:1
      name: api
      ready: false
      restartCount: 7
      state:
        waiting:
          reason: CrashLoopBackOff
    phase: Running
- apiVersion: v1
  kind: Pod
  metadata:
    name: api-7d9f8c6b5-b4n6c
  spec:
    nodeName: worker-1
  status:
    phase: Running
";

    #[test]
    fn paths_follow_mappings_and_list_items() {
        let lines = lines(LIST);
        let shape = Shape::of(&lines).expect("objects");
        let path = |text: &str| {
            let i = lines.iter().position(|l| l == text).expect(text);
            shape.paths[i].clone()
        };
        assert_eq!(path("    name: api-7d9f8c6b5-x2k4q"), "[].metadata.name");
        assert_eq!(
            path("      kind: ReplicaSet"),
            "[].metadata.ownerReferences.[].kind"
        );
        assert_eq!(path("    nodeName: worker-3"), "[].spec.nodeName");
        assert_eq!(path("      name: api"), "[].spec.containers.[].name");
        assert_eq!(
            path("          reason: CrashLoopBackOff"),
            "[].status.containerStatuses.[].state.waiting.reason"
        );
        assert_eq!(path("    phase: Running"), "[].status.phase");
        assert_eq!(shape.items, [0, 26]);
    }

    #[test]
    fn each_item_keeps_its_identity_and_the_lines_that_open_it() {
        let lines = lines(LIST);
        let shape = Shape::of(&lines).expect("objects");
        let identities = shape.identities();
        // Both items' first tier, then the first item's second and third (the second has none).
        assert_eq!(identities.len(), 4);
        let mut chosen = vec![false; lines.len()];
        for &i in identities[0]
            .iter()
            .chain(&identities[2])
            .chain(&identities[3])
        {
            chosen[i] = true;
        }
        shape.close(&mut chosen);
        let kept: Vec<&str> = lines
            .iter()
            .zip(&chosen)
            .filter(|(_, k)| **k)
            .map(|(l, _)| l.as_str())
            .collect();
        assert_eq!(
            kept,
            [
                "- apiVersion: v1",
                "  metadata:",
                "    labels:",
                "      pod-template-hash: 7d9f8c6b5",
                "    name: api-7d9f8c6b5-x2k4q",
                "    ownerReferences:",
                "    - apiVersion: apps/v1",
                "      kind: ReplicaSet",
                "      name: api-7d9f8c6b5",
                "  spec:",
                "    nodeName: worker-3",
                "  status:",
                "    containerStatuses:",
                "    - image: registry.example.com/api:1",
                "      ready: false",
                "      restartCount: 7",
                "      state:",
                "        waiting:",
                "          reason: CrashLoopBackOff",
                "    phase: Running",
            ]
        );
    }

    #[test]
    fn a_pod_list_cut_to_fit_still_parses_into_every_pods_identity() {
        let pod = |i: usize| {
            let env: String = (0..40)
                .map(|k| format!("      - name: SETTING_{k}\n        value: some-long-value-{k}\n"))
                .collect();
            format!(
                "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: api-7d9f8c6b5-pod{i}\n  \
                 spec:\n    containers:\n    - env:\n{env}      image: api:1\n      name: api\n    \
                 nodeName: worker-{i}\n  status:\n    containerStatuses:\n    - name: api\n      \
                 ready: true\n      restartCount: 0\n    phase: Running\n"
            )
        };
        let text: String = (0..10).map(pod).collect();
        assert!(is_object_list(&text));
        let out = super::super::RoundBudget::default().excerpt(&text);
        let chars = out.chars().count();
        // More than a single excerpt's 3,500 characters, within the list's 7,000.
        assert!(chars > 3_500 && chars <= 7_000, "{chars}");
        let pods = crate::kube::pods_in_list(&out);
        assert_eq!(pods.len(), 10, "{out}");
        for (i, pod) in pods.iter().enumerate() {
            assert_eq!(pod.node.as_deref(), Some(format!("worker-{i}").as_str()));
            assert_eq!(pod.ready, Some(true));
        }
        assert!(out.contains("# … ["), "{out}");
    }

    #[test]
    fn text_that_is_not_an_object_has_no_shape() {
        assert!(Shape::of(&lines("2025-01-01 INFO started\nerror: boom")).is_none());
        assert!(Shape::of(&lines("Name: api\nNamespace: shop")).is_none());
    }
}
