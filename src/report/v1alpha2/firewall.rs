//! The firewall engine's one evaluation contract: what a check, a path and a blocking rule come
//! to are the engine's own types (`analyse::firewall`: `SideOutcome`, `PathOutcome`,
//! `PathEvaluation`, `Blocking`, `PathRef`), serialized as they are. Their `source` is the rule
//! type they carry, a [`Source`]: the SecurityPolicies' `RuleRef` (`networkPolicy` in the json,
//! `network.rs`) or NSX Manager's `DfwRule` (`nsxManager`, `nsx_manager.rs`), each with its
//! words.
//!
//! The schema keeps the names and words each source's types had before they were one type
//! (`SideOutcome`/`DfwCheck`, `PathOutcome`/`DfwOutcome`, `PathEvaluation`/`DfwPathEvaluation`,
//! `BlockingRule`/`DfwBlockingRule`): a generic type's derived schema would be named
//! `SideOutcome_for_RuleRef` and carry one set of descriptions, so the schema is written here,
//! once, from each source's [`Words`]. tests/it/schema.rs holds it to the committed schema.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

use crate::analyse::firewall;
pub use crate::analyse::firewall::PathRef;

/// A schema's name, its description, and its parts' descriptions in order (`None`: none).
pub struct Doc {
    pub name: &'static str,
    pub about: &'static str,
    pub parts: &'static [Option<&'static str>],
}

/// A source's words in the schema.
pub struct Words {
    /// [`firewall::SideOutcome`]: Matched, NoVisibleRule, CannotDecide.
    pub check: Doc,
    /// [`firewall::PathOutcome`]: Dropped, Rejected, Allowed, NoVisibleRule, CannotDecide.
    pub outcome: Doc,
    /// [`firewall::PathEvaluation`]: egress, ingress, and notRealized (absent from the parts:
    /// the source has no such field).
    pub path: Doc,
    /// [`firewall::Blocking`]: paths.
    pub blocking: Doc,
}

/// A source's rule, as the contract names it, with its words.
pub trait Source: JsonSchema {
    const WORDS: Words;
}

/// `schema` with `description` when there is one.
fn described(mut schema: Schema, description: Option<&str>) -> Schema {
    if let Some(d) = description {
        schema.insert("description".into(), d.into());
    }
    schema
}

/// One variant of an internally tagged enum: its tag, and its fields' schemas in order.
fn variant(tag: &str, name: &str, about: Option<&str>, fields: Vec<(&str, Schema)>) -> Schema {
    let mut properties = serde_json::Map::new();
    properties.insert(
        tag.into(),
        json_schema!({"const": name, "type": "string"}).into(),
    );
    let mut required = vec![tag.to_string()];
    for (field, schema) in fields {
        // An Option is left out when absent: not required.
        if !schema.as_object().is_some_and(|o| o.contains_key("anyOf")) {
            required.push(field.to_string());
        }
        properties.insert(field.into(), schema.into());
    }
    described(
        json_schema!({"properties": properties, "required": required, "type": "object"}),
        about,
    )
}

fn one_of(about: &str, variants: Vec<Schema>) -> Schema {
    json_schema!({"description": about, "oneOf": variants})
}

impl<R: Source> JsonSchema for firewall::SideOutcome<R> {
    fn schema_name() -> Cow<'static, str> {
        R::WORDS.check.name.into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let d = R::WORDS.check;
        let rule = g.subschema_for::<R>();
        let why = g.subschema_for::<String>();
        one_of(
            d.about,
            vec![
                variant("result", "Matched", d.parts[0], vec![("rule", rule)]),
                variant("result", "NoVisibleRule", d.parts[1], vec![]),
                variant("result", "CannotDecide", d.parts[2], vec![("why", why)]),
            ],
        )
    }
}

impl<R: Source> JsonSchema for firewall::PathOutcome<R> {
    fn schema_name() -> Cow<'static, str> {
        R::WORDS.outcome.name.into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let d = R::WORDS.outcome;
        let rule = g.subschema_for::<R>();
        let maybe = g.subschema_for::<Option<R>>();
        let why = g.subschema_for::<String>();
        one_of(
            d.about,
            vec![
                variant(
                    "outcome",
                    "Dropped",
                    d.parts[0],
                    vec![("rule", rule.clone())],
                ),
                variant("outcome", "Rejected", d.parts[1], vec![("rule", rule)]),
                variant(
                    "outcome",
                    "Allowed",
                    d.parts[2],
                    vec![("egress", maybe.clone()), ("ingress", maybe)],
                ),
                variant("outcome", "NoVisibleRule", d.parts[3], vec![]),
                variant("outcome", "CannotDecide", d.parts[4], vec![("why", why)]),
            ],
        )
    }
}

impl<R: Source> JsonSchema for firewall::PathEvaluation<R> {
    fn schema_name() -> Cow<'static, str> {
        R::WORDS.path.name.into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let d = R::WORDS.path;
        let check = g.subschema_for::<firewall::SideOutcome<R>>();
        let mut properties = serde_json::Map::new();
        properties.insert("port".into(), g.subschema_for::<u16>().into());
        properties.insert("from".into(), g.subschema_for::<String>().into());
        properties.insert("to".into(), g.subschema_for::<String>().into());
        properties.insert(
            "outcome".into(),
            g.subschema_for::<firewall::PathOutcome<R>>().into(),
        );
        properties.insert("egress".into(), described(check.clone(), d.parts[0]).into());
        properties.insert("ingress".into(), described(check, d.parts[1]).into());
        if let Some(about) = d.parts.get(2) {
            let not_realized = g.subschema_for::<Option<R>>();
            properties.insert("notRealized".into(), described(not_realized, *about).into());
        }
        json_schema!({
            "description": d.about,
            "properties": properties,
            "required": ["port", "from", "to", "outcome", "egress", "ingress"],
            "type": "object",
        })
    }
}

impl<R: Source> JsonSchema for firewall::Blocking<R> {
    fn schema_name() -> Cow<'static, str> {
        R::WORDS.blocking.name.into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let d = R::WORDS.blocking;
        let paths = described(g.subschema_for::<Vec<PathRef>>(), d.parts[0]);
        json_schema!({
            "description": d.about,
            "properties": {"paths": paths, "rule": g.subschema_for::<R>()},
            "required": ["rule", "paths"],
            "type": "object",
        })
    }
}
