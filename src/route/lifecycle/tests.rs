//! One pod's run and the tracker, against the fake API server.

use std::time::{Duration, Instant};

use etcdnet_fakeapi::{FakeApi, FakeConfig, Forbid, PodScript, Workload};
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use serde_json::json;

use super::*;
use crate::labels::RUN_ID;

const NAME: &str = "etcdnet-probe-cp1-k3x9q";

/// A client to `url` whose every read gives up after `read_timeout`, as ours do.
fn client(url: &str, read_timeout: Duration) -> kube::Client {
    let mut config = kube::Config::new(url.parse().unwrap());
    config.read_timeout = Some(read_timeout);
    config.connect_timeout = Some(read_timeout);
    kube::Client::try_from(config).unwrap()
}

fn pods_at(url: &str, read_timeout: Duration) -> PodApi {
    PodApi::new(
        Api::namespaced(client(url, read_timeout), "kube-system"),
        Host::Workload,
    )
}

fn probe_pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {"restartPolicy": "Never", "activeDeadlineSeconds": 60,
                 "containers": [{"name": "probe", "image": "busybox"}]}
    }))
    .unwrap()
}

/// `run` of the probe pod `NAME`, not kept, within `bound`.
async fn run_probe(
    pods: &PodApi,
    tracker: &PodTracker,
    bound: Duration,
) -> Result<PodRun, PodFailure> {
    run(pods, &probe_pod(NAME), tracker, bound, false).await
}

fn fake() -> FakeApi {
    FakeApi::start_with(FakeConfig::empty()).unwrap()
}

/// The probe pod `name`, labelled as a run's pods are (run id `k3x9q`).
fn labelled_pod(name: &str) -> Pod {
    let mut pod = probe_pod(name);
    pod.metadata.labels = Some(
        [
            (crate::labels::MANAGED_BY, crate::labels::MANAGED_BY_VALUE),
            (RUN_ID, "k3x9q"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
    );
    pod
}

/// The delete-collections the fake received, by their label selector.
fn sweeps(api: &FakeApi) -> Vec<String> {
    api.requests()
        .iter()
        .filter(|r| r.method == "DELETE" && r.path.ends_with("/pods"))
        .map(|r| r.param("labelSelector").unwrap_or_default())
        .collect()
}

/// A create the run stopped waiting for (Ctrl-C drops it) is stored after the delete by
/// name: the sweep by the run's label, retried after a wait, deletes it (without the sweep the
/// pod would stay).
#[tokio::test]
async fn a_create_dropped_in_flight_is_swept_by_the_run_label() {
    let api = fake();
    api.delay_pod_creates(Duration::from_millis(500));
    let pods = pods_at(&api.url(), Duration::from_secs(5));
    let tracker = PodTracker::default();
    let pod = labelled_pod(NAME);
    let cut = tokio::time::timeout(
        Duration::from_millis(100),
        run(&pods, &pod, &tracker, Duration::from_secs(5), false),
    )
    .await;
    assert!(cut.is_err(), "the create was still in flight");
    let failed = tracker.delete_all(Duration::from_secs(2)).await;
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(api.created_pods().len(), 1, "the create landed meanwhile");
    assert!(api.existing_pods().is_empty(), "{:?}", api.existing_pods());
    let selector = "app.kubernetes.io/managed-by=kubectl-etcdnet,etcdnet.kubectl.io/run-id=k3x9q";
    assert_eq!(sweeps(&api), [selector, selector]);
}

/// Every create answered: no sweep, and no wait for one.
#[tokio::test]
async fn answered_creates_need_no_sweep() {
    let api = fake();
    api.on_pod_created(|_| Some(PodScript::succeeds("{}")));
    let pods = pods_at(&api.url(), Duration::from_secs(5));
    let tracker = PodTracker::default();
    let _ = run(
        &pods,
        &labelled_pod(NAME),
        &tracker,
        Duration::from_secs(5),
        true,
    )
    .await;
    let started = Instant::now();
    tracker.delete_all(Duration::from_secs(2)).await;
    assert!(started.elapsed() < SWEEP_AGAIN_AFTER);
    assert!(api.existing_pods().is_empty());
    assert!(sweeps(&api).is_empty(), "{:?}", sweeps(&api));
}

#[tokio::test]
async fn a_409_forgets_only_its_own_create() {
    // Someone else's pod holds the name.
    let api = FakeApi::start_with(
        FakeConfig::empty().object(serde_json::to_value(probe_pod(NAME)).unwrap()),
    )
    .unwrap();
    let pods = pods_at(&api.url(), Duration::from_secs(5));
    let tracker = PodTracker::default();
    // Another create of the same name, still in flight: its entry must survive ours.
    let other = tracker.track(&pods, &probe_pod(NAME));
    let failure = run_probe(&pods, &tracker, Duration::from_secs(5))
        .await
        .unwrap_err();
    match &failure {
        PodFailure::Api(m) => assert!(
            m.contains("already exists") && m.contains("(409)") && m.contains("leaves it alone"),
            "{m}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        tracker.names(),
        [NAME],
        "exactly the other create's entry is left"
    );
    tracker.untrack(other);
    assert!(tracker.names().is_empty());
    assert_eq!(
        api.existing_pods(),
        [("kube-system".to_string(), NAME.to_string())],
        "the pod that was there is not ours to delete"
    );
}

#[tokio::test]
async fn a_403_is_a_definite_refusal() {
    let api = FakeApi::start_with(FakeConfig::empty().forbid(Forbid {
        verb: Some("create".into()),
        resource: Some("pods".into()),
        ..Forbid::default()
    }))
    .unwrap();
    let pods = pods_at(&api.url(), Duration::from_secs(5));
    let tracker = PodTracker::default();
    let failure = run_probe(&pods, &tracker, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(matches!(failure, PodFailure::Forbidden(_)), "{failure:?}");
    assert!(tracker.names().is_empty());
}

#[tokio::test]
async fn no_answer_to_a_create_keeps_the_pod_tracked() {
    // A server that takes the request and never answers: the pod may well exist.
    let hole = Workload::black_hole();
    let pods = pods_at(&hole.url(), Duration::from_millis(300));
    let tracker = PodTracker::default();
    let failure = run_probe(&pods, &tracker, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(matches!(failure, PodFailure::Api(_)), "{failure:?}");
    assert_eq!(tracker.names(), [NAME], "delete_all must still try it");
    // And it does: the delete is tried (and here cannot be answered either).
    let failed = tracker.delete_all(Duration::from_millis(500)).await;
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0].starts_with(NAME), "{failed:?}");

    // Refused at connect: kept as well (nothing tells a transport error from a lost answer).
    let refused = Workload::refused();
    let pods = pods_at(&refused.url(), Duration::from_millis(300));
    let tracker = PodTracker::default();
    run_probe(&pods, &tracker, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert_eq!(tracker.names(), [NAME]);
}

#[tokio::test]
async fn a_pod_slower_to_start_than_the_read_timeout_is_waited_for() {
    let api = fake();
    // Pending for 1.5 s with no event: longer than the client's 300 ms read timeout.
    api.on_pod_created(|_| {
        Some(PodScript {
            log: "probe output\n".into(),
            run_after: Duration::from_millis(1500),
            finish_after: Some(Duration::from_millis(50)),
            ..PodScript::default()
        })
    });
    let pods = pods_at(&api.url(), Duration::from_millis(300));
    let tracker = PodTracker::default();
    let done = run_probe(&pods, &tracker, Duration::from_secs(20))
        .await
        .unwrap();
    assert!(done.succeeded);
    assert_eq!(done.log, "probe output\n");
    assert!(tracker.names().is_empty());
    assert!(api.existing_pods().is_empty(), "deleted once read");
}

#[tokio::test]
async fn only_the_bound_ends_the_wait() {
    let api = fake();
    // Never scheduled: stays Pending, no event at all. The client's 1 s read timeout breaks the
    // watch off within the 2 s bound (it must resume, not end the wait); it also bounds the final
    // delete, which 200 ms did not always cover under a loaded CI (the pod was left tracked).
    let pods = pods_at(&api.url(), Duration::from_secs(1));
    let tracker = PodTracker::default();
    let started = Instant::now();
    let failure = run_probe(&pods, &tracker, Duration::from_secs(2))
        .await
        .unwrap_err();
    match &failure {
        PodFailure::Timeout(m) => assert!(m.starts_with("still Pending after 2s"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() >= Duration::from_secs(2));
    assert!(tracker.names().is_empty() && api.existing_pods().is_empty());
}

#[tokio::test]
async fn an_oversized_log_is_refused_unread() {
    let api = fake();
    api.on_pod_created(|pod| {
        let big = pod["metadata"]["name"] == "big";
        let size = MAX_LOG_BYTES as usize + usize::from(big);
        Some(PodScript::succeeds("x".repeat(size)))
    });
    let pods = pods_at(&api.url(), Duration::from_secs(5));
    let tracker = PodTracker::default();
    let bound = Duration::from_secs(20);
    let failure = run(&pods, &probe_pod("big"), &tracker, bound, false)
        .await
        .unwrap_err();
    assert_eq!(
        failure,
        PodFailure::LogTooLarge {
            limit_bytes: MAX_LOG_BYTES
        }
    );
    let reach = reach_error(failure, "kube-system", super::PodRoute::Pod);
    assert_eq!(reach.kind, crate::probe::ReachErrorKind::BadOutput);
    assert!(
        reach.message.contains("larger than 4 MiB"),
        "{}",
        reach.message
    );
    // Exactly the limit is still read, whole.
    let done = run(&pods, &probe_pod("fits"), &tracker, bound, false)
        .await
        .unwrap();
    assert_eq!(done.log.len() as u64, MAX_LOG_BYTES);
    assert!(tracker.names().is_empty() && api.existing_pods().is_empty());
}

/// How [`Scripted`] answers one request.
enum Answer {
    /// A whole JSON answer with this status.
    Json(u16, serde_json::Value),
    /// A watch: these events, one a line, then the connection closes.
    Events(Vec<serde_json::Value>),
    Text(&'static str),
}

/// An API server of one namespace's pods that answers each request with what `answer` says for
/// its method, target (path and query) and the requests before it; one connection a request.
struct Scripted {
    url: String,
    requests: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Scripted {
    fn start(answer: impl Fn(&str, &str, &[String]) -> Answer + Send + Sync + 'static) -> Scripted {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let (seen, answer) = (requests.clone(), std::sync::Arc::new(answer));
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let (seen, answer) = (seen.clone(), answer.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(conn.try_clone().unwrap());
                    let mut head = String::new();
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap();
                        }
                        if line == "\r\n" {
                            break;
                        }
                        head.push_str(&line);
                    }
                    reader.read_exact(&mut vec![0; length]).unwrap();
                    let mut words = head.split_whitespace();
                    let (method, target) = (words.next().unwrap(), words.next().unwrap());
                    let before = seen.lock().unwrap().clone();
                    let reply = answer(method, target, &before);
                    seen.lock().unwrap().push(format!("{method} {target}"));
                    let (status, kind, body) = match reply {
                        Answer::Json(status, v) => (status, "application/json", v.to_string()),
                        Answer::Events(events) => (
                            200,
                            "application/json",
                            events.iter().map(|e| format!("{e}\n")).collect(),
                        ),
                        Answer::Text(t) => (200, "text/plain", t.to_string()),
                    };
                    let _ = write!(
                        conn,
                        "HTTP/1.1 {status} X\r\nContent-Type: {kind}\r\nConnection: close\r\n\r\n{body}"
                    );
                });
            }
        });
        Scripted { url, requests }
    }

    /// The requests so far, as `METHOD target`.
    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// The probe pod `NAME` in `phase`, at resourceVersion `rv`.
fn pod_at(phase: &str, rv: u64) -> serde_json::Value {
    let mut pod = serde_json::to_value(probe_pod(NAME)).unwrap();
    pod["metadata"]["resourceVersion"] = json!(rv.to_string());
    pod["status"] = json!({"phase": phase});
    pod
}

fn pod_list(items: &[serde_json::Value], rv: u64) -> Answer {
    Answer::Json(
        200,
        json!({"apiVersion": "v1", "kind": "PodList",
               "metadata": {"resourceVersion": rv.to_string()}, "items": items}),
    )
}

fn event(kind: &str, object: serde_json::Value) -> serde_json::Value {
    json!({"type": kind, "object": object})
}

fn status_410() -> serde_json::Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired",
           "message": "too old resource version: 2 (9)", "code": 410})
}

/// The create, the log and the delete of `NAME`, as any script answers them; None for a list
/// or a watch.
fn the_rest(method: &str, target: &str) -> Option<Answer> {
    match method {
        "POST" => Some(Answer::Json(201, pod_at("Pending", 1))),
        "DELETE" => Some(Answer::Json(200, pod_at("Succeeded", 10))),
        _ if target.contains("/log") => Some(Answer::Text("probe output\n")),
        _ => None,
    }
}

fn lists(requests: &[String]) -> Vec<&String> {
    requests
        .iter()
        .filter(|r| r.starts_with("GET ") && r.contains("/pods?") && !r.contains("watch=true"))
        .collect()
}

fn watches(requests: &[String]) -> Vec<&String> {
    requests
        .iter()
        .filter(|r| r.contains("watch=true"))
        .collect()
}

/// 410 Gone, as a watch event or as the answer to the watch request itself: the pod is listed
/// afresh (and found finished), not reported as a failure. Today's hand-rolled wait read it
/// afresh too; kube's watcher alone would ask the second form again with the same version.
#[tokio::test]
async fn a_410_lists_the_pod_afresh() {
    for in_stream in [true, false] {
        let api = Scripted::start(move |method, target, before| {
            if let Some(a) = the_rest(method, target) {
                return a;
            }
            if target.contains("watch=true") {
                return match in_stream {
                    true => Answer::Events(vec![event("ERROR", status_410())]),
                    false => Answer::Json(410, status_410()),
                };
            }
            match lists(before).len() {
                0 => pod_list(&[pod_at("Pending", 2)], 2),
                _ => pod_list(&[pod_at("Succeeded", 9)], 9),
            }
        });
        let pods = pods_at(&api.url, Duration::from_secs(5));
        let tracker = PodTracker::default();
        let done = run_probe(&pods, &tracker, Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(done.log, "probe output\n");
        let requests = api.requests();
        assert_eq!(lists(&requests).len(), 2, "{requests:#?}");
        assert_eq!(watches(&requests).len(), 1, "{requests:#?}");
        assert!(lists(&requests)[0].contains("fieldSelector=metadata.name%3D"));
        assert!(tracker.names().is_empty());
    }
}

/// A watch that drops (the connection closes, no error) is resumed from the last
/// resourceVersion it delivered, without listing again.
#[tokio::test]
async fn a_dropped_watch_resumes_from_the_last_version() {
    let api = Scripted::start(|method, target, before| {
        if let Some(a) = the_rest(method, target) {
            return a;
        }
        if !target.contains("watch=true") {
            return pod_list(&[pod_at("Pending", 2)], 2);
        }
        match watches(before).len() {
            0 => Answer::Events(vec![event("MODIFIED", pod_at("Pending", 3))]),
            _ => Answer::Events(vec![event("MODIFIED", pod_at("Succeeded", 4))]),
        }
    });
    let pods = pods_at(&api.url, Duration::from_secs(5));
    let tracker = PodTracker::default();
    let done = run_probe(&pods, &tracker, Duration::from_secs(10))
        .await
        .unwrap();
    assert!(done.succeeded);
    let requests = api.requests();
    let watches = watches(&requests);
    assert_eq!(lists(&requests).len(), 1, "{requests:#?}");
    assert_eq!(watches.len(), 2, "{requests:#?}");
    assert!(watches[0].contains("resourceVersion=2"), "{watches:?}");
    assert!(watches[1].contains("resourceVersion=3"), "{watches:?}");
    // Each watch is bounded by what is left of the run's bound.
    assert!(watches.iter().all(|w| w.contains("timeoutSeconds=")));
}

/// A pod deleted by someone else while the run waits, as a DELETED event or missing from the
/// list, is `Gone`.
#[tokio::test]
async fn a_pod_deleted_meanwhile_is_gone() {
    for deleted_event in [true, false] {
        let api = Scripted::start(move |method, target, _| {
            if let Some(a) = the_rest(method, target) {
                return a;
            }
            match (target.contains("watch=true"), deleted_event) {
                (true, _) => Answer::Events(vec![event("DELETED", pod_at("Pending", 3))]),
                (false, true) => pod_list(&[pod_at("Pending", 2)], 2),
                (false, false) => pod_list(&[], 2),
            }
        });
        let pods = pods_at(&api.url, Duration::from_secs(5));
        let tracker = PodTracker::default();
        let failure = run_probe(&pods, &tracker, Duration::from_secs(10))
            .await
            .unwrap_err();
        assert_eq!(failure, PodFailure::Gone);
        let reach = reach_error(failure, "kube-system", super::PodRoute::Pod);
        assert_eq!(reach.message, "the probe pod was deleted while it ran");
    }
}

/// A kept pod is reported with its namespace, the server it is on, and the cluster whose
/// diagnosis made it: two handles of one tracker share its pods, each marking its own.
#[tokio::test]
async fn kept_pods_say_where_they_are_and_for_which_cluster() {
    let tracker = PodTracker::default();
    let supervisor = PodApi::new(
        Api::namespaced(
            client("http://127.0.0.1:1", Duration::from_secs(1)),
            "ns-prod",
        ),
        Host::Supervisor,
    );
    let workload = pods_at("http://127.0.0.1:1", Duration::from_secs(1));
    tracker
        .for_cluster("ns-prod", "tkc-prod")
        .track(&supervisor, &probe_pod("etcdnet-jumpbox-tkc-prod-k3x9q"));
    tracker
        .for_cluster("ns-a", "tkc-a")
        .track(&workload, &probe_pod(NAME));
    let cluster = |namespace: &str, name: &str| {
        Some(Cluster {
            namespace: namespace.into(),
            name: name.into(),
        })
    };
    assert_eq!(
        tracker.kept(),
        [
            Kept {
                name: "etcdnet-jumpbox-tkc-prod-k3x9q".into(),
                namespace: "ns-prod".into(),
                host: Host::Supervisor,
                cluster: cluster("ns-prod", "tkc-prod"),
            },
            Kept {
                name: NAME.into(),
                namespace: "kube-system".into(),
                host: Host::Workload,
                cluster: cluster("ns-a", "tkc-a"),
            },
        ]
    );
}
