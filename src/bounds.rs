//! Bounded work on every API request, by time and by bytes: the one place every `kube::Client`
//! of the plugin is built ([`client`]), for the Supervisor (`connect`) and for a workload API
//! (`workload`).
//!
//! kube's own connect/read/write timeouts bound each *wait* for a byte: a server that answers
//! and then trickles a byte every few seconds restarts them forever, and kube collects a
//! response whole, however large. So a [`Bound`] layer wraps the client's whole stack (above
//! kube's decompression: the bytes counted are the ones kube would parse):
//!
//! - **One deadline per request**, from the moment it is sent to the last byte of its body
//!   (headers and body alike): a request that has not finished by then fails with "the X API at
//!   URL did not finish answering within D" ([`Exceeded::Slow`]).
//! - **A size cap on every body**: [`MAX_BODY_BYTES`], or the `limitBytes` a log read asks for
//!   (the API server sends no more than that): one byte more fails with "the X API at URL sent
//!   more than N MiB" ([`Exceeded::Large`]).
//! - **Watches** (`watch=true`) are streams, not answers: their life is the `timeoutSeconds`
//!   the request gives the API server (which must close the watch then) plus the deadline, and
//!   each line (one event) is capped at [`MAX_LINE_BYTES`] ([`Exceeded::Line`]); the stream as a
//!   whole has no size cap (each event is read and dropped). The wait between two events stays
//!   kube's read timeout (the client's bound), which the caller's loop resumes from.
//!
//! kube's per-read timeouts are kept below this layer: they still end a connection that goes
//! silent sooner than the deadline. The errors reach the caller as `kube::Error::Service` (or,
//! on a watch, `ReadEvents`), and [`crate::error::chain`] prints this module's line alone.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use kube::client::ClientBuilder;
use kube::{Client, Config};
use tokio::time::{Instant, Sleep};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The most one response body may hold (after decompression). The largest answer the plugin
/// asks for is a list of every VirtualMachine or Machine of the namespaces it may see (`-A`),
/// at a few KiB per object, or a jumpbox pod's log (`jumpbox::log_limit`, asked with
/// `limitBytes`, capped at that instead).
pub(crate) const MAX_BODY_BYTES: u64 = 64 * 1024 * 1024;

/// The most one line of a watch (one event: one object, which etcd holds to 1.5 MiB by
/// default) may hold.
pub(crate) const MAX_LINE_BYTES: u64 = 8 * 1024 * 1024;

/// Which API a client talks to, for the errors' wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    Supervisor,
    Workload,
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Api::Supervisor => "the Supervisor API",
            Api::Workload => "the workload API",
        })
    }
}

/// A request that went past one of its bounds. One line, naming the API and its URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Exceeded {
    #[error("{api} at {server} did not finish answering within {}", humantime::format_duration(*.bound))]
    Slow {
        api: Api,
        server: String,
        bound: Duration,
    },
    #[error("{api} at {server} sent more than {} (refused unread)", size(*.limit))]
    Large {
        api: Api,
        server: String,
        limit: u64,
    },
    #[error("{api} at {server} sent a watch event longer than {} (refused unread)", size(*.limit))]
    Line {
        api: Api,
        server: String,
        limit: u64,
    },
}

fn size(bytes: u64) -> String {
    if bytes >= 1024 * 1024 && bytes.is_multiple_of(1024 * 1024) {
        format!("{} MiB", bytes / (1024 * 1024))
    } else {
        format!("{bytes} bytes")
    }
}

/// A client for `config` whose every request is bounded by `bound` (and kube's own timeouts set
/// to it too, as the wait for one byte), and every body by [`MAX_BODY_BYTES`].
pub(crate) fn client(mut config: Config, api: Api, bound: Duration) -> Result<Client, kube::Error> {
    config.connect_timeout = Some(bound.min(Duration::from_secs(10)));
    config.read_timeout = Some(bound);
    config.write_timeout = Some(bound);
    let layer = Bound {
        api,
        server: config.cluster_url.to_string(),
        deadline: bound,
        max_body: MAX_BODY_BYTES,
        max_line: MAX_LINE_BYTES,
    };
    Ok(ClientBuilder::try_from(config)?.with_layer(&layer).build())
}

/// The tower layer (and its service): see the module's comment.
#[derive(Debug, Clone)]
pub(crate) struct Bound {
    api: Api,
    server: String,
    deadline: Duration,
    max_body: u64,
    max_line: u64,
}

impl<S> tower_layer::Layer<S> for Bound {
    type Service = BoundService<S>;
    fn layer(&self, inner: S) -> BoundService<S> {
        BoundService {
            inner,
            bound: self.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct BoundService<S> {
    inner: S,
    bound: Bound,
}

/// How one request is bounded, read from its URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Limits {
    /// How long the request may take, headers and body.
    within: Duration,
    /// The most its body may hold; None for a watch (a stream of lines).
    body: Option<u64>,
    /// The most one line may hold (a watch).
    line: Option<u64>,
}

impl Bound {
    fn limits(&self, uri: &http::Uri) -> Limits {
        let query = |key: &str| {
            uri.query().and_then(|q| {
                q.split('&')
                    .filter_map(|kv| kv.split_once('='))
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| v)
            })
        };
        if matches!(query("watch"), Some("true" | "1")) {
            // The API server ends a watch after its timeoutSeconds; one that does not is cut
            // the deadline after that.
            let server_side = query("timeoutSeconds")
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(0);
            return Limits {
                within: self.deadline + Duration::from_secs(server_side),
                body: None,
                line: Some(self.max_line),
            };
        }
        // A log read asks for at most limitBytes (ours ask one byte more than they keep).
        let body = query("limitBytes")
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(self.max_body);
        Limits {
            within: self.deadline,
            body: Some(body),
            line: None,
        }
    }

    fn slow(&self, within: Duration) -> Exceeded {
        Exceeded::Slow {
            api: self.api,
            server: self.server.clone(),
            bound: within,
        }
    }
}

impl<S, ReqB, ResB> tower_service::Service<Request<ReqB>> for BoundService<S>
where
    S: tower_service::Service<Request<ReqB>, Response = Response<ResB>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    ResB: Body<Data = Bytes> + Send + Unpin + 'static,
    ResB::Error: Into<BoxError>,
{
    type Response = Response<BoundBody<ResB>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<ReqB>) -> Self::Future {
        let limits = self.bound.limits(req.uri());
        let bound = self.bound.clone();
        let deadline = Instant::now() + limits.within;
        let answer = self.inner.call(req);
        Box::pin(async move {
            let response = match tokio::time::timeout_at(deadline, answer).await {
                Err(_) => return Err(bound.slow(limits.within).into()),
                Ok(r) => r.map_err(Into::into)?,
            };
            Ok(response.map(|inner| BoundBody {
                inner,
                timer: Box::pin(tokio::time::sleep_until(deadline)),
                limits,
                seen: 0,
                line: 0,
                bound,
            }))
        })
    }
}

/// A response body that fails once its request's deadline passes or it holds too much.
pub(crate) struct BoundBody<B> {
    inner: B,
    timer: Pin<Box<Sleep>>,
    limits: Limits,
    /// Bytes of the body so far.
    seen: u64,
    /// Bytes since the last newline (watches).
    line: u64,
    bound: Bound,
}

impl<B> BoundBody<B> {
    /// Counts a frame's bytes against the caps.
    fn count(&mut self, data: &Bytes) -> Result<(), Exceeded> {
        self.seen = self.seen.saturating_add(data.len() as u64);
        if let Some(max) = self.limits.body {
            if self.seen > max {
                return Err(Exceeded::Large {
                    api: self.bound.api,
                    server: self.bound.server.clone(),
                    limit: max,
                });
            }
        }
        if let Some(max) = self.limits.line {
            let too_long = || Exceeded::Line {
                api: self.bound.api,
                server: self.bound.server.clone(),
                limit: max,
            };
            // The frame's first part continues the line in progress; each newline ends one.
            let mut parts = data.split(|b| *b == b'\n');
            let mut current = self.line + parts.next().map_or(0, |p| p.len() as u64);
            for part in parts {
                if current > max {
                    return Err(too_long());
                }
                current = part.len() as u64;
            }
            if current > max {
                return Err(too_long());
            }
            self.line = current;
        }
        Ok(())
    }
}

impl<B> Body for BoundBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if this.timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(this.bound.slow(this.limits.within).into())));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    if let Err(e) = this.count(data) {
                        return Poll::Ready(Some(Err(e.into())));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// This module's error in `err`'s chain of sources, if any.
pub(crate) fn exceeded<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a Exceeded> {
    let mut source = Some(err);
    while let Some(e) = source {
        if let Some(x) = e.downcast_ref::<Exceeded>() {
            return Some(x);
        }
        source = e.source();
    }
    None
}

#[cfg(test)]
mod tests;
