//! Lists as NSX answers them: `{"results": [...], "result_count": N, "cursor": "..."}` with
//! `cursor`, `page_size`, `sort_by`, `sort_ascending` query parameters (every list operation of
//! vmware/vsphere-automation-sdk-go takes these four, e.g.
//! `services/nsxt/infra/domains/SecurityPoliciesTypes.go`). `result_count` is the whole list's
//! size; `cursor` is absent on the last page; a cursor is opaque to the client.
//! The search API's subset (`/policy/api/v1/search/query`, sdk-go `services/nsxt/search/QueryTypes.go`)
//! is here too.

use base64::Engine;
use serde_json::{json, Value};

/// NSX's default and largest page.
pub const MAX_PAGE: usize = 1000;

/// A bad list request: the 400's message.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ListError {
    #[error("invalid cursor")]
    Cursor,
    #[error("page_size must be a number from 1 to {MAX_PAGE}")]
    PageSize,
    #[error("unsupported search query: {0}")]
    Query(String),
}

fn encode(offset: usize) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("fakensx:{offset}"))
}

fn decode(cursor: &str) -> Option<usize> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(cursor)
        .ok()?;
    String::from_utf8(raw)
        .ok()?
        .strip_prefix("fakensx:")?
        .parse()
        .ok()
}

fn sort_key(v: &Value, field: &str) -> (u8, f64, String) {
    match v.get(field) {
        Some(Value::Number(n)) => (0, n.as_f64().unwrap_or(0.0), String::new()),
        Some(Value::String(s)) => (1, 0.0, s.to_lowercase()),
        Some(other) => (2, 0.0, other.to_string()),
        None => (3, 0.0, String::new()),
    }
}

/// One page of `items` for the query parameters `params`.
pub fn page(
    mut items: Vec<Value>,
    params: &[(String, String)],
    default_page: usize,
) -> Result<Value, ListError> {
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let size = match get("page_size") {
        None => default_page.clamp(1, MAX_PAGE),
        Some(s) => match s.parse::<usize>() {
            Ok(n) if (1..=MAX_PAGE).contains(&n) => n,
            _ => return Err(ListError::PageSize),
        },
    };
    let start = match get("cursor") {
        None | Some("") => 0,
        Some(c) => decode(c)
            .filter(|&o| o <= items.len())
            .ok_or(ListError::Cursor)?,
    };
    let mut extra = serde_json::Map::new();
    if let Some(field) = get("sort_by") {
        let asc = get("sort_ascending") != Some("false");
        items.sort_by(|a, b| {
            let o = sort_key(a, field)
                .partial_cmp(&sort_key(b, field))
                .unwrap_or(std::cmp::Ordering::Equal);
            if asc {
                o
            } else {
                o.reverse()
            }
        });
        extra.insert("sort_by".into(), json!(field));
        extra.insert("sort_ascending".into(), json!(asc));
    }
    let total = items.len();
    let end = (start + size).min(total);
    let mut out = json!({
        "results": items[start..end].to_vec(),
        "result_count": total,
    });
    if end < total {
        out["cursor"] = json!(encode(end));
    }
    if let Some(o) = out.as_object_mut() {
        o.extend(extra);
    }
    Ok(out)
}

/// One `field:value` term of a search query.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    field: Option<String>,
    value: String,
    prefix: bool,
}

/// Parses the fake's subset of NSX's search syntax: terms joined by ` AND `, each
/// `field:value` (a dotted field reaches into objects and lists: `tags.tag:cp`,
/// `attachment.id:…`), a value quoted or not, a trailing `*` a prefix match, a bare word a
/// match on any string field. Anything else (OR, NOT, parentheses, ranges) is refused.
fn parse_query(q: &str) -> Result<Vec<Term>, ListError> {
    let bad = || ListError::Query(q.chars().filter(|c| !c.is_control()).take(200).collect());
    if q.trim().is_empty() || q.contains(" OR ") || q.contains(" NOT ") || q.contains('(') {
        return Err(bad());
    }
    q.split(" AND ")
        .map(|t| {
            let t = t.trim();
            let (field, value) = match t.split_once(':') {
                Some((f, v)) if !f.is_empty() && !f.contains(' ') => {
                    (Some(f.to_string()), v.to_string())
                }
                Some(_) => return Err(bad()),
                None => (None, t.to_string()),
            };
            // A backslash escapes the next character (Lucene's query syntax, which the
            // search API takes; terraform-provider-nsxt `nsxt/policy_search.go`
            // `escapeSpecialCharacters` escapes `()[]+-=&|><!{}^~*?:/` in the ids it searches by).
            let raw = value.trim().trim_matches('"');
            // A trailing unescaped `*` is a prefix match.
            let (raw, prefix) = match raw.strip_suffix('*') {
                Some(v) if !v.ends_with('\\') => (v, true),
                _ => (raw, false),
            };
            let value = unescape(raw);
            if value.is_empty() {
                return Err(bad());
            }
            Ok(Term {
                field,
                value: value.to_lowercase(),
                prefix,
            })
        })
        .collect()
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

fn leaf_matches(v: &Value, t: &Term) -> bool {
    let s = match v {
        Value::String(s) => s.to_lowercase(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Array(a) => return a.iter().any(|x| leaf_matches(x, t)),
        _ => return false,
    };
    if t.prefix {
        s.starts_with(&t.value)
    } else {
        s == t.value
    }
}

fn field_matches(v: &Value, path: &[&str], t: &Term) -> bool {
    match (v, path.split_first()) {
        (Value::Array(a), _) => a.iter().any(|x| field_matches(x, path, t)),
        (_, None) => leaf_matches(v, t),
        (Value::Object(o), Some((k, rest))) => o.get(*k).is_some_and(|x| field_matches(x, rest, t)),
        _ => false,
    }
}

fn any_string(v: &Value, t: &Term) -> bool {
    match v {
        Value::String(s) => s.to_lowercase().contains(&t.value),
        Value::Array(a) => a.iter().any(|x| any_string(x, t)),
        Value::Object(o) => o.values().any(|x| any_string(x, t)),
        _ => false,
    }
}

/// The objects of `all` that match the search `query`.
pub fn search(all: &[Value], query: &str) -> Result<Vec<Value>, ListError> {
    let terms = parse_query(query)?;
    Ok(all
        .iter()
        .filter(|o| {
            terms.iter().all(|t| match &t.field {
                Some(f) => field_matches(o, &f.split('.').collect::<Vec<_>>(), t),
                None => any_string(o, t),
            })
        })
        .cloned()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(n: usize) -> Vec<Value> {
        (0..n)
            .map(|i| json!({"id": format!("p{i:03}"), "n": i}))
            .collect()
    }

    #[test]
    fn pages_with_cursors_then_none() {
        let all = items(5);
        let p = |q: &[(&str, &str)]| {
            let q: Vec<(String, String)> = q
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect();
            page(all.clone(), &q, MAX_PAGE)
        };
        let first = p(&[("page_size", "2")]).unwrap();
        assert_eq!(first["result_count"], 5);
        assert_eq!(first["results"].as_array().unwrap().len(), 2);
        let c = first["cursor"].as_str().unwrap().to_string();
        let second = p(&[("page_size", "2"), ("cursor", &c)]).unwrap();
        assert_eq!(second["results"][0]["id"], "p002");
        let c = second["cursor"].as_str().unwrap().to_string();
        let last = p(&[("page_size", "2"), ("cursor", &c)]).unwrap();
        assert_eq!(last["results"].as_array().unwrap().len(), 1);
        assert!(last.get("cursor").is_none());
        assert_eq!(p(&[("cursor", "junk")]), Err(ListError::Cursor));
        assert_eq!(p(&[("page_size", "0")]), Err(ListError::PageSize));
        assert_eq!(p(&[("page_size", "1001")]), Err(ListError::PageSize));
        let desc = p(&[("sort_by", "n"), ("sort_ascending", "false")]).unwrap();
        assert_eq!(desc["results"][0]["id"], "p004");
        assert_eq!(desc["sort_by"], "n");
    }

    #[test]
    fn search_subset() {
        let all = vec![
            json!({"resource_type": "VirtualMachine", "display_name": "tkc-prod-a", "tags": [{"scope": "s", "tag": "cp"}]}),
            json!({"resource_type": "VirtualMachine", "display_name": "worker"}),
            json!({"resource_type": "SegmentPort", "display_name": "tkc-prod-a-port", "attachment": {"id": "att-1"}}),
        ];
        let n = |q: &str| search(&all, q).unwrap().len();
        assert_eq!(n("resource_type:VirtualMachine"), 2);
        assert_eq!(
            n("resource_type:VirtualMachine AND display_name:tkc-prod*"),
            1
        );
        assert_eq!(n("tags.tag:cp"), 1);
        assert_eq!(n("attachment.id:att-1"), 1);
        assert_eq!(
            n(r"attachment.id:att\-1"),
            1,
            "escaped as terraform escapes"
        );
        assert_eq!(
            n("resource_type:VirtualMachine AND display_name:\"worker\""),
            1
        );
        assert_eq!(n("tkc-prod"), 2);
        assert!(search(&all, "a OR b").is_err());
        assert!(search(&all, "").is_err());
    }
}
