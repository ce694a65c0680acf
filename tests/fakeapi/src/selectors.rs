//! Label and field selectors, parsed and matched the way kube-apiserver does
//! (k8s.io/apimachinery/pkg/labels/selector.go, pkg/fields/selector.go).
//!
//! The plugin finds control-plane Machines with `cluster.x-k8s.io/control-plane`
//! (an *existence* requirement: the label's value is the empty string), so the
//! fake must implement the whole grammar, not just `k=v`: a fake that ignored
//! an unknown requirement would return worker Machines and hide a bug.

use std::collections::BTreeMap;
use std::fmt;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    Exists(String),
    DoesNotExist(String),
    /// `k=v`, `k==v` and `k in (v1,v2)`.
    In(String, Vec<String>),
    /// `k!=v` and `k notin (v1,v2)`: also true when the label is absent.
    NotIn(String, Vec<String>),
    Gt(String, i64),
    Lt(String, i64),
}

/// A parsed label selector: every requirement must hold (comma means AND).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(pub Vec<Requirement>);

/// The error a real server turns into a 400 BadRequest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorError(pub String);

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SelectorError {}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Bang,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    Comma,
    Open,
    Close,
}

fn is_ident_char(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, '!' | '=' | '>' | '<' | ',' | '(' | ')')
}

fn tokenize(s: &str) -> Vec<Tok> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            c if c.is_whitespace() => i += 1,
            '!' if next == Some('=') => {
                out.push(Tok::NotEq);
                i += 2;
            }
            '!' => {
                out.push(Tok::Bang);
                i += 1;
            }
            '=' if next == Some('=') => {
                out.push(Tok::DoubleEq);
                i += 2;
            }
            '=' => {
                out.push(Tok::Eq);
                i += 1;
            }
            '>' => {
                out.push(Tok::Gt);
                i += 1;
            }
            '<' => {
                out.push(Tok::Lt);
                i += 1;
            }
            ',' => {
                out.push(Tok::Comma);
                i += 1;
            }
            '(' => {
                out.push(Tok::Open);
                i += 1;
            }
            ')' => {
                out.push(Tok::Close);
                i += 1;
            }
            _ => {
                let start = i;
                while i < chars.len() && is_ident_char(chars[i]) {
                    i += 1;
                }
                out.push(Tok::Ident(chars[start..i].iter().collect()));
            }
        }
    }
    out
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    src: String,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn err(&self, what: &str) -> SelectorError {
        SelectorError(format!(
            "unable to parse requirement: found '{what}' in label selector \"{}\"",
            self.src
        ))
    }

    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        if self.peek() == Some(&Tok::Bang) {
            self.next();
            let key = match self.next() {
                Some(Tok::Ident(k)) => k,
                other => return Err(self.err(&format!("{other:?}"))),
            };
            validate_key(&key)?;
            return Ok(Requirement::DoesNotExist(key));
        }
        let key = match self.next() {
            Some(Tok::Ident(k)) => k,
            other => return Err(self.err(&format!("{other:?}"))),
        };
        validate_key(&key)?;
        match self.peek().cloned() {
            None | Some(Tok::Comma) => Ok(Requirement::Exists(key)),
            Some(Tok::Eq) | Some(Tok::DoubleEq) => {
                self.next();
                Ok(Requirement::In(key, vec![self.single_value()?]))
            }
            Some(Tok::NotEq) => {
                self.next();
                Ok(Requirement::NotIn(key, vec![self.single_value()?]))
            }
            Some(Tok::Gt) | Some(Tok::Lt) => {
                let gt = self.next() == Some(Tok::Gt);
                let v = self.single_value()?;
                let n: i64 = v.parse().map_err(|_| {
                    SelectorError(format!(
                        "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer: {v:?}"
                    ))
                })?;
                Ok(if gt {
                    Requirement::Gt(key, n)
                } else {
                    Requirement::Lt(key, n)
                })
            }
            Some(Tok::Ident(op)) if op == "in" || op == "notin" => {
                self.next();
                let vals = self.value_set()?;
                Ok(if op == "in" {
                    Requirement::In(key, vals)
                } else {
                    Requirement::NotIn(key, vals)
                })
            }
            Some(other) => Err(self.err(&format!("{other:?}"))),
        }
    }

    /// The value after `=`, `!=`, `>`, `<`; may be empty (`k=` selects value "").
    fn single_value(&mut self) -> Result<String, SelectorError> {
        match self.peek().cloned() {
            Some(Tok::Ident(v)) => {
                self.next();
                validate_value(&v)?;
                Ok(v)
            }
            None | Some(Tok::Comma) => Ok(String::new()),
            Some(other) => Err(self.err(&format!("{other:?}"))),
        }
    }

    fn value_set(&mut self) -> Result<Vec<String>, SelectorError> {
        if self.next() != Some(Tok::Open) {
            return Err(SelectorError(format!(
                "unable to parse requirement: found '(' expected in label selector \"{}\"",
                self.src
            )));
        }
        let mut vals = Vec::new();
        let mut expect_value = true;
        loop {
            match self.next() {
                Some(Tok::Ident(v)) if expect_value => {
                    validate_value(&v)?;
                    vals.push(v);
                    expect_value = false;
                }
                Some(Tok::Comma) => {
                    if expect_value {
                        vals.push(String::new());
                    }
                    expect_value = true;
                }
                Some(Tok::Close) => {
                    if expect_value && !vals.is_empty() {
                        vals.push(String::new());
                    }
                    break;
                }
                other => return Err(self.err(&format!("{other:?}"))),
            }
        }
        if vals.is_empty() {
            return Err(SelectorError(
                "unable to parse requirement: for 'in', 'notin' operators, values set can't be empty".into(),
            ));
        }
        Ok(vals)
    }
}

/// Label keys: optional DNS-subdomain prefix and '/', then a name of at most 63
/// characters. Checked loosely (shape, not every character class).
fn validate_key(key: &str) -> Result<(), SelectorError> {
    let name = key
        .rsplit_once('/')
        .map(|(p, n)| (Some(p), n))
        .unwrap_or((None, key));
    let bad = |why: &str| {
        Err(SelectorError(format!(
            "unable to parse requirement: Invalid value: {key:?}: {why}"
        )))
    };
    if let (Some(prefix), _) = name {
        if prefix.is_empty() || prefix.len() > 253 {
            return bad("prefix part must be a non-empty DNS subdomain");
        }
    }
    let n = name.1;
    if n.is_empty() || n.len() > 63 {
        return bad("name part must be non-empty and at most 63 characters");
    }
    if !n
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return bad("name part must consist of alphanumeric characters, '-', '_' or '.'");
    }
    Ok(())
}

fn validate_value(v: &str) -> Result<(), SelectorError> {
    if v.len() > 63
        || !v
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(SelectorError(format!(
            "unable to parse requirement: Invalid value: {v:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.'"
        )));
    }
    Ok(())
}

impl LabelSelector {
    /// Parses a `labelSelector` query value. The empty string selects everything.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut p = Parser {
            toks: tokenize(s),
            pos: 0,
            src: s.to_string(),
        };
        let mut reqs = Vec::new();
        if p.toks.is_empty() {
            return Ok(LabelSelector(reqs));
        }
        loop {
            reqs.push(p.requirement()?);
            match p.next() {
                None => break,
                Some(Tok::Comma) => continue,
                Some(other) => return Err(p.err(&format!("{other:?}"))),
            }
        }
        Ok(LabelSelector(reqs))
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Gt(k, n) => labels
                .get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            Requirement::Lt(k, n) => labels
                .get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        })
    }
}

/// One term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldTerm {
    pub field: String,
    pub value: String,
    pub negated: bool,
}

/// A parsed field selector (`metadata.name=x,metadata.namespace!=y`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(pub Vec<FieldTerm>);

/// Splits on `sep` outside backslash escapes, keeping escapes in the parts.
fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            parts.last_mut().unwrap().push('\\');
            parts.last_mut().unwrap().push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(String::new());
        } else {
            parts.last_mut().unwrap().push(c);
        }
    }
    parts
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut escaped = false;
    for c in s.chars() {
        if escaped || c != '\\' {
            out.push(c);
            escaped = false;
        } else {
            escaped = true;
        }
    }
    out
}

impl FieldSelector {
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut terms = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector(terms));
        }
        for part in split_unescaped(s, ',') {
            // Order matters: "!=" and "==" before "=".
            let (field, value, negated) = if let Some((f, v)) = part.split_once("!=") {
                (f, v, true)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, v, false)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, v, false)
            } else {
                return Err(SelectorError(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            terms.push(FieldTerm {
                field: unescape(field.trim()),
                value: unescape(value.trim()),
                negated,
            });
        }
        Ok(FieldSelector(terms))
    }

    /// Every field named in the selector, to check against the fields the kind supports.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|t| t.field.as_str())
    }

    /// `lookup` returns the object's value of a field ("" when unset, as the real
    /// field-set conversion does).
    pub fn matches(&self, lookup: impl Fn(&str) -> String) -> bool {
        self.0
            .iter()
            .all(|t| (lookup(&t.field) == t.value) != t.negated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_every_operator() {
        let s = LabelSelector::parse(
            "a=1, b==2,c!=3,d,!e,f in (x, y),g notin (z),h>4,i<5,cluster.x-k8s.io/control-plane",
        )
        .unwrap();
        assert_eq!(
            s.0,
            vec![
                Requirement::In("a".into(), vec!["1".into()]),
                Requirement::In("b".into(), vec!["2".into()]),
                Requirement::NotIn("c".into(), vec!["3".into()]),
                Requirement::Exists("d".into()),
                Requirement::DoesNotExist("e".into()),
                Requirement::In("f".into(), vec!["x".into(), "y".into()]),
                Requirement::NotIn("g".into(), vec!["z".into()]),
                Requirement::Gt("h".into(), 4),
                Requirement::Lt("i".into(), 5),
                Requirement::Exists("cluster.x-k8s.io/control-plane".into()),
            ]
        );
    }

    #[test]
    fn empty_selector_matches_everything() {
        let s = LabelSelector::parse("  ").unwrap();
        assert!(s.0.is_empty());
        assert!(s.matches(&labels(&[])));
    }

    #[test]
    fn existence_selects_empty_valued_label() {
        // CAPI sets cluster.x-k8s.io/control-plane: "" on control-plane Machines.
        let s = LabelSelector::parse(
            "cluster.x-k8s.io/cluster-name=tkc-prod,cluster.x-k8s.io/control-plane",
        )
        .unwrap();
        let cp = labels(&[
            ("cluster.x-k8s.io/cluster-name", "tkc-prod"),
            ("cluster.x-k8s.io/control-plane", ""),
        ]);
        let worker = labels(&[
            ("cluster.x-k8s.io/cluster-name", "tkc-prod"),
            ("cluster.x-k8s.io/deployment-name", "w"),
        ]);
        let other = labels(&[
            ("cluster.x-k8s.io/cluster-name", "tkc-prodx"),
            ("cluster.x-k8s.io/control-plane", ""),
        ]);
        assert!(s.matches(&cp));
        assert!(!s.matches(&worker));
        assert!(!s.matches(&other));
        // "k=" selects the empty value too, but not absence.
        let eq_empty = LabelSelector::parse("cluster.x-k8s.io/control-plane=").unwrap();
        assert!(eq_empty.matches(&cp));
        assert!(!eq_empty.matches(&worker));
    }

    #[test]
    fn negative_operators_match_absent_labels() {
        let l = labels(&[("role", "cp")]);
        assert!(LabelSelector::parse("tier!=web").unwrap().matches(&l));
        assert!(LabelSelector::parse("tier notin (web,db)")
            .unwrap()
            .matches(&l));
        assert!(!LabelSelector::parse("role notin (cp)").unwrap().matches(&l));
        assert!(!LabelSelector::parse("role!=cp").unwrap().matches(&l));
        assert!(LabelSelector::parse("!tier").unwrap().matches(&l));
        assert!(!LabelSelector::parse("!role").unwrap().matches(&l));
    }

    #[test]
    fn set_based_and_numeric() {
        let l = labels(&[("capv.vmware.com/cluster.role", "controlplane"), ("n", "7")]);
        assert!(
            LabelSelector::parse("capv.vmware.com/cluster.role in (controlplane, node)")
                .unwrap()
                .matches(&l)
        );
        assert!(
            !LabelSelector::parse("capv.vmware.com/cluster.role in (node)")
                .unwrap()
                .matches(&l)
        );
        assert!(LabelSelector::parse("n>6,n<8").unwrap().matches(&l));
        assert!(!LabelSelector::parse("n>7").unwrap().matches(&l));
        assert!(!LabelSelector::parse("missing>1").unwrap().matches(&l));
    }

    #[test]
    fn rejects_malformed_selectors() {
        for bad in [
            "=x",
            "a in x",
            "a in ()",
            "a,,b",
            "a b",
            "a=(x)",
            "a>x",
            "bad key=1",
            "a in (x",
        ] {
            assert!(
                LabelSelector::parse(bad).is_err(),
                "{bad:?} should not parse"
            );
        }
    }

    #[test]
    fn field_selector_terms() {
        let f = FieldSelector::parse("metadata.name=tkc-prod-abc,metadata.namespace!=kube-system")
            .unwrap();
        assert_eq!(f.0.len(), 2);
        let look = |name: &'static str, ns: &'static str| {
            move |field: &str| match field {
                "metadata.name" => name.to_string(),
                "metadata.namespace" => ns.to_string(),
                _ => String::new(),
            }
        };
        assert!(f.matches(look("tkc-prod-abc", "ns-prod")));
        assert!(!f.matches(look("tkc-prod-abc", "kube-system")));
        assert!(!f.matches(look("tkc-prod-abd", "ns-prod")));
        let eqeq = FieldSelector::parse("metadata.name==x").unwrap();
        assert_eq!(
            eqeq.0[0],
            FieldTerm {
                field: "metadata.name".into(),
                value: "x".into(),
                negated: false
            }
        );
        assert!(FieldSelector::parse("metadata.name").is_err());
        assert_eq!(FieldSelector::parse(r"a=x\,y").unwrap().0[0].value, "x,y");
    }
}
