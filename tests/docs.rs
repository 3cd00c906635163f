//! The README's configuration table documents every setting, by its environment variable.

#[test]
fn every_setting_is_in_the_readme_table() {
    let readme = include_str!("../README.md");
    let missing: Vec<String> = firstline_config::Settings::keys()
        .into_iter()
        .filter(|(key, env)| !readme.contains(&format!("| `{key}` | `{env}` |")))
        .map(|(key, _)| key)
        .collect();
    assert!(
        missing.is_empty(),
        "settings missing from README.md's table: {missing:?}"
    );
}
