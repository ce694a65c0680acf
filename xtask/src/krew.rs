//! krew/.krew.yaml rendered as krew-release-bot renders it for a release.

/// The sha256 of the archive a URL names, as lowercase hex.
pub type ShaOf<'a> = &'a dyn Fn(&str) -> Result<String, String>;

/// The template rendered as krew-release-bot does (its pkg/source/template.go): .TagName is the
/// tag; `addURIAndSha "<url>" .TagName` gives `uri: <url>` and, at four spaces, the sha256 of
/// the archive (from `sha`). Beside its opening comment our template has no other action.
pub fn render(template: &str, tag: &str, sha: ShaOf) -> Result<String, String> {
    let body = template
        .strip_prefix("{{- /*")
        .and_then(|t| t.split_once("*/ -}}"))
        .map_or(template, |(_, rest)| rest.trim_start());
    let mut out = String::new();
    for line in body.split_inclusive('\n') {
        let text = line.trim();
        let line = match text
            .strip_prefix("{{addURIAndSha \"")
            .and_then(|c| c.strip_suffix("\" .TagName }}"))
        {
            Some(url) => {
                let url = url.replace("{{ .TagName }}", tag);
                let indent = &line[..line.len() - line.trim_start().len()];
                let end = &line[line.trim_end().len()..];
                format!("{indent}uri: {url}\n    sha256: {}{end}", sha(&url)?)
            }
            None => line.replace("{{ .TagName }}", tag),
        };
        if line.contains("{{") {
            return Err(format!("{text:?} is not an action of krew-release-bot's"));
        }
        out.push_str(&line);
    }
    Ok(out)
}
