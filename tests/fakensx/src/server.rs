//! The [`FakeNsx`] handle and the HTTP side: authentication (basic, or a session with its
//! XSRF token), authorization by the user's privileges, injected faults, slow and trickling
//! answers, the request log, and the routes.
//!
//! Authentication as the API reference's CreateAuthenticatedSession says: `POST
//! /api/session/create` with the form `j_username`, `j_password` answers 200 with
//! `set-cookie: JSESSIONID=…; Path=/; Secure; HttpOnly; SameSite=Lax` and `x-xsrf-token: …`;
//! later requests send both back; `POST /api/session/destroy` ends the session. Errors in the
//! `ApiError` shape (`error_code`, `module_name`, `error_message`; lkx007/nsx-t-api-python
//! `docs/ApiError.md`, generated from the manager's schema) with the `httpStatus` the Policy API
//! adds. As the real manager answers authentication (vmware/vmware-nsxlib
//! `vmware_nsxlib/v3/utils.py` `http_error_to_exception`: FORBIDDEN with `error_code` 403 is
//! `InvalidCredentials`, with 98 `BadXSRFToken`, the one its `ExceptionConfig` answers with a
//! new session):
//! - a refused login (a wrong password, an unknown user, a locked account) is **403** with
//!   `error_code` 403 (Broadcom KB 440528: a session create with a mangled password answers
//!   `HTTP/1.1 403 Forbidden`), and so is a refused basic header or no credentials at all (KB
//!   321989: "API request to NSX Manager failed. Status code: 403", "Not authenticated");
//! - a session NSX no longer knows (expired, destroyed) or a wrong XSRF token is **403** with
//!   `error_code` 98;
//! - after `api_max_auth_failures` (5) failed authentications of a user within
//!   `api_failed_auth_reset_period` (900 s), the user is locked out of the API for
//!   `api_failed_auth_lockout_period` (900 s), its right password refused too (the API
//!   reference's `AuthenticationPolicyProperties`, their defaults; [`AuthPolicy`]);
//! - a session expires after `session_timeout` idle (the API reference's
//!   `HttpServiceProperties.session_timeout`, default 1800 s), and a test can make it expire
//!   after N requests or an age ([`FakeNsx::expire_sessions`]).
//!
//! Unconfirmed, the fake's choice: the `error_code` of "no credentials at all" (403, as a bad
//! password's).

use std::collections::{BTreeMap, BTreeSet};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use base64::Engine;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::dfw::{self, TraceflowOutcome, TraceflowQuery};
use crate::list::{self, ListError};
use crate::members;
use crate::traceflow;
use crate::world::{Layout, Privilege, World};

/// A harness-given Traceflow oracle: the answer to each traceflow's question.
pub type Oracle = Arc<dyn Fn(&TraceflowQuery) -> TraceflowOutcome + Send + Sync>;

/// How a request authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthUsed {
    /// No credentials, or an unknown session.
    None,
    /// An `Authorization: Basic` header of this known user with the right password.
    Basic(String),
    /// A valid `JSESSIONID` cookie (and XSRF token) of this user's session.
    Session(String),
    /// `POST /api/session/create` with this user's right password.
    Login(String),
    /// Credentials were sent but refused (bad password, unknown user, a session without its
    /// XSRF token); the user name claimed, when there was one.
    Refused(Option<String>),
}

impl AuthUsed {
    /// The user the request was made as, when it authenticated.
    pub fn user(&self) -> Option<&str> {
        match self {
            AuthUsed::Basic(u) | AuthUsed::Session(u) | AuthUsed::Login(u) => Some(u),
            _ => None,
        }
    }
}

/// One request the fake received. Never holds a password, a cookie or a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The path, e.g. `/policy/api/v1/infra/domains/default/security-policies`.
    pub path: String,
    /// The raw query string, "" if none.
    pub query: String,
    pub auth: AuthUsed,
    /// The status answered.
    pub status: u16,
}

impl Request {
    /// A decoded query parameter (first value).
    pub fn param(&self, key: &str) -> Option<String> {
        form_urlencoded::parse(self.query.as_bytes())
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    }

    /// `GET /path?query` as one string, for assertion messages.
    pub fn line(&self) -> String {
        if self.query.is_empty() {
            format!("{} {}", self.method, self.path)
        } else {
            format!("{} {}?{}", self.method, self.path, self.query)
        }
    }
}

/// A status to answer instead of the real one: for requests whose path starts with `path`
/// (and of `method`, when given), `times` times (`None`: always).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub method: Option<String>,
    pub path: String,
    pub status: u16,
    /// `Retry-After` seconds (a 429 or 503 carries one on a real manager).
    pub retry_after: Option<u64>,
    pub times: Option<u32>,
}

impl Fault {
    /// `status` for every request under `path`, always.
    pub fn new(path: &str, status: u16) -> Fault {
        Fault {
            method: None,
            path: path.into(),
            status,
            retry_after: None,
            times: None,
        }
    }
    pub fn times(mut self, n: u32) -> Fault {
        self.times = Some(n);
        self
    }
    pub fn retry_after(mut self, secs: u64) -> Fault {
        self.retry_after = Some(secs);
        self
    }
    pub fn method(mut self, m: &str) -> Fault {
        self.method = Some(m.to_ascii_uppercase());
        self
    }
}

/// How the fake behaves beyond its world.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where to listen (loopback only).
    pub addr: SocketAddr,
    /// Every answer waits this long first (a slow manager).
    pub response_delay: Duration,
    /// Every body sent in chunks of this many bytes, this long apart (a trickling manager).
    pub trickle: Option<(usize, Duration)>,
    /// How long after its creation a traceflow's observations appear (its state
    /// `IN_PROGRESS` until then, then `FINISHED`).
    pub observation_delay: Duration,
    /// Traceflows alive at once; one more is refused with a 400.
    pub max_traceflows: usize,
    /// The page size when a list request names none.
    pub default_page_size: usize,
    /// The observations' `resource_type` family.
    pub observation_flavour: traceflow::ObservationFlavour,
    /// Lockout and session expiry.
    pub auth_policy: AuthPolicy,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            response_delay: Duration::ZERO,
            trickle: None,
            observation_delay: Duration::from_millis(300),
            max_traceflows: 16,
            default_page_size: list::MAX_PAGE,
            observation_flavour: traceflow::ObservationFlavour::Base,
            auth_policy: AuthPolicy::default(),
        }
    }
}

/// A traceflow as the fake saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceflowRecord {
    pub id: String,
    /// `/infra/traceflows/<id>` (or under a project).
    pub path: String,
    /// Who created it.
    pub user: String,
    /// The question, when the config could be read and its port is known.
    pub query: Option<TraceflowQuery>,
    /// The oracle's answer.
    pub outcome: Option<TraceflowOutcome>,
    /// The `TraceflowConfig` as it was created (what the client sent).
    pub config: Value,
}

struct Live {
    record: TraceflowRecord,
    config: Value,
    created: Instant,
    observations: Vec<Value>,
}

struct Session {
    user: String,
    xsrf: String,
    created: Instant,
    last_used: Instant,
    /// Requests made in it (its login not counted).
    requests: u32,
}

/// When the manager locks a user out of its API, and when sessions end: NSX's defaults
/// (`AuthenticationPolicyProperties`: `api_max_auth_failures` 5, `api_failed_auth_reset_period`
/// 900 s, `api_failed_auth_lockout_period` 900 s; `HttpServiceProperties.session_timeout`
/// 1800 s), and a test's own expiry of sessions (none by default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthPolicy {
    pub max_failures: u32,
    pub reset_period: Duration,
    pub lockout_period: Duration,
    pub session_idle: Duration,
    /// A session ends after this many requests in it (`None`: never for that).
    pub session_max_requests: Option<u32>,
    /// A session ends this long after its login (`None`: never for that).
    pub session_max_age: Option<Duration>,
}

impl Default for AuthPolicy {
    fn default() -> Self {
        AuthPolicy {
            max_failures: 5,
            reset_period: Duration::from_secs(900),
            lockout_period: Duration::from_secs(900),
            session_idle: Duration::from_secs(1800),
            session_max_requests: None,
            session_max_age: None,
        }
    }
}

/// One traceflow create or delete as it took effect, in the order the fake applied them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceflowOp {
    /// `PUT` or `DELETE`.
    pub method: String,
    /// `/infra/traceflows/<id>` (or under a project).
    pub path: String,
    /// For a DELETE: whether the traceflow existed then (a DELETE of none answers 200 too).
    pub existed: bool,
}

#[derive(Default)]
struct State {
    requests: Vec<Request>,
    /// Where every request is also written ([`FakeNsx::log_requests_to`]).
    log: Option<std::fs::File>,
    leaks: Vec<String>,
    faults: Vec<Fault>,
    sessions: BTreeMap<String, Session>,
    /// Each user's recent failed authentications, and until when it is locked out.
    failures: BTreeMap<String, Vec<Instant>>,
    locked_until: BTreeMap<String, Instant>,
    logins: usize,
    auth_failures: usize,
    expired_sessions: usize,
    traceflow_ops: Vec<TraceflowOp>,
    traceflows: BTreeMap<String, Live>,
    deleted: Vec<TraceflowRecord>,
    created: usize,
    max_alive: usize,
    next: u64,
    /// The rules' hit counters the test publishes (`crate::enforce`).
    counters: crate::enforce::Counters,
}

struct Index {
    objects: BTreeMap<String, Value>,
    collections: BTreeMap<String, Vec<Value>>,
    searchable: Vec<Value>,
}

pub(crate) struct Shared {
    world: World,
    index: Index,
    opts: Mutex<Options>,
    oracle: Mutex<Option<Oracle>>,
    state: Mutex<State>,
    seed: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking handler thread must not take the fake's state with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn collection_of(path: &str) -> String {
    path.rsplit_once('/')
        .map(|(c, _)| c.to_string())
        .unwrap_or_default()
}

impl Index {
    fn new(w: &World) -> Index {
        let mut objects = BTreeMap::new();
        let mut collections: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        let base = w.layout.base();
        for c in [
            format!("{base}/security-policies"),
            format!("{base}/groups"),
            format!("{}/services", w.layout.services_base()),
        ] {
            collections.entry(c).or_default();
        }
        let mut searchable = Vec::new();
        let path = |v: &Value| {
            v.get("path")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        for p in &w.policies {
            let pp = path(p);
            objects.insert(pp.clone(), p.clone());
            let mut listed = p.clone();
            if let Some(o) = listed.as_object_mut() {
                o.remove("rules");
            }
            collections
                .entry(collection_of(&pp))
                .or_default()
                .push(listed.clone());
            searchable.push(listed);
            let rules = collections.entry(format!("{pp}/rules")).or_default();
            for r in p
                .get("rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                rules.push(r.clone());
                objects.insert(path(r), r.clone());
                searchable.push(r.clone());
            }
        }
        // A hostile manager's policies without a path (`World::with_pathless`), listed after
        // the world's own in its tree.
        collections
            .entry(format!("{base}/security-policies"))
            .or_default()
            .extend(w.pathless_policies.iter().cloned());
        for o in w.groups.iter().chain(&w.services).chain(&w.ports) {
            let op = path(o);
            objects.insert(op.clone(), o.clone());
            collections
                .entry(collection_of(&op))
                .or_default()
                .push(o.clone());
            searchable.push(o.clone());
        }
        // Domains (vsphere-automation-sdk-go `services/nsxt/infra/DomainsTypes.go`, `GET
        // /policy/api/v1/infra/domains`; a project's `orgs/projects/infra/DomainsTypes.go`):
        // `default` of `/infra` always (every manager has it), and every domain a policy or a
        // group of the world is in, each with its (maybe empty) collections. `/global-infra`
        // is served only by a Local Manager in Federation: not here (404).
        let mut domains: BTreeMap<String, Vec<String>> = BTreeMap::new();
        domains
            .entry("/infra".into())
            .or_default()
            .push("default".into());
        for o in w.policies.iter().chain(&w.groups) {
            let p = path(o);
            if let Some((parent, rest)) = p.split_once("/domains/") {
                if let Some(id) = rest.split('/').next() {
                    domains
                        .entry(parent.to_string())
                        .or_default()
                        .push(id.to_string());
                }
            }
        }
        for (parent, mut ids) in domains {
            ids.sort();
            ids.dedup();
            let mut listed = Vec::new();
            for id in ids {
                let dp = format!("{parent}/domains/{id}");
                let d = json!({"resource_type": "Domain", "id": id, "display_name": id,
                    "path": dp, "parent_path": parent, "relative_path": id,
                    "marked_for_delete": false, "_revision": 0});
                listed.push(d.clone());
                objects.insert(dp.clone(), d);
                collections
                    .entry(format!("{dp}/security-policies"))
                    .or_default();
                collections.entry(format!("{dp}/groups")).or_default();
            }
            collections
                .entry(format!("{parent}/domains"))
                .or_default()
                .extend(listed);
        }
        // NSX 9's VPC security profile: every project's pre-created `default` profile ("All
        // VPCs within a project are automatically associated with a pre-created default
        // security profile", the API reference's `VpcSecurityProfile`, 9.1.0), its east-west
        // strategy as the reference's ListVpcSecurityProfiles example names it
        // (`/orgs/default/projects/default/security-strategies/none`), that strategy with the
        // fields every policy object has and no rule template (its rules are the world's VPC
        // policies). No `security-profile-attachments` (9.1): 404, as an NSX 9.0 answers.
        if let Layout::Vpc { org, project, .. } = &w.layout {
            let pp = format!("/orgs/{org}/projects/{project}/vpc-security-profiles/default");
            let strategy = "/orgs/default/projects/default/security-strategies/none";
            objects.insert(
                pp.clone(),
                json!({"resource_type": "VpcSecurityProfile", "id": "default",
                    "display_name": "default", "path": pp, "is_default": true,
                    "north_south_firewall": {"enabled": false},
                    "east_west_firewall": {"security_strategies": [strategy]},
                    "marked_for_delete": false, "_revision": 0}),
            );
            objects.insert(
                strategy.into(),
                json!({"resource_type": "SecurityStrategy", "id": "none",
                    "display_name": "none", "path": strategy,
                    "marked_for_delete": false, "_revision": 0}),
            );
        }
        searchable.extend(w.vms.iter().cloned());
        searchable.extend(w.vifs.iter().cloned());
        Index {
            objects,
            collections,
            searchable,
        }
    }
}

/// An answer before the wire: status, extra headers, JSON body.
struct Answer {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Value,
}

fn status_name(status: u16) -> &'static str {
    match status {
        400 => "BAD_REQUEST",
        401 => "UNAUTHORIZED",
        403 => "FORBIDDEN",
        404 => "NOT_FOUND",
        405 => "METHOD_NOT_ALLOWED",
        429 => "TOO_MANY_REQUESTS",
        500 => "INTERNAL_SERVER_ERROR",
        503 => "SERVICE_UNAVAILABLE",
        _ => "ERROR",
    }
}

fn error(status: u16, code: u64, module: &str, message: &str) -> Answer {
    Answer {
        status,
        headers: vec![],
        body: json!({
            "httpStatus": status_name(status),
            "error_code": code,
            "module_name": module,
            "error_message": message,
        }),
    }
}

fn ok(body: Value) -> Answer {
    Answer {
        status: 200,
        headers: vec![],
        body,
    }
}

fn not_found(path: &str) -> Answer {
    error(
        404,
        500090,
        "Policy",
        &format!("The path={path} is invalid or the object does not exist."),
    )
}

fn unauthorized() -> Answer {
    // A 403 with error_code 403 (InvalidCredentials): a wrong password and a locked account
    // answer the same, so a guesser learns nothing from it.
    error(
        403,
        403,
        "common-services",
        "The credentials were incorrect or the account specified has been locked.",
    )
}

/// A session NSX no longer knows, or its XSRF token wrong: 403, error_code 98.
fn session_gone() -> Answer {
    error(
        403,
        98,
        "common-services",
        "The session is not valid (expired, ended, or its X-XSRF-TOKEN wrong): log in again.",
    )
}

fn forbidden(what: &str) -> Answer {
    error(
        403,
        401,
        "common-services",
        &format!("The user does not have the permission to {what}."),
    )
}

fn bad_list(e: ListError) -> Answer {
    error(400, 255, "common-services", &e.to_string())
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Shared {
    fn params(query: &str) -> Vec<(String, String)> {
        form_urlencoded::parse(query.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }

    fn page(&self, items: Vec<Value>, query: &str) -> Answer {
        let size = lock(&self.opts).default_page_size;
        match list::page(items, &Self::params(query), size) {
            Ok(v) => ok(v),
            Err(e) => bad_list(e),
        }
    }

    fn token(&self, st: &mut State) -> String {
        use std::hash::{BuildHasher, Hasher};
        st.next += 1;
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(self.seed ^ st.next);
        h.write_u128(now_ms() as u128);
        format!(
            "{:016x}{:016x}",
            h.finish(),
            self.seed.rotate_left(st.next as u32 % 64)
        )
    }

    /// Where a password was sent other than the login form or a basic header: a description
    /// of the place, never the password.
    fn leak_check(
        &self,
        method: &str,
        path: &str,
        query: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Vec<String> {
        let passwords: Vec<&str> = self
            .world
            .users
            .iter()
            .map(|u| u.password.as_str())
            .filter(|p| !p.is_empty())
            .collect();
        let has = |text: &str| passwords.iter().any(|p| text.contains(p));
        let decoded = |s: &str| {
            form_urlencoded::parse(s.as_bytes())
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("&")
        };
        let mut places = Vec::new();
        if has(path) || has(&decoded(path)) {
            places.push("path");
        }
        if has(query) || has(&decoded(query)) {
            places.push("query");
        }
        let mut header_places = Vec::new();
        for (name, value) in headers {
            let v = String::from_utf8_lossy(value.as_bytes());
            if name == "authorization" && v.starts_with("Basic ") {
                continue;
            }
            if has(&v) {
                header_places.push(format!("header {name}"));
            }
        }
        let login = method == "POST" && path == "/api/session/create";
        let text = String::from_utf8_lossy(body);
        if !login && (has(&text) || has(&decoded(&text))) {
            places.push("body");
        }
        places
            .into_iter()
            .map(str::to_string)
            .chain(header_places)
            .map(|p| format!("{method} {path}: a password in the {p}"))
            .collect()
    }

    fn fault(&self, st: &mut State, method: &str, path: &str) -> Option<Answer> {
        let i = st.faults.iter().position(|f| {
            path.starts_with(&f.path)
                && f.method.as_deref().is_none_or(|m| m == method)
                && f.times != Some(0)
        })?;
        let f = &mut st.faults[i];
        if let Some(t) = f.times.as_mut() {
            *t -= 1;
        }
        let mut a = match f.status {
            401 => error(
                401,
                403,
                "common-services",
                "The credentials were incorrect or the account specified has been locked.",
            ),
            403 => forbidden("do this"),
            s => error(s, s as u64, "fake-nsx", "an injected fault"),
        };
        a.status = f.status;
        if let Some(s) = f.retry_after {
            a.headers.push(("retry-after", s.to_string()));
        }
        Some(a)
    }

    fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
        headers
            .get_all("cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }

    /// A failed authentication of `user`: counted toward its lockout ([`AuthPolicy`]).
    fn failed(st: &mut State, user: &str, policy: &AuthPolicy) {
        st.auth_failures += 1;
        let now = Instant::now();
        let recent = st.failures.entry(user.to_string()).or_default();
        recent.retain(|t| now.duration_since(*t) < policy.reset_period);
        recent.push(now);
        // api_max_auth_failures 0 disables the lockout (the CLI guide's set auth-policy api
        // max-auth-failures: "If set to 0, account lockout is disabled").
        if policy.max_failures > 0 && recent.len() as u32 >= policy.max_failures {
            recent.clear();
            st.locked_until
                .insert(user.to_string(), now + policy.lockout_period);
        }
    }

    fn locked(st: &State, user: &str) -> bool {
        st.locked_until
            .get(user)
            .is_some_and(|until| Instant::now() < *until)
    }

    fn authenticate(&self, st: &mut State, headers: &HeaderMap) -> AuthUsed {
        let policy = lock(&self.opts).auth_policy.clone();
        if let Some(h) = headers.get("authorization").and_then(|v| v.to_str().ok()) {
            let Some(b64) = h.strip_prefix("Basic ") else {
                return AuthUsed::Refused(None);
            };
            let Some(text) = base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
            else {
                return AuthUsed::Refused(None);
            };
            let Some((user, pass)) = text.split_once(':') else {
                return AuthUsed::Refused(None);
            };
            return match self.world.user(user) {
                Some(u) if u.password == pass && !Self::locked(st, user) => {
                    AuthUsed::Basic(user.into())
                }
                _ => {
                    Self::failed(st, user, &policy);
                    AuthUsed::Refused(Some(user.into()))
                }
            };
        }
        if let Some(id) = Self::cookie(headers, "JSESSIONID") {
            let now = Instant::now();
            let Some(s) = st.sessions.get_mut(&id) else {
                return AuthUsed::Refused(None);
            };
            let expired = now.duration_since(s.last_used) >= policy.session_idle
                || policy
                    .session_max_age
                    .is_some_and(|age| now.duration_since(s.created) >= age)
                || policy.session_max_requests.is_some_and(|n| s.requests >= n);
            if expired {
                st.sessions.remove(&id);
                st.expired_sessions += 1;
                return AuthUsed::Refused(None);
            }
            let xsrf = headers.get("x-xsrf-token").and_then(|v| v.to_str().ok());
            return if xsrf == Some(s.xsrf.as_str()) {
                s.requests += 1;
                s.last_used = now;
                AuthUsed::Session(s.user.clone())
            } else {
                AuthUsed::Refused(Some(s.user.clone()))
            };
        }
        AuthUsed::None
    }

    fn respond(
        &self,
        method: &Method,
        path: &str,
        query: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> (Answer, AuthUsed) {
        let mut st = lock(&self.state);
        let m = method.as_str();
        if let Some(a) = self.fault(&mut st, m, path) {
            let auth = self.authenticate(&mut st, headers);
            return (a, auth);
        }
        if path == "/api/session/create" && method == Method::POST {
            let form: BTreeMap<String, String> = form_urlencoded::parse(body)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            let user = form.get("j_username").cloned().unwrap_or_default();
            let pass = form.get("j_password").cloned().unwrap_or_default();
            let policy = lock(&self.opts).auth_policy.clone();
            return match self.world.user(&user) {
                Some(u) if u.password == pass && !user.is_empty() && !Self::locked(&st, &user) => {
                    let id = self.token(&mut st).to_uppercase();
                    let xsrf = self.token(&mut st);
                    let now = Instant::now();
                    st.logins += 1;
                    st.sessions.insert(
                        id.clone(),
                        Session {
                            user: user.clone(),
                            xsrf: xsrf.clone(),
                            created: now,
                            last_used: now,
                            requests: 0,
                        },
                    );
                    let mut a = ok(Value::Null);
                    a.headers.push((
                        "set-cookie",
                        format!("JSESSIONID={id}; Path=/; Secure; HttpOnly; SameSite=Lax"),
                    ));
                    a.headers.push(("x-xsrf-token", xsrf));
                    (a, AuthUsed::Login(user))
                }
                _ => {
                    Self::failed(&mut st, &user, &policy);
                    (unauthorized(), AuthUsed::Refused(Some(user)))
                }
            };
        }
        let auth = self.authenticate(&mut st, headers);
        let user = match &auth {
            AuthUsed::Basic(u) | AuthUsed::Session(u) => u.clone(),
            // A session cookie (and no basic header) not honoured: gone, or its token wrong.
            AuthUsed::Refused(_)
                if Self::cookie(headers, "JSESSIONID").is_some()
                    && headers.get("authorization").is_none() =>
            {
                return (session_gone(), auth)
            }
            _ => return (unauthorized(), auth),
        };
        if path == "/api/session/destroy" && method == Method::POST {
            if let Some(id) = Self::cookie(headers, "JSESSIONID") {
                st.sessions.remove(&id);
            }
            return (ok(Value::Null), auth);
        }
        let privileges = self
            .world
            .user(&user)
            .map(|u| u.privileges())
            .unwrap_or_default();
        let tf = traceflow_path(path);
        let need = match (method, &tf) {
            (&Method::GET, _) => Privilege::Read,
            (_, Some(_)) => Privilege::Traceflow,
            _ => Privilege::Write,
        };
        if !privileges.contains(&need) {
            let what = match need {
                Privilege::Read => "read this object",
                Privilege::Traceflow => "run Traceflow",
                Privilege::Write => "change this object",
            };
            return (forbidden(what), auth);
        }
        if let Some((prefix, id, sub)) = tf {
            return (
                self.traceflow(
                    st,
                    method,
                    &prefix,
                    id.as_deref(),
                    sub.as_deref(),
                    query,
                    body,
                    &user,
                ),
                auth,
            );
        }
        drop(st);
        if method != Method::GET {
            return (
                error(
                    400,
                    500012,
                    "fake-nsx",
                    "the fake manager implements no writes but Traceflow",
                ),
                auth,
            );
        }
        (self.get(path, query), auth)
    }

    fn get(&self, path: &str, query: &str) -> Answer {
        let w = &self.world;
        let params = Self::params(query);
        let param = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        match path {
            "/api/v1/fabric/virtual-machines" => {
                let vms = w
                    .vms
                    .iter()
                    .filter(|v| {
                        ["display_name", "external_id"].iter().all(|k| {
                            param(k).is_none_or(|want| {
                                v.get(*k).and_then(Value::as_str) == Some(want.as_str())
                            })
                        })
                    })
                    .cloned()
                    .collect();
                return self.page(vms, query);
            }
            "/api/v1/fabric/vifs" => {
                let vifs = w
                    .vifs
                    .iter()
                    .filter(|v| {
                        [
                            ("owner_vm_id", "owner_vm_id"),
                            ("lport_attachment_id", "lport_attachment_id"),
                            ("vm_id", "owner_vm_id"),
                        ]
                        .iter()
                        .all(|(p, k)| {
                            param(p).is_none_or(|want| {
                                v.get(*k).and_then(Value::as_str) == Some(want.as_str())
                            })
                        })
                    })
                    .cloned()
                    .collect();
                return self.page(vifs, query);
            }
            "/policy/api/v1/search/query" | "/api/v1/search/query" => {
                let Some(q) = param("query") else {
                    return bad_list(ListError::Query(String::new()));
                };
                return match list::search(&self.index.searchable, &q) {
                    Ok(found) => self.page(found, query),
                    Err(e) => bad_list(e),
                };
            }
            _ => {}
        }
        let Some(p) = path.strip_prefix("/policy/api/v1") else {
            return not_found(path);
        };
        if let Some(a) = self.group_members(p, query) {
            return a;
        }
        if let Some(a) = self.associations(p, query) {
            return a;
        }
        if let Some(a) = self.enforcement(p, query) {
            return a;
        }
        if let Some(o) = self.index.objects.get(p) {
            return ok(o.clone());
        }
        if let Some(items) = self.index.collections.get(p) {
            let mut items = items.clone();
            if p.ends_with("/security-policies")
                && param("include_rule_count") != Some("true".into())
            {
                for i in &mut items {
                    if let Some(o) = i.as_object_mut() {
                        o.remove("rule_count");
                    }
                }
            }
            return self.page(items, query);
        }
        not_found(p)
    }

    /// `<tree>/virtual-machine-group-associations?vm_external_id=` and
    /// `<tree>/group-associations?intent_path=` (vsphere-automation-sdk-go
    /// `services/nsxt/infra/VirtualMachineGroupAssociationsTypes.go`, `GroupAssociationsTypes.go`,
    /// the same under `orgs/projects/infra/` and `orgs/projects/vpcs/`): the groups of that tree
    /// the VM (by its external id) or the object (by its policy path) is a member of, as a
    /// `PolicyResourceReferenceForEPListResult` (`target_id` the group's path,
    /// `target_display_name`, `target_type`, `is_valid`: terraform-provider-nsxt
    /// `nsxt/data_source_nsxt_policy_baremetal_server_group_associations.go` reads these).
    /// The least NSX may answer: a VM's groups are those with the VM itself a member (its
    /// ports' groups are asked by their paths), a port's those with the port itself a member.
    fn associations(&self, p: &str, query: &str) -> Option<Answer> {
        let (tree, by) = if let Some(t) = p.strip_suffix("/virtual-machine-group-associations") {
            (t, "vm_external_id")
        } else if let Some(t) = p.strip_suffix("/group-associations") {
            (t, "intent_path")
        } else {
            return None;
        };
        let parts: Vec<&str> = tree.trim_start_matches('/').split('/').collect();
        let tree_ok = matches!(
            parts.as_slice(),
            ["infra"] | ["orgs", _, "projects", _, "infra"] | ["orgs", _, "projects", _, "vpcs", _]
        );
        if !tree_ok {
            return Some(not_found(p));
        }
        let params = Self::params(query);
        let Some(key) = params.iter().find(|(k, _)| k == by).map(|(_, v)| v.clone()) else {
            return Some(error(
                400,
                500012,
                "Policy",
                &format!("required parameter {by} is missing"),
            ));
        };
        let w = &self.world;
        let in_tree = |g: &str| {
            let rest = g.strip_prefix(tree).unwrap_or("");
            // `/infra`'s answer is its own domains' groups, not a project's.
            rest.starts_with("/domains/") || (rest.starts_with("/groups/") && parts[0] == "orgs")
        };
        let items: Vec<Value> = w
            .groups
            .iter()
            .filter_map(|g| g.get("path").and_then(Value::as_str).map(|gp| (g, gp)))
            .chain(
                w.members
                    .keys()
                    .filter(|k| {
                        !w.groups
                            .iter()
                            .any(|g| g.get("path").and_then(Value::as_str) == Some(k.as_str()))
                    })
                    .map(|k| (&Value::Null, k.as_str())),
            )
            .filter(|(_, gp)| in_tree(gp))
            .filter(|(_, gp)| {
                let m = members::of_group(w, gp);
                match by {
                    "vm_external_id" => m.vms.contains(&key),
                    _ => m.ports.contains(&key),
                }
            })
            .map(|(g, gp)| {
                json!({"target_id": gp, "target_type": "Group", "is_valid": true,
                    "target_display_name": g.get("display_name").cloned()
                        .unwrap_or(json!(gp.rsplit('/').next()))})
            })
            .collect();
        Some(self.page(items, query))
    }

    /// The DFW's settings, its exclusion list, a security policy's rule statistics
    /// (`crate::enforce`).
    fn enforcement(&self, p: &str, query: &str) -> Option<Answer> {
        let e = &self.world.enforcement;
        match p {
            "/infra/settings/firewall/security" => return Some(ok(e.settings())),
            "/infra/settings/firewall/security/exclude-list" => {
                let system = Self::params(query)
                    .iter()
                    .any(|(k, v)| k == "system_owned" && v == "true");
                return Some(ok(e.exclude_list(system)));
            }
            _ => {}
        }
        if let Some(project) = p.strip_suffix("/infra/settings/firewall/security/exclude-list") {
            return Some(match &self.world.layout {
                Layout::Vpc {
                    org, project: ours, ..
                } if project == format!("/orgs/{org}/projects/{ours}") => {
                    ok(e.project_exclude_list(project))
                }
                _ => not_found(p),
            });
        }
        let policy = p.strip_suffix("/statistics")?;
        let found = self
            .world
            .policies
            .iter()
            .find(|v| v.get("path").and_then(Value::as_str) == Some(policy))?;
        let answer = lock(&self.state).counters.answer(found, &e.statistics);
        Some(ok(answer))
    }

    /// `<group path>/members/<kind>`.
    fn group_members(&self, p: &str, query: &str) -> Option<Answer> {
        let (group, kind) = p.rsplit_once("/members/")?;
        let w = &self.world;
        let known = self.index.objects.contains_key(group) || w.members.contains_key(group);
        if !known || !group.contains("/groups/") {
            return Some(not_found(p));
        }
        let m = members::of_group(w, group);
        let items: Vec<Value> = match kind {
            "ip-addresses" => m.ip_addresses(w).into_iter().map(Value::from).collect(),
            "virtual-machines" => m
                .vms
                .iter()
                .filter_map(|id| w.vm(id))
                .map(|vm| {
                    // RealizedVirtualMachine (sdk-go RealizedVirtualMachineListResultBindingType).
                    // Its `compute_ids` as the model's own example has them ("['uuid:xxxx-xxxx-
                    // xxxx-xxxx', 'moIdOnHost:moref-11', 'instanceUuid:xxxx-xxxx-xxxx-xxxx']",
                    // phspies/nsxtsdk NSXTRealizedVirtualMachineType.cs): the fabric VM's
                    // `biosUuid:` (terraform-provider-nsxt resource_nsxt_policy_vm_tags.go)
                    // is a member's `uuid:`.
                    let ids: Vec<Value> = vm
                        .get("compute_ids")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(|id| match id.strip_prefix("biosUuid:") {
                            Some(bios) => json!(format!("uuid:{bios}")),
                            None => json!(id),
                        })
                        .collect();
                    json!({
                        "resource_type": "RealizedVirtualMachine",
                        "id": vm.get("external_id"),
                        "display_name": vm.get("display_name"),
                        "power_state": vm.get("power_state"),
                        "local_id_on_host": vm.get("local_id_on_host"),
                        "compute_ids": ids,
                        "host": vm.get("host_id"),
                    })
                })
                .collect(),
            k if k == w.layout.port_members() => m
                .segment_ports(w)
                .iter()
                .map(|path| {
                    // PolicyGroupMemberDetails (sdk-go PolicyGroupMembersListResultBindingType).
                    let name = w
                        .port(path)
                        .and_then(|p| p.get("display_name").cloned())
                        .unwrap_or(json!(path.rsplit('/').next()));
                    json!({"path": path, "display_name": name})
                })
                .collect(),
            // The VIFs behind the effective ports (a member VM's, a member port's).
            "vifs" => m
                .segment_ports(w)
                .iter()
                .filter_map(|p| w.port(p).and_then(|p| w.vif_of_port(p)))
                .cloned()
                .collect(),
            _ => return Some(not_found(p)),
        };
        Some(self.page(items, query))
    }

    #[allow(clippy::too_many_arguments)]
    fn traceflow(
        &self,
        mut st: MutexGuard<'_, State>,
        method: &Method,
        prefix: &str,
        id: Option<&str>,
        sub: Option<&str>,
        query: &str,
        body: &[u8],
        user: &str,
    ) -> Answer {
        let opts = lock(&self.opts).clone();
        let Some(id) = id else {
            if method != Method::GET {
                return error(405, 405, "Policy", "method not allowed");
            }
            let all = st
                .traceflows
                .values()
                .filter(|t| t.record.path.starts_with(prefix))
                .map(|t| t.config.clone())
                .collect();
            return self.page(all, query);
        };
        let path = format!("{prefix}/traceflows/{id}");
        match (method, sub) {
            (&Method::PUT | &Method::PATCH, None) => {
                let Ok(mut config) = serde_json::from_slice::<Value>(body) else {
                    return error(400, 255, "Policy", "the body is not a TraceflowConfig");
                };
                let full = |st: &State| {
                    let alive =
                        st.traceflows.len() - usize::from(st.traceflows.contains_key(&path));
                    (alive >= opts.max_traceflows).then(|| {
                        error(
                            400,
                            500180,
                            "Policy",
                            &format!(
                                "The number of traceflows has reached the limit of {}.",
                                opts.max_traceflows
                            ),
                        )
                    })
                };
                if let Some(e) = full(&st) {
                    return e;
                }
                let q = match traceflow::query(&self.world, &config) {
                    Ok(q) => q,
                    Err(e) => return error(400, 500181, "Policy", &e.to_string()),
                };
                let known = self.world.port(&q.source_port_path).is_some();
                // A harness oracle may take its time (a lab's oracle reads nftables): the
                // fake's state is not held meanwhile, so other requests go on.
                drop(st);
                let oracle = lock(&self.oracle).clone();
                let outcome = known.then(|| match oracle {
                    Some(o) => o(&q),
                    None => dfw::evaluate(&self.world, &q),
                });
                let mut st = lock(&self.state);
                if let Some(e) = full(&st) {
                    return e;
                }
                let observations = outcome
                    .as_ref()
                    .map(|o| traceflow::observations(&q, o, now_ms()))
                    .unwrap_or_default();
                if let Some(o) = config.as_object_mut() {
                    o.insert("id".into(), json!(id));
                    o.insert("path".into(), json!(path));
                    o.insert("relative_path".into(), json!(id));
                    o.insert("parent_path".into(), json!(prefix));
                    o.insert("resource_type".into(), json!("TraceflowConfig"));
                    o.insert("_create_user".into(), json!(user));
                    o.insert("_revision".into(), json!(0));
                    o.entry("display_name").or_insert(json!(id));
                }
                let sent = serde_json::from_slice::<Value>(body).unwrap_or(Value::Null);
                let record = TraceflowRecord {
                    id: id.into(),
                    path: path.clone(),
                    user: user.into(),
                    query: known.then_some(q),
                    outcome,
                    config: sent,
                };
                st.traceflows.insert(
                    path.clone(),
                    Live {
                        record,
                        config: config.clone(),
                        created: Instant::now(),
                        observations,
                    },
                );
                st.created += 1;
                st.max_alive = st.max_alive.max(st.traceflows.len());
                st.traceflow_ops.push(TraceflowOp {
                    method: "PUT".into(),
                    path: path.clone(),
                    existed: true,
                });
                ok(config)
            }
            (&Method::DELETE, None) => {
                let removed = st.traceflows.remove(&path);
                st.traceflow_ops.push(TraceflowOp {
                    method: "DELETE".into(),
                    path: path.clone(),
                    existed: removed.is_some(),
                });
                if let Some(t) = removed {
                    st.deleted.push(t.record);
                }
                ok(Value::Null)
            }
            (&Method::GET, None) => match st.traceflows.get(&path) {
                Some(t) => ok(t.config.clone()),
                None => not_found(&path),
            },
            (&Method::GET, Some(s)) => {
                let Some(t) = st.traceflows.get(&path) else {
                    return not_found(&path);
                };
                let ready = t.created.elapsed() >= opts.observation_delay;
                let obs: Vec<Value> = if ready {
                    traceflow::flavoured(t.observations.clone(), opts.observation_flavour)
                } else {
                    vec![]
                };
                if s == "observations" {
                    return self.page(obs, query);
                }
                let (state, request) = match (&t.record.outcome, ready) {
                    (None, _) => ("FAILED", "SOURCE_PORT_NOT_FOUND"),
                    (Some(_), false) => ("IN_PROGRESS", "SUCCESS"),
                    (Some(_), true) => ("FINISHED", "SUCCESS"),
                };
                let counters = traceflow::counters(&obs);
                ok(json!({
                    "id": id,
                    "resource_type": "Traceflow",
                    "operation_state": state,
                    "request_status": request,
                    "logical_counters": counters,
                    "counters": counters,
                    "analysis": [],
                    "result_overflowed": false,
                    "timeout": t.config.get("timeout").cloned().unwrap_or(json!(10000)),
                    "lport_id": t.record.query.as_ref().map(|q| q.source_port_path.rsplit('/').next().unwrap_or("").to_string()),
                }))
            }
            _ => error(405, 405, "Policy", "method not allowed"),
        }
    }
}

/// `(prefix, id, sub)` when `path` is a Policy traceflow path: prefix `/infra` or
/// `/orgs/<o>/projects/<p>/infra`; sub `status` or `observations`.
fn traceflow_path(path: &str) -> Option<(String, Option<String>, Option<String>)> {
    let p = path.strip_prefix("/policy/api/v1")?;
    let (prefix, rest) = p.split_once("/traceflows")?;
    let ok_prefix = prefix == "/infra" || {
        let parts: Vec<&str> = prefix.split('/').collect();
        parts.len() == 6 && parts[1] == "orgs" && parts[3] == "projects" && parts[5] == "infra"
    };
    if !ok_prefix {
        return None;
    }
    let segs: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        [] => Some((prefix.into(), None, None)),
        [id] => Some((prefix.into(), Some((*id).into()), None)),
        [id, s @ ("status" | "observations")] => {
            Some((prefix.into(), Some((*id).into()), Some((*s).into())))
        }
        _ => None,
    }
}

async fn handle(
    axum::extract::State(shared): axum::extract::State<Arc<Shared>>,
    req: axum::extract::Request,
) -> Response {
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let method = parts.method.clone();
    let path = parts.uri.path().to_string();
    let query = parts.uri.query().unwrap_or("").to_string();
    let leaks = shared.leak_check(method.as_str(), &path, &query, &parts.headers, &body);
    // The answer may wait on a harness oracle: off the runtime's worker, so other connections
    // are served meanwhile.
    let (answer, auth) = tokio::task::block_in_place(|| {
        shared.respond(&method, &path, &query, &parts.headers, &body)
    });
    {
        let mut st = lock(&shared.state);
        st.leaks.extend(leaks);
        let request = Request {
            method: method.to_string(),
            path,
            query,
            auth,
            status: answer.status,
        };
        if let Some(f) = st.log.as_mut() {
            use std::io::Write;
            // One write per line, so a reader sees whole lines.
            let who = request.auth.user().unwrap_or("-");
            let _ = f.write_all(
                format!(
                    "{} {} {} {}\n",
                    request.status,
                    who,
                    auth_kind(&request.auth),
                    request.line()
                )
                .as_bytes(),
            );
        }
        st.requests.push(request);
    }
    let (delay, trickle) = {
        let o = lock(&shared.opts);
        (o.response_delay, o.trickle)
    };
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let bytes = if answer.body.is_null() {
        Vec::new()
    } else {
        serde_json::to_vec_pretty(&answer.body).unwrap_or_default()
    };
    let body = match trickle {
        Some((chunk, every)) if !bytes.is_empty() => {
            let chunks: Vec<bytes::Bytes> = bytes
                .chunks(chunk.max(1))
                .map(bytes::Bytes::copy_from_slice)
                .collect();
            let stream = futures::stream::iter(chunks).then(move |c| async move {
                tokio::time::sleep(every).await;
                Ok::<_, std::io::Error>(c)
            });
            Body::from_stream(stream)
        }
        _ => Body::from(bytes),
    };
    let mut resp = Response::new(body);
    *resp.status_mut() =
        StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    for (k, v) in answer.headers {
        if let Ok(v) = HeaderValue::from_str(&v) {
            resp.headers_mut().append(k, v);
        }
    }
    resp
}

use futures::StreamExt;

/// How a request authenticated, in one word (`basic`, `session`, `login`, `refused`, `none`).
fn auth_kind(a: &AuthUsed) -> &'static str {
    match a {
        AuthUsed::None => "none",
        AuthUsed::Basic(_) => "basic",
        AuthUsed::Session(_) => "session",
        AuthUsed::Login(_) => "login",
        AuthUsed::Refused(_) => "refused",
    }
}

/// A running fake NSX Manager on loopback, over HTTPS. Dropping it stops it.
pub struct FakeNsx {
    shared: Arc<Shared>,
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeNsx {
    /// Serves `world` with the default [`Options`].
    pub fn start(world: World) -> Result<FakeNsx> {
        FakeNsx::start_with(world, Options::default())
    }

    /// Serves the world in `tests/fixtures/nsx-manager/worlds/<name>`.
    pub fn start_world(name: &str) -> Result<FakeNsx> {
        FakeNsx::start(World::from_dir(crate::world::world_dir(name))?)
    }

    pub fn start_with(world: World, opts: Options) -> Result<FakeNsx> {
        if !opts.addr.ip().is_loopback() {
            bail!(
                "the fake NSX Manager listens on loopback only, not {}",
                opts.addr
            );
        }
        let listener =
            TcpListener::bind(opts.addr).with_context(|| format!("binding {}", opts.addr))?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let acceptor = crate::tls::acceptor()?;
        let shared = Arc::new(Shared {
            index: Index::new(&world),
            world,
            opts: Mutex::new(opts),
            oracle: Mutex::new(None),
            state: Mutex::new(State::default()),
            seed: {
                use std::hash::{BuildHasher, Hasher};
                let mut h = std::collections::hash_map::RandomState::new().build_hasher();
                h.write_u64(now_ms());
                h.finish()
            },
        });
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(shared.clone());
        let (tx, rx) = oneshot::channel::<()>();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("fakensx")
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name("fakensx-server".into())
            .spawn(move || {
                rt.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let Ok(listener) = crate::tls::TlsListener::new(listener, acceptor) else {
                        return;
                    };
                    tokio::select! {
                        _ = axum::serve(listener, app) => {}
                        _ = rx => {}
                    }
                });
                rt.shutdown_timeout(Duration::from_millis(200));
            })?;
        Ok(FakeNsx {
            shared,
            addr,
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    /// `hits` more on the rule at `rule_path`, published at the manager's next refresh of its
    /// counters, which the fake places after the next read of the rule's policy's statistics
    /// (`crate::enforce`: the fake cannot see a test's packets, the test says what was hit).
    pub fn publish_hits_later(&self, rule_path: &str, hits: u64) {
        lock(&self.shared.state)
            .counters
            .publish_later(rule_path, hits);
    }

    /// `https://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The CA that signed the fake's certificate, PEM (what `--nsx-ca` is given).
    pub fn ca_pem(&self) -> Result<&'static str> {
        crate::tls::ca_pem()
    }

    /// Writes [`FakeNsx::ca_pem`] to `path`.
    pub fn write_ca(&self, path: &Path) -> Result<()> {
        std::fs::write(path, self.ca_pem()?).with_context(|| format!("writing {}", path.display()))
    }

    pub fn world(&self) -> &World {
        &self.shared.world
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        lock(&self.shared.state).requests.clone()
    }

    /// The users that made requests, and how (`basic`, `session`, `login`).
    pub fn auth_kinds(&self) -> BTreeSet<(String, &'static str)> {
        lock(&self.shared.state)
            .requests
            .iter()
            .filter_map(|r| match &r.auth {
                AuthUsed::Basic(u) => Some((u.clone(), "basic")),
                AuthUsed::Session(u) => Some((u.clone(), "session")),
                AuthUsed::Login(u) => Some((u.clone(), "login")),
                _ => None,
            })
            .collect()
    }

    /// From now on also writes every request to `path` (created or truncated), one line each:
    /// `STATUS USER AUTH METHOD path?query` (`-` for no user; never a secret).
    pub fn log_requests_to(&self, path: &Path) -> Result<()> {
        let f =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        lock(&self.shared.state).log = Some(f);
        Ok(())
    }

    /// Every place a password was sent other than the login form or a basic header (empty:
    /// never). The descriptions name the request and the place, never the password.
    pub fn password_leaks(&self) -> Vec<String> {
        lock(&self.shared.state).leaks.clone()
    }

    /// Answers `fault.status` instead, as the fault says.
    pub fn inject(&self, fault: Fault) {
        lock(&self.shared.state).faults.push(fault);
    }

    pub fn clear_faults(&self) {
        lock(&self.shared.state).faults.clear();
    }

    /// Every answer waits `d` first.
    pub fn set_delay(&self, d: Duration) {
        lock(&self.shared.opts).response_delay = d;
    }

    /// Every body sent `chunk` bytes at a time, `every` apart (`None`: at once).
    pub fn set_trickle(&self, t: Option<(usize, Duration)>) {
        lock(&self.shared.opts).trickle = t;
    }

    pub fn set_observation_delay(&self, d: Duration) {
        lock(&self.shared.opts).observation_delay = d;
    }

    /// The `resource_type` family of the observations served from now on.
    pub fn set_observation_flavour(&self, f: traceflow::ObservationFlavour) {
        lock(&self.shared.opts).observation_flavour = f;
    }

    pub fn set_max_traceflows(&self, n: usize) {
        lock(&self.shared.opts).max_traceflows = n;
    }

    /// Traceflows are answered by `oracle` from now on instead of the fake's own evaluation.
    pub fn set_oracle(
        &self,
        oracle: impl Fn(&TraceflowQuery) -> TraceflowOutcome + Send + Sync + 'static,
    ) {
        *lock(&self.shared.oracle) = Some(Arc::new(oracle));
    }

    /// The fake's own answer for `q` (the default oracle), for a test's expectations.
    pub fn evaluate(&self, q: &TraceflowQuery) -> TraceflowOutcome {
        dfw::evaluate(&self.shared.world, q)
    }

    /// The traceflows alive now.
    pub fn traceflows_live(&self) -> Vec<TraceflowRecord> {
        lock(&self.shared.state)
            .traceflows
            .values()
            .map(|t| t.record.clone())
            .collect()
    }

    /// The traceflows deleted, in order.
    pub fn traceflows_deleted(&self) -> Vec<TraceflowRecord> {
        lock(&self.shared.state).deleted.clone()
    }

    /// How many traceflows were created (a PUT that made or replaced one).
    pub fn traceflows_created(&self) -> usize {
        lock(&self.shared.state).created
    }

    /// The most traceflows alive at once.
    pub fn max_traceflows_alive(&self) -> usize {
        lock(&self.shared.state).max_alive
    }

    /// The sessions alive now (after `/api/session/destroy`, one fewer).
    pub fn sessions_alive(&self) -> usize {
        lock(&self.shared.state).sessions.len()
    }

    /// Logins granted (`POST /api/session/create` with the right password, not locked out).
    pub fn logins(&self) -> usize {
        lock(&self.shared.state).logins
    }

    /// Failed authentications (a wrong password or user, a locked account; by login or
    /// basic header): what counts toward a lockout.
    pub fn failed_logins(&self) -> usize {
        lock(&self.shared.state).auth_failures
    }

    /// Whether `user` is locked out of the API now.
    pub fn is_locked_out(&self, user: &str) -> bool {
        Shared::locked(&lock(&self.shared.state), user)
    }

    /// Sessions that ended by expiring (then answered 403, error_code 98).
    pub fn sessions_expired(&self) -> usize {
        lock(&self.shared.state).expired_sessions
    }

    /// From now on every session ends after `requests` requests in it, or `age` after its
    /// login (either `None`: not for that reason).
    pub fn expire_sessions(&self, requests: Option<u32>, age: Option<Duration>) {
        let mut o = lock(&self.shared.opts);
        o.auth_policy.session_max_requests = requests;
        o.auth_policy.session_max_age = age;
    }

    /// The lockout and session policy from now on.
    pub fn set_auth_policy(&self, policy: AuthPolicy) {
        lock(&self.shared.opts).auth_policy = policy;
    }

    /// Every traceflow create and delete, in the order they took effect.
    pub fn traceflow_ops(&self) -> Vec<TraceflowOp> {
        lock(&self.shared.state).traceflow_ops.clone()
    }
}

impl Drop for FakeNsx {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceflow_paths() {
        assert_eq!(
            traceflow_path("/policy/api/v1/infra/traceflows/t1/status"),
            Some(("/infra".into(), Some("t1".into()), Some("status".into())))
        );
        assert_eq!(
            traceflow_path("/policy/api/v1/orgs/default/projects/p/infra/traceflows/t1"),
            Some((
                "/orgs/default/projects/p/infra".into(),
                Some("t1".into()),
                None
            ))
        );
        assert_eq!(
            traceflow_path("/policy/api/v1/infra/traceflows/t1/other"),
            None
        );
        assert_eq!(
            traceflow_path("/policy/api/v1/infra/domains/default/traceflows/x"),
            None
        );
    }
}
