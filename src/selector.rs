//! Kubernetes label selectors (`metav1.LabelSelector`), read from JSON and evaluated exactly as
//! apimachinery does.
//!
//! Checked against kubernetes/apimachinery `pkg/labels/selector.go` (`NewRequirement`,
//! `Requirement.Matches`, `internalSelector.Matches`) and `pkg/apis/meta/v1/helpers.go`
//! (`LabelSelectorAsSelector`):
//! - `matchLabels` `k: v` is the requirement `k = v`; every requirement of `matchLabels` and
//!   `matchExpressions` must hold (AND);
//! - `In`: the key is present and its value is one of `values`; `NotIn`: the key is absent, or
//!   its value is none of `values`; `Exists`: the key is present; `DoesNotExist`: it is absent;
//! - `In`/`NotIn` need at least one value, `Exists`/`DoesNotExist` none; any other operator is
//!   an error (apimachinery refuses the whole selector);
//! - an empty selector (`{}`) selects everything. A missing selector (null) is the caller's
//!   business: in a SecurityPolicy it means "this kind of workload is not selected".

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// At most this many requirements (matchLabels plus matchExpressions) in one selector; more is
/// unreadable (NSX itself refuses far fewer: nsx-operator's `MaxCriteriaExpressions`).
pub(crate) const MAX_REQUIREMENTS: usize = 64;
/// At most this many values in one `In`/`NotIn`.
pub(crate) const MAX_VALUES: usize = 64;
/// A label key is at most 253 (prefix) + 1 + 63 (name) bytes.
pub(crate) const MAX_KEY_BYTES: usize = 317;
/// A label value is at most 63 bytes.
pub(crate) const MAX_VALUE_BYTES: usize = 63;

/// A selector's operator, as `metav1.LabelSelectorOperator` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

/// One requirement: `key operator values`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    pub values: BTreeSet<String>,
}

impl Requirement {
    /// apimachinery's `Requirement.Matches` for the four operators a LabelSelector allows.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self.operator {
            Operator::In => labels
                .get(&self.key)
                .is_some_and(|v| self.values.contains(v)),
            Operator::NotIn => labels
                .get(&self.key)
                .is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => labels.contains_key(&self.key),
            Operator::DoesNotExist => !labels.contains_key(&self.key),
        }
    }
}

/// A readable label selector: all its requirements, `matchLabels` first as `In [v]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    pub requirements: Vec<Requirement>,
    /// How many of `requirements` (the first ones) come from `matchLabels`: NSX builds those
    /// apart from `matchExpressions` (see [`Selector::matches_as_nsx`]).
    pub match_labels: usize,
}

impl Selector {
    /// Reads a `metav1.LabelSelector` from its JSON. An error names what cannot be read (the
    /// text is built from our words and the bounded key only).
    pub fn from_value(v: &Value) -> Result<Selector, String> {
        let obj = v
            .as_object()
            .ok_or_else(|| "a label selector that is not an object".to_string())?;
        let mut requirements = Vec::new();
        match obj.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                if m.len() > MAX_REQUIREMENTS {
                    return Err(too_many());
                }
                for (k, val) in m {
                    let val = val
                        .as_str()
                        .ok_or_else(|| "a matchLabels value that is not a string".to_string())?;
                    check_key(k)?;
                    check_value(val)?;
                    requirements.push(Requirement {
                        key: k.clone(),
                        operator: Operator::In,
                        values: BTreeSet::from([val.to_string()]),
                    });
                }
            }
            Some(_) => return Err("matchLabels that is not an object".to_string()),
        }
        let match_labels = requirements.len();
        match obj.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(exprs)) => {
                if requirements.len() + exprs.len() > MAX_REQUIREMENTS {
                    return Err(too_many());
                }
                for e in exprs {
                    requirements.push(requirement(e)?);
                }
            }
            Some(_) => return Err("matchExpressions that is not a list".to_string()),
        }
        Ok(Selector {
            requirements,
            match_labels,
        })
    }

    /// Whether these labels satisfy every requirement (an empty selector matches everything).
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// `{}`: selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The `matchLabels` requirements (each `In [v]`).
    pub fn labels(&self) -> &[Requirement] {
        &self.requirements[..self.match_labels.min(self.requirements.len())]
    }

    /// `matchExpressions` merged as nsx-operator merges them before building NSX conditions
    /// (`pkg/nsx/services/securitypolicy/builder.go` `mergeSelectorMatchExpression`): one
    /// expression per operator and key, `In` values intersected, the others' values united.
    /// Sorted by key and operator (upstream's order is a Go map's: no meaning).
    pub fn merged_expressions(&self) -> Vec<Requirement> {
        let mut merged: BTreeMap<(String, Operator), BTreeSet<String>> = BTreeMap::new();
        for r in &self.requirements[self.labels().len()..] {
            match merged.get_mut(&(r.key.clone(), r.operator)) {
                None => {
                    merged.insert((r.key.clone(), r.operator), r.values.clone());
                }
                Some(v) if r.operator == Operator::In => {
                    *v = v.intersection(&r.values).cloned().collect();
                }
                Some(v) => v.extend(r.values.iter().cloned()),
            }
        }
        merged
            .into_iter()
            .map(|((key, operator), values)| Requirement {
                key,
                operator,
                values,
            })
            .collect()
    }

    /// Whether NSX's group, as nsx-operator builds it from this selector, takes a port with
    /// these tags (a VM's labels are its port's tags). It differs from apimachinery's answer:
    /// - a `matchLabels` or `In` value `""` is the tag condition `k|` EQUALS, which NSX matches
    ///   for any value of scope `k` (`updateExpressionsMatchLabels`; `Exists` is built the same
    ///   way, `buildExpressionsMatchExpression`): `{k: ""}` is `Exists`;
    /// - the expressions are merged first ([`Selector::merged_expressions`]); an `In` whose
    ///   intersection is empty builds no condition at all, and with it none of the other
    ///   expressions (`updateExpressionsMatchExpression` loops over the In values and builds the
    ///   others inside that loop): only `matchLabels` remain;
    /// - `DoesNotExist` is `k|` NOTEQUALS on the scope: the scope is absent, as apimachinery;
    ///   `NotIn` is the NOTIN condition on `k|a,b`, evaluated as apimachinery (NSX's answer for
    ///   a port without scope `k` is not in nsx-operator's source: docs/nsx-policy.md).
    ///
    /// Selectors nsx-operator refuses (validation) are not this function's business: the
    /// policy is then not realized at all (`validate`).
    pub fn matches_as_nsx(&self, labels: &BTreeMap<String, String>) -> bool {
        let tag = |k: &str, v: &str| match labels.get(k) {
            None => false,
            Some(have) => v.is_empty() || have == v,
        };
        let by_labels = self
            .labels()
            .iter()
            .all(|r| r.values.iter().all(|v| tag(&r.key, v)));
        if !by_labels {
            return false;
        }
        let merged = self.merged_expressions();
        let rest_hold = |skip: Option<usize>| {
            merged.iter().enumerate().all(|(i, r)| {
                Some(i) == skip
                    || match r.operator {
                        Operator::In => r.values.iter().any(|v| tag(&r.key, v)),
                        Operator::NotIn => r.matches(labels),
                        Operator::Exists => labels.contains_key(&r.key),
                        Operator::DoesNotExist => !labels.contains_key(&r.key),
                    }
            })
        };
        match merged.iter().position(|r| r.operator == Operator::In) {
            None => rest_hold(None),
            Some(i) if merged[i].values.is_empty() => true,
            Some(i) => {
                merged[i].values.iter().any(|v| tag(&merged[i].key, v)) && rest_hold(Some(i))
            }
        }
    }
}

fn too_many() -> String {
    format!("a label selector with more than {MAX_REQUIREMENTS} requirements")
}

fn requirement(e: &Value) -> Result<Requirement, String> {
    let key = e
        .get("key")
        .and_then(Value::as_str)
        .ok_or_else(|| "a matchExpressions entry without a key".to_string())?;
    check_key(key)?;
    let operator = match e.get("operator").and_then(Value::as_str) {
        Some("In") => Operator::In,
        Some("NotIn") => Operator::NotIn,
        Some("Exists") => Operator::Exists,
        Some("DoesNotExist") => Operator::DoesNotExist,
        Some(_) => {
            return Err(format!(
                "an operator on {key:?} that a label selector does not have (In, NotIn, Exists, DoesNotExist)"
            ))
        }
        None => return Err(format!("a matchExpressions entry on {key:?} without an operator")),
    };
    let values: Vec<&str> = match e.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(vs)) => {
            if vs.len() > MAX_VALUES {
                return Err(format!("more than {MAX_VALUES} values on {key:?}"));
            }
            vs.iter()
                .map(|v| {
                    v.as_str()
                        .ok_or_else(|| format!("a value on {key:?} that is not a string"))
                })
                .collect::<Result<_, _>>()?
        }
        Some(_) => return Err(format!("values on {key:?} that are not a list")),
    };
    for v in &values {
        check_value(v)?;
    }
    match operator {
        Operator::In | Operator::NotIn if values.is_empty() => {
            return Err(format!("In/NotIn on {key:?} without values"))
        }
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
            return Err(format!("Exists/DoesNotExist on {key:?} with values"))
        }
        _ => {}
    }
    Ok(Requirement {
        key: key.to_string(),
        operator,
        values: values.into_iter().map(str::to_string).collect(),
    })
}

fn check_key(k: &str) -> Result<(), String> {
    if k.is_empty() || k.len() > MAX_KEY_BYTES {
        return Err("a label key that is empty or too long".to_string());
    }
    Ok(())
}

fn check_value(v: &str) -> Result<(), String> {
    if v.len() > MAX_VALUE_BYTES {
        return Err("a label value longer than 63 bytes".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The cases of apimachinery's `Requirement.Matches` comment, (1) to (4), and
    //! `NewRequirement`'s value-count rules.
    use super::*;
    use serde_json::json;

    use crate::testing::labels;

    fn sel(v: Value) -> Selector {
        Selector::from_value(&v).unwrap()
    }

    #[test]
    fn empty_selects_everything() {
        assert!(sel(json!({})).matches(&labels(&[])));
        assert!(sel(json!({"matchLabels": {}})).matches(&labels(&[("a", "b")])));
    }

    #[test]
    fn match_labels_are_equals_and_anded() {
        let s = sel(json!({"matchLabels": {"role": "cp", "cluster": "c1"}}));
        assert!(s.matches(&labels(&[("role", "cp"), ("cluster", "c1"), ("x", "y")])));
        assert!(!s.matches(&labels(&[("role", "cp")])));
        assert!(!s.matches(&labels(&[("role", "cp"), ("cluster", "c2")])));
    }

    #[test]
    fn in_needs_the_key_and_one_of_the_values() {
        // (2) In: Labels has the key and its value is in the set.
        let s = sel(
            json!({"matchExpressions": [{"key": "r", "operator": "In", "values": ["a", "b"]}]}),
        );
        assert!(s.matches(&labels(&[("r", "b")])));
        assert!(!s.matches(&labels(&[("r", "c")])));
        assert!(!s.matches(&labels(&[])));
    }

    #[test]
    fn notin_matches_a_missing_key() {
        // (3) NotIn with the key: its value is not in the set; (4) NotIn without the key: true.
        let s =
            sel(json!({"matchExpressions": [{"key": "r", "operator": "NotIn", "values": ["a"]}]}));
        assert!(s.matches(&labels(&[("r", "b")])));
        assert!(!s.matches(&labels(&[("r", "a")])));
        assert!(s.matches(&labels(&[])));
    }

    #[test]
    fn exists_and_does_not_exist() {
        // (1) Exists: the key is there, whatever its value (the empty string too).
        let e = sel(json!({"matchExpressions": [{"key": "r", "operator": "Exists"}]}));
        assert!(e.matches(&labels(&[("r", "")])));
        assert!(!e.matches(&labels(&[("s", "x")])));
        // (4) DoesNotExist: the key is absent.
        let d = sel(json!({"matchExpressions": [{"key": "r", "operator": "DoesNotExist"}]}));
        assert!(d.matches(&labels(&[("s", "x")])));
        assert!(!d.matches(&labels(&[("r", "x")])));
    }

    #[test]
    fn labels_and_expressions_are_anded() {
        let s = sel(json!({
            "matchLabels": {"a": "1"},
            "matchExpressions": [{"key": "b", "operator": "Exists"}]
        }));
        assert!(s.matches(&labels(&[("a", "1"), ("b", "")])));
        assert!(!s.matches(&labels(&[("a", "1")])));
        assert!(!s.matches(&labels(&[("b", "x")])));
    }

    #[test]
    fn what_apimachinery_refuses_is_an_error() {
        for bad in [
            json!({"matchExpressions": [{"key": "r", "operator": "Gt", "values": ["1"]}]}),
            json!({"matchExpressions": [{"key": "r", "operator": "In", "values": []}]}),
            json!({"matchExpressions": [{"key": "r", "operator": "NotIn"}]}),
            json!({"matchExpressions": [{"key": "r", "operator": "Exists", "values": ["x"]}]}),
            json!({"matchExpressions": [{"key": "r", "operator": "DoesNotExist", "values": ["x"]}]}),
            json!({"matchExpressions": [{"operator": "Exists"}]}),
            json!({"matchLabels": {"a": 1}}),
            json!({"matchLabels": ["a"]}),
            json!("app=x"),
        ] {
            assert!(Selector::from_value(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn too_many_requirements_are_unreadable() {
        let exprs: Vec<Value> = (0..=MAX_REQUIREMENTS)
            .map(|i| json!({"key": format!("k{i}"), "operator": "Exists"}))
            .collect();
        assert!(Selector::from_value(&json!({ "matchExpressions": exprs })).is_err());
    }

    #[test]
    fn an_empty_match_labels_value_is_exists_to_nsx() {
        // builder.go updateExpressionsMatchLabels: `k|` EQUALS, the condition Exists builds.
        let s = sel(json!({"matchLabels": {"role": ""}}));
        assert!(
            !s.matches(&labels(&[("role", "cp")])),
            "apimachinery: role=\"\" only"
        );
        assert!(s.matches_as_nsx(&labels(&[("role", "cp")])));
        assert!(s.matches_as_nsx(&labels(&[("role", "")])));
        assert!(!s.matches_as_nsx(&labels(&[("other", "cp")])));
        let e =
            sel(json!({"matchExpressions": [{"key": "r", "operator": "In", "values": ["", "x"]}]}));
        assert!(e.matches_as_nsx(&labels(&[("r", "y")])));
    }

    #[test]
    fn in_expressions_on_one_key_merge_by_intersection() {
        // builder.go mergeSelectorMatchExpression: In values intersected.
        let s = sel(json!({"matchExpressions": [
            {"key": "z", "operator": "In", "values": ["a", "b"]},
            {"key": "z", "operator": "In", "values": ["b", "c"]},
            {"key": "k", "operator": "Exists"}
        ]}));
        assert_eq!(s.merged_expressions().len(), 2);
        assert!(s.matches_as_nsx(&labels(&[("z", "b"), ("k", "")])));
        assert!(!s.matches_as_nsx(&labels(&[("z", "a"), ("k", "")])));
        assert!(!s.matches_as_nsx(&labels(&[("z", "b")])));
        // An empty intersection builds no condition, and the other expressions go with it.
        let empty = sel(json!({"matchLabels": {"m": "1"}, "matchExpressions": [
            {"key": "z", "operator": "In", "values": ["a"]},
            {"key": "z", "operator": "In", "values": ["c"]},
            {"key": "k", "operator": "Exists"}
        ]}));
        assert!(!empty.matches(&labels(&[("m", "1")])));
        assert!(empty.matches_as_nsx(&labels(&[("m", "1")])));
        assert!(!empty.matches_as_nsx(&labels(&[("m", "2")])));
    }
}
