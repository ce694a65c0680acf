//! The namespace's jumpbox against the fake API server: its run shared by the clusters that
//! wait for it (one cut off leaves it to the others: one create, no 409), and, under `--watch`,
//! kept across rounds as clusters leave and join.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use etcdnet_fakeapi::{FakeApi, FakeConfig, PodScript};
use kube::api::Api;

use super::tests::{addresses_of, settings};
use super::*;
use crate::probe::ReachErrorKind;
use crate::route::lifecycle::PodTracker;
use crate::route::Run;

/// A fake Supervisor with vSphere Namespace ns-prod and nothing else.
fn fake() -> FakeApi {
    let ns = serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                                "metadata": {"name": "ns-prod"}});
    FakeApi::start_with(FakeConfig::empty().object(ns)).unwrap()
}

/// A client of `api`, its reads bounded as ours are.
fn pods_of(api: &FakeApi) -> PodApi {
    let mut config = kube::Config::new(api.url().parse().unwrap());
    config.read_timeout = Some(Duration::from_secs(5));
    config.connect_timeout = Some(Duration::from_secs(5));
    let client = kube::Client::try_from(config).unwrap();
    PodApi::new(Api::namespaced(client, "ns-prod"), Host::Supervisor)
}

/// Cluster `name`'s settings (namespace ns-prod) and its VMs at `ips`.
fn cluster(name: &str, ips: &[&str]) -> (JumpboxSettings, Vec<Target>) {
    let mut s = settings();
    s.cluster = name.into();
    let targets = addresses_of(ips)
        .into_iter()
        .enumerate()
        .map(|(i, a)| Target {
            name: format!("{name}-cp{i}"),
            node_name: format!("{name}-cp{i}"),
            address: Some(a),
        })
        .collect();
    (s, targets)
}

/// The pod's command word `i`.
fn word(pod: &serde_json::Value, i: usize) -> String {
    pod["spec"]["containers"][0]["command"][i]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// What a pod of `jumpbox.sh` prints for one round `round` (None: the one round of a one-shot
/// pod) of `vms` VMs: each VM's section framed (the text stands for a node's output).
fn round_log(nonce: &str, vms: usize, round: Option<u64>) -> String {
    let framed = match round {
        Some(r) => format!("{nonce}r{r}"),
        None => nonce.to_string(),
    };
    let mut log: String = (0..vms)
        .map(|i| frame(&framed, i, "ETCDNET-REACH-END\nnode output\n"))
        .collect();
    if let Some(r) = round {
        log.push_str(&format!("ETCDNET-ROUND-END {nonce} {r}\n"));
    }
    log
}

/// Three clusters wait for the namespace's jumpbox; the first to ask is cut off 300 ms in (its
/// own bound, as `within` cuts a diagnosis), while the pod is still starting. The run goes on for
/// the others: one create, the log theirs, never a second create of the same name (a 409).
#[tokio::test]
async fn a_cluster_cut_off_leaves_the_namespace_jumpbox_to_the_others() {
    let api = fake();
    api.on_pod_created(|pod| {
        let vms = (pod["spec"]["containers"][0]["command"].as_array()?.len() - ARGV_VMS) / 2;
        Some(PodScript {
            log: round_log(&word(pod, ARGV_NONCE), vms, None),
            run_after: Duration::from_secs(1),
            ..PodScript::default()
        })
    });
    let (a, ta) = cluster("tkc-a", &["198.18.1.11", "198.18.1.12"]);
    let (b, tb) = cluster("tkc-b", &["198.18.2.11"]);
    let bound = Duration::from_secs(20);
    let shared = NamespaceJumpbox::new(&[(&a, &ta[..]), (&b, &tb[..])], bound).unwrap();
    let pods = pods_of(&api);
    let tracker = PodTracker::default();
    let run = Run {
        tracker: &tracker,
        bound,
        keep: false,
    };
    let cut = tokio::time::timeout(Duration::from_millis(300), shared.log(&pods, &run)).await;
    assert!(
        cut.is_err(),
        "the first cluster stopped waiting while the pod started"
    );
    let log = shared.log(&pods, &run).await.expect("the run went on");
    assert_eq!(log.shape.sections(), 3);
    assert_eq!(log.shape.sections_of("tkc-b"), Some(vec![2]));
    let sections = split_log(&log.log, &log.nonce, 3).unwrap();
    assert!(sections.iter().all(|s| s.is_ok()), "{sections:?}");
    let creates = api
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/pods"))
        .count();
    assert_eq!(creates, 1, "one create: no second one of the same name");
    assert!(tracker.delete_all(Duration::from_secs(5)).await.is_empty());
    assert!(api.existing_pods().is_empty());
}

/// Every running pod of `api` prints a new round of `jumpbox.sh`'s every 300 ms (as the kept
/// pod's script does every ETCDNET_ROUNDS_EVERY), until `stop`.
fn print_rounds(api: Arc<FakeApi>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut round = 0;
        while !stop.load(Ordering::SeqCst) {
            for pod in api.objects("", "pods") {
                if pod["status"]["phase"] != "Running" {
                    continue;
                }
                let vms = pod["spec"]["containers"][0]["command"]
                    .as_array()
                    .map_or(0, |c| (c.len() - ARGV_VMS) / 2);
                let nonce = word(&pod, ARGV_NONCE);
                let log: String = (0..=round)
                    .map(|r| round_log(&nonce, vms, Some(r)))
                    .collect();
                let (ns, name) = (
                    pod["metadata"]["namespace"].as_str().unwrap_or_default(),
                    pod["metadata"]["name"].as_str().unwrap_or_default(),
                );
                api.set_pod_log(ns, name, log);
            }
            round += 1;
            std::thread::sleep(Duration::from_millis(300));
        }
    })
}

/// `--watch -A`: the namespace's kept jumpbox across rounds. A cluster that leaves costs no new
/// pod (said once); a cluster that joins needs its key mounted: a new pod, the old one deleted,
/// said; a round that no cluster takes it in deletes it, said.
#[tokio::test]
async fn the_namespace_jumpbox_is_kept_until_its_keys_must_change() {
    let api = Arc::new(fake());
    api.on_pod_created(|_| {
        Some(PodScript {
            finish_after: None,
            ..PodScript::default()
        })
    });
    let stop = Arc::new(AtomicBool::new(false));
    let printer = print_rounds(api.clone(), stop.clone());
    let keeper = Arc::new(JumpboxKeeper::new(Duration::from_secs(1)));
    let kept = |name: &str, ips: &[&str]| {
        let (mut s, t) = cluster(name, ips);
        s.keeper = Some(keeper.clone());
        (s, t)
    };
    let (a, ta) = kept("tkc-a", &["198.18.1.11", "198.18.1.12"]);
    let (b, tb) = kept("tkc-b", &["198.18.2.11"]);
    let (c, tc) = kept("tkc-c", &["198.18.3.11"]);
    let pods = pods_of(&api);
    let tracker = PodTracker::default();
    let bound = Duration::from_secs(20);
    let run = Run {
        tracker: &tracker,
        bound,
        keep: false,
    };
    let round = |members: &[(&JumpboxSettings, &[Target])]| {
        let ns = NamespaceJumpbox::new(members, bound).unwrap();
        let (pods, run) = (&pods, &run);
        async move { ns.log(pods, run).await.unwrap() }
    };

    // Round 1: tkc-a and tkc-b, one pod.
    let log = round(&[(&a, &ta[..]), (&b, &tb[..])]).await;
    assert_eq!(log.shape.sections_of("tkc-b"), Some(vec![2]));
    keeper.end_round().await;
    assert_eq!(api.created_pods().len(), 1);
    assert!(keeper.take_notes().is_empty());
    let first = api.created_pods()[0].1.clone();
    assert!(first.starts_with("etcdnet-jumpbox-ns-ns-prod-"), "{first}");

    // Round 2: tkc-b left. The same pod, tkc-a's sections read from it; said once.
    let log = round(&[(&a, &ta[..])]).await;
    assert_eq!(log.shape.sections_of("tkc-a"), Some(vec![0, 1]));
    keeper.end_round().await;
    assert_eq!(
        api.created_pods().len(),
        1,
        "no new pod for a cluster that left"
    );
    let notes = keeper.take_notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("cluster tkc-b no longer takes") && notes[0].contains(&first),
        "{notes:?}"
    );
    let log = round(&[(&a, &ta[..])]).await;
    keeper.end_round().await;
    assert_eq!(log.shape.sections(), 3);
    assert!(keeper.take_notes().is_empty(), "said once");

    // Round 4: tkc-c joined: its key must be mounted, so a new pod, and the old one goes.
    let log = round(&[(&a, &ta[..]), (&c, &tc[..])]).await;
    keeper.end_round().await;
    assert_eq!(log.shape.sections_of("tkc-c"), Some(vec![2]));
    assert_eq!(log.shape.sections_of("tkc-b"), None);
    let created = api.created_pods();
    assert_eq!(created.len(), 2, "{created:?}");
    let notes = keeper.take_notes();
    assert!(
        notes.len() == 1
            && notes[0].contains("replaced")
            && notes[0].contains("cluster tkc-c joined"),
        "{notes:?}"
    );
    assert_eq!(api.existing_pods(), [created[1].clone()]);

    // Round 5: no cluster takes the jumpbox: the kept pod is deleted, said.
    keeper.end_round().await;
    let notes = keeper.take_notes();
    assert!(
        notes.len() == 1 && notes[0].contains("is deleted"),
        "{notes:?}"
    );
    assert!(api.existing_pods().is_empty(), "{:?}", api.existing_pods());
    assert!(keeper.finish(Duration::from_secs(5)).await.is_empty());
    stop.store(true, Ordering::SeqCst);
    printer.join().unwrap();
}

/// `--watch`'s kept jumpbox that no host takes (the fake leaves it as created: no node, no
/// condition, no event) is given up on seconds after its create, not at the round's bound, with
/// the line that names disabled vSphere Pods and `--via ssh`; the pod is deleted.
#[tokio::test]
async fn a_kept_jumpbox_no_host_takes_is_known_within_seconds() {
    let api = fake();
    api.leave_vsphere_pods_pending();
    let keeper = Arc::new(JumpboxKeeper::new(Duration::from_secs(1)));
    let (mut a, ta) = cluster("tkc-a", &["198.18.1.11"]);
    a.keeper = Some(keeper.clone());
    let pods = pods_of(&api);
    let tracker = PodTracker::default();
    let bound = Duration::from_secs(60);
    let run = Run {
        tracker: &tracker,
        bound,
        keep: false,
    };
    let shared = NamespaceJumpbox::new(&[(&a, &ta[..])], bound).unwrap();
    let started = std::time::Instant::now();
    let e = shared.log(&pods, &run).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(e.kind, ReachErrorKind::Unschedulable, "{e:?}");
    assert!(
        e.message.contains("vSphere Pods may be disabled") && e.message.contains("--via ssh"),
        "{}",
        e.message
    );
    assert!(api.existing_pods().is_empty(), "{:?}", api.existing_pods());
    assert!(keeper.finish(Duration::from_secs(5)).await.is_empty());
}
