//! `Status` error bodies with the messages, reasons and details a real
//! kube-apiserver sends (k8s.io/apimachinery/pkg/api/errors), so a client's
//! error handling meets what it will meet in production.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

use crate::resources::ResourceDef;

/// An API error, rendered as a `Status` object.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

fn details(def: Option<&ResourceDef>, name: Option<&str>) -> Value {
    let mut d = Map::new();
    if let Some(n) = name.filter(|n| !n.is_empty()) {
        d.insert("name".into(), json!(n));
    }
    if let Some(def) = def {
        // Go's omitempty: the core group is left out.
        if !def.group.is_empty() {
            d.insert("group".into(), json!(def.group));
        }
        d.insert("kind".into(), json!(def.plural));
    }
    Value::Object(d)
}

impl ApiError {
    /// `virtualmachines.vmoperator.vmware.com "x" not found`
    pub fn not_found(def: &ResourceDef, name: &str) -> Self {
        ApiError {
            code: 404,
            reason: "NotFound",
            message: format!("{} \"{}\" not found", def.qualified(), name),
            details: Some(details(Some(def), Some(name))),
        }
    }

    /// What the real server answers for a path it does not serve.
    pub fn no_route() -> Self {
        ApiError {
            code: 404,
            reason: "NotFound",
            message: "the server could not find the requested resource".into(),
            details: Some(json!({})),
        }
    }

    pub fn already_exists(def: &ResourceDef, name: &str) -> Self {
        ApiError {
            code: 409,
            reason: "AlreadyExists",
            message: format!("{} \"{}\" already exists", def.qualified(), name),
            details: Some(details(Some(def), Some(name))),
        }
    }

    pub fn conflict(def: &ResourceDef, name: &str) -> Self {
        ApiError {
            code: 409,
            reason: "Conflict",
            message: format!(
                "Operation cannot be fulfilled on {} \"{}\": the object has been modified; please apply your changes to the latest version and try again",
                def.qualified(),
                name
            ),
            details: Some(details(Some(def), Some(name))),
        }
    }

    /// `machines.cluster.x-k8s.io is forbidden: User "u" cannot list resource
    /// "machines" in API group "cluster.x-k8s.io" in the namespace "ns1"`
    pub fn forbidden(
        user: &str,
        verb: &str,
        group: &str,
        plural: &str,
        sub: Option<&str>,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> Self {
        let qualified = if group.is_empty() {
            plural.to_string()
        } else {
            format!("{plural}.{group}")
        };
        let resource = match sub {
            Some(s) => format!("{plural}/{s}"),
            None => plural.to_string(),
        };
        let subject = match name {
            Some(n) => format!("{qualified} \"{n}\""),
            None => qualified,
        };
        let scope = match namespace {
            Some(ns) => format!("in the namespace \"{ns}\""),
            None => "at the cluster scope".to_string(),
        };
        let mut d = Map::new();
        if let Some(n) = name {
            d.insert("name".into(), json!(n));
        }
        if !group.is_empty() {
            d.insert("group".into(), json!(group));
        }
        d.insert("kind".into(), json!(plural));
        ApiError {
            code: 403,
            reason: "Forbidden",
            message: format!(
                "{subject} is forbidden: User \"{user}\" cannot {verb} resource \"{resource}\" in API group \"{group}\" {scope}"
            ),
            details: Some(Value::Object(d)),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError {
            code: 400,
            reason: "BadRequest",
            message: message.into(),
            details: None,
        }
    }

    pub fn method_not_allowed(verb: &str) -> Self {
        ApiError {
            code: 405,
            reason: "MethodNotAllowed",
            message: format!(
                "the server does not allow this method on the requested resource ({verb})"
            ),
            details: Some(json!({})),
        }
    }

    pub fn unsupported_media(ct: &str) -> Self {
        ApiError {
            code: 415,
            reason: "UnsupportedMediaType",
            message: format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got {ct:?})"),
            details: None,
        }
    }

    /// No conversion: the fake serves an object only at the version its fixture
    /// was written in. A real server with a broken conversion webhook answers
    /// this way, which is why a 500 (not an empty list) is the honest answer.
    pub fn no_conversion(def: &ResourceDef, stored: &str) -> Self {
        ApiError {
            code: 500,
            reason: "InternalError",
            message: format!(
                "conversion webhook for {}/{}, Kind={} failed: etcdnet-fakeapi does not convert between versions: object stored at {}, requested {}",
                def.group, stored, def.kind, stored, def.version
            ),
            details: None,
        }
    }

    pub fn to_value(&self) -> Value {
        let mut v = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            v["details"] = d.clone();
        }
        v
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (
            code,
            [(header::CONTENT_TYPE, "application/json")],
            self.to_value().to_string(),
        )
            .into_response()
    }
}

/// A JSON answer with the given status code.
pub fn json_response(code: StatusCode, v: &Value) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}
