//! The fake's API behaviour through the real kube client: errors, writes, watches, paging.

use crate::common;

use std::time::Duration;

use etcdnet_fakeapi::{supervisor_set, FakeApi, FakeConfig, Forbid, PodScript};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
    WatchEvent, WatchParams,
};
use kube::discovery::Discovery;
use kube::runtime::watcher;
use serde_json::json;

fn ar(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn healthy() -> FakeApi {
    FakeApi::start(supervisor_set("healthy-v1alpha3")).unwrap()
}

fn api_error(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn not_found_and_unknown_paths_are_real_statuses() {
    let api = healthy();
    let dir = tempfile::tempdir().unwrap();
    let client = common::client(&api, dir.path()).await;
    let vms: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "ns-prod",
        &ar(
            "vmoperator.vmware.com",
            "v1alpha3",
            "VirtualMachine",
            "virtualmachines",
        ),
    );
    let s = api_error(vms.get("x").await.unwrap_err());
    assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
    assert_eq!(
        s.message,
        "virtualmachines.vmoperator.vmware.com \"x\" not found"
    );
    let d = s.details.unwrap();
    assert_eq!(
        (d.name.as_str(), d.group.as_str(), d.kind.as_str()),
        ("x", "vmoperator.vmware.com", "virtualmachines")
    );

    let pods: Api<Pod> = Api::namespaced(client.clone(), "ns-prod");
    assert_eq!(
        api_error(pods.get("p").await.unwrap_err()).message,
        "pods \"p\" not found"
    );

    // A group the server does not serve.
    let other: Api<DynamicObject> = Api::namespaced_with(
        client,
        "ns-prod",
        &ar("example.com", "v1", "Thing", "things"),
    );
    let s = api_error(other.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(
        (s.code, s.message.as_str()),
        (404, "the server could not find the requested resource")
    );
    let (code, _, body) = common::get(&api.url(), "/apis/vmoperator.vmware.com/v1alpha9", None);
    assert_eq!(code, 404);
    assert_eq!(common::json(&body)["kind"], "Status");
}

#[tokio::test]
async fn forbidden_is_a_real_status() {
    let api =
        FakeApi::start_with(FakeConfig::from_dir(supervisor_set("forbidden")).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let client = common::client(&api, dir.path()).await;
    let machines: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "ns-prod",
        &ar("cluster.x-k8s.io", "v1beta1", "Machine", "machines"),
    );
    let s = api_error(machines.list(&ListParams::default()).await.unwrap_err());
    assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        s.message,
        "machines.cluster.x-k8s.io is forbidden: User \"sso:alice@vsphere.local\" cannot list resource \"machines\" in API group \"cluster.x-k8s.io\" in the namespace \"ns-prod\""
    );
    let d = s.details.unwrap();
    assert_eq!(
        (d.group.as_str(), d.kind.as_str()),
        ("cluster.x-k8s.io", "machines")
    );
    // All namespaces would read ns-prod too.
    let everywhere: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ar("cluster.x-k8s.io", "v1beta1", "Machine", "machines"),
    );
    let s = api_error(everywhere.list(&ListParams::default()).await.unwrap_err());
    assert!(s.message.ends_with("at the cluster scope"), "{}", s.message);
    // A single get is allowed.
    machines.get("tkc-prod-7xk2p-4rz8m").await.unwrap();

    // Rules added at run time, with a name: "<res> \"name\" is forbidden".
    api.forbid(Forbid {
        verb: Some("get".into()),
        group: Some(String::new()),
        resource: Some("secrets".into()),
        name: Some("tkc-prod-ssh".into()),
        ..Default::default()
    });
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client, "ns-prod");
    let s = api_error(secrets.get("tkc-prod-ssh").await.unwrap_err());
    assert_eq!(
        s.message,
        "secrets \"tkc-prod-ssh\" is forbidden: User \"sso:alice@vsphere.local\" cannot get resource \"secrets\" in API group \"\" in the namespace \"ns-prod\""
    );
    secrets.get("tkc-prod-kubeconfig").await.unwrap();
}

#[tokio::test]
async fn create_conflict_delete_and_the_request_log() {
    let api = healthy();
    let dir = tempfile::tempdir().unwrap();
    let client = common::client(&api, dir.path()).await;
    api.clear_requests();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "ns-prod");
    let cm: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "probe", "labels": {"app": "etcdnet"}}, "data": {"a": "b"}}),
    )
    .unwrap();
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    assert!(
        created.metadata.uid.is_some()
            && created.metadata.resource_version.is_some()
            && created.metadata.creation_timestamp.is_some()
    );
    let s = api_error(cms.create(&PostParams::default(), &cm).await.unwrap_err());
    assert_eq!(
        (s.code, s.reason.as_str(), s.message.as_str()),
        (409, "AlreadyExists", "configmaps \"probe\" already exists")
    );
    // A namespace that does not exist.
    let nowhere: Api<ConfigMap> = Api::namespaced(client.clone(), "ns-nope");
    assert_eq!(
        api_error(
            nowhere
                .create(&PostParams::default(), &cm)
                .await
                .unwrap_err()
        )
        .message,
        "namespaces \"ns-nope\" not found"
    );

    cms.delete("probe", &DeleteParams::foreground())
        .await
        .unwrap();
    assert_eq!(api_error(cms.get("probe").await.unwrap_err()).code, 404);
    for n in ["x1", "x2"] {
        let mut c = cm.clone();
        c.metadata.name = Some(n.into());
        cms.create(&PostParams::default(), &c).await.unwrap();
    }
    cms.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("app=etcdnet"),
    )
    .await
    .unwrap();
    assert!(cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .is_empty());

    let reqs = api.requests();
    assert_eq!(reqs[0].method, "POST");
    assert_eq!(reqs[0].path, "/api/v1/namespaces/ns-prod/configmaps");
    assert!(reqs[0].body.as_deref().unwrap().contains("\"probe\""));
    let dc = reqs
        .iter()
        .find(|r| r.method == "DELETE" && r.param("labelSelector").is_some())
        .unwrap();
    assert_eq!(dc.param("labelSelector").as_deref(), Some("app=etcdnet"));
    assert!(
        !reqs.iter().any(|r| r.path.contains("/secrets")),
        "no secret was read"
    );
}

#[tokio::test]
async fn lists_page_and_select_by_field() {
    let api = healthy();
    let dir = tempfile::tempdir().unwrap();
    let client = common::client(&api, dir.path()).await;
    let machines: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "ns-prod",
        &ar("cluster.x-k8s.io", "v1beta1", "Machine", "machines"),
    );
    let first = machines
        .list(&ListParams::default().limit(2))
        .await
        .unwrap();
    assert_eq!(first.items.len(), 2);
    let token = first.metadata.continue_.clone().expect("more to come");
    let rest = machines
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .unwrap();
    let rest2 = machines
        .list(
            &ListParams::default()
                .limit(2)
                .continue_token(rest.metadata.continue_.as_deref().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(rest.items.len() + rest2.items.len(), 3);
    assert!(rest2.metadata.continue_.as_deref().unwrap_or("").is_empty());

    let one = machines
        .list(&ListParams::default().fields("metadata.name=tkc-prod-7xk2p-9qtvw"))
        .await
        .unwrap();
    assert_eq!(one.items.len(), 1);
    let s = api_error(
        machines
            .list(&ListParams::default().fields("spec.clusterName=tkc-prod"))
            .await
            .unwrap_err(),
    );
    assert_eq!(s.code, 400);
    let s = api_error(
        machines
            .list(&ListParams::default().labels("a in b"))
            .await
            .unwrap_err(),
    );
    assert_eq!(s.code, 400);
}

#[tokio::test]
async fn other_versions_are_not_converted() {
    let api = healthy();
    let dir = tempfile::tempdir().unwrap();
    let client = common::client(&api, dir.path()).await;
    let old: Api<DynamicObject> = Api::namespaced_with(
        client,
        "ns-prod",
        &ar(
            "vmoperator.vmware.com",
            "v1alpha1",
            "VirtualMachine",
            "virtualmachines",
        ),
    );
    let s = api_error(old.get("tkc-prod-7xk2p-4rz8m").await.unwrap_err());
    assert_eq!(s.code, 500);
    assert!(s.message.contains("does not convert"), "{}", s.message);
}

#[tokio::test]
async fn watch_replays_and_streams() {
    let api = healthy();
    let dir = tempfile::tempdir().unwrap();
    let client = common::client(&api, dir.path()).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "ns-prod");
    let rv = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut events = cms
        .watch(
            &WatchParams::default().labels("app=etcdnet").timeout(5),
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    api.insert(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w", "namespace": "ns-prod", "labels": {"app": "etcdnet"}}})).unwrap();
    api.insert(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other", "namespace": "ns-prod"}})).unwrap();
    api.modify("v1", "ConfigMap", "ns-prod", "w", |o| {
        o["data"] = json!({"k": "v"})
    })
    .unwrap();
    api.delete("v1", "ConfigMap", "ns-prod", "w").unwrap();
    let mut seen = Vec::new();
    while let Some(ev) = events.try_next().await.unwrap() {
        match ev {
            WatchEvent::Added(o) => seen.push(format!("ADDED {}", o.metadata.name.unwrap())),
            WatchEvent::Modified(o) => seen.push(format!("MODIFIED {}", o.metadata.name.unwrap())),
            WatchEvent::Deleted(o) => seen.push(format!("DELETED {}", o.metadata.name.unwrap())),
            other => panic!("{other:?}"),
        }
        if seen.len() == 3 {
            break;
        }
    }
    assert_eq!(seen, ["ADDED w", "MODIFIED w", "DELETED w"]);

    // From resourceVersion 0: the current objects as ADDED. The stream closes at timeoutSeconds.
    let start = std::time::Instant::now();
    let all: Vec<_> = cms
        .watch(&WatchParams::default().timeout(1), "0")
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(
        matches!(&all[..], [WatchEvent::Added(o)] if o.metadata.name.as_deref() == Some("other")),
        "{all:?}"
    );
    assert!(start.elapsed() >= Duration::from_millis(900));
}

#[tokio::test]
async fn runtime_watcher_lists_then_follows() {
    let api = healthy();
    let dir = tempfile::tempdir().unwrap();
    let client = common::client(&api, dir.path()).await;
    let vms: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "ns-prod",
        &ar(
            "vmoperator.vmware.com",
            "v1alpha3",
            "VirtualMachine",
            "virtualmachines",
        ),
    );
    for cfg in [
        watcher::Config::default().labels("capv.vmware.com/cluster.role=controlplane"),
        watcher::Config::default()
            .labels("capv.vmware.com/cluster.role=controlplane")
            .streaming_lists(),
    ] {
        let mut stream = watcher(vms.clone(), cfg).boxed();
        let mut initial = Vec::new();
        loop {
            match tokio::time::timeout(Duration::from_secs(5), stream.try_next())
                .await
                .unwrap()
                .unwrap()
                .unwrap()
            {
                watcher::Event::Init => {}
                watcher::Event::InitApply(o) => initial.push(o.metadata.name.unwrap()),
                watcher::Event::InitDone => break,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(initial.len(), 3, "{initial:?}");
        let name = initial[0].clone();
        api.modify(
            "vmoperator.vmware.com/v1alpha3",
            "VirtualMachine",
            "ns-prod",
            &name,
            |vm| vm["status"]["powerState"] = json!("PoweredOff"),
        )
        .unwrap();
        match tokio::time::timeout(Duration::from_secs(5), stream.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            watcher::Event::Apply(o) => assert_eq!(o.data["status"]["powerState"], "PoweredOff"),
            other => panic!("{other:?}"),
        }
        api.modify(
            "vmoperator.vmware.com/v1alpha3",
            "VirtualMachine",
            "ns-prod",
            &name,
            |vm| vm["status"]["powerState"] = json!("PoweredOn"),
        )
        .unwrap();
        let _ = tokio::time::timeout(Duration::from_secs(5), stream.try_next())
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn pods_run_when_the_test_says_so() {
    let api = healthy();
    api.on_pod_created(|pod| {
        let name = pod["metadata"]["name"].as_str().unwrap_or("");
        name.starts_with("etcdnet-probe-")
            .then(|| PodScript::succeeds("probe output\n"))
    });
    let dir = tempfile::tempdir().unwrap();
    let client = common::client(&api, dir.path()).await;
    let pods: Api<Pod> = Api::namespaced(client, "ns-prod");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"generateName": "etcdnet-probe-"},
        "spec": {"containers": [{"name": "probe", "image": "busybox"}], "restartPolicy": "Never"}
    }))
    .unwrap();
    let created = pods.create(&PostParams::default(), &pod).await.unwrap();
    let name = created.metadata.name.unwrap();
    assert!(name.len() == "etcdnet-probe-".len() + 5, "{name}");
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Pending"));
    let done = kube::runtime::wait::await_condition(pods.clone(), &name, |p: Option<&Pod>| {
        p.and_then(|p| p.status.as_ref())
            .and_then(|s| s.phase.as_deref())
            == Some("Succeeded")
    });
    tokio::time::timeout(Duration::from_secs(5), done)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        pods.logs(&name, &Default::default()).await.unwrap(),
        "probe output\n"
    );
    pods.delete(&name, &DeleteParams::background())
        .await
        .unwrap();
    assert_eq!(api_error(pods.get(&name).await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn aggregated_discovery_when_the_set_says_so() {
    let api = FakeApi::start(supervisor_set("kcp-v1beta2")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let client = common::client(&api, dir.path()).await;
    let d = Discovery::new(client.clone())
        .run_aggregated()
        .await
        .unwrap();
    let vm = d.get("vmoperator.vmware.com").unwrap();
    assert_eq!(vm.preferred_version_or_latest(), "v1alpha5");
    assert_eq!(
        d.get("cluster.x-k8s.io")
            .unwrap()
            .preferred_version_or_latest(),
        "v1beta2"
    );
    assert!(d.has_group(""));

    // A set without it answers the legacy form, as an older server does. kube-rs then reads the
    // legacy APIGroupList as an aggregated list with no items: no error, just no groups. A client
    // that uses run_aggregated must fall back to run() when a group it needs is missing.
    let old = healthy();
    let client = common::client(&old, dir.path()).await;
    let empty = Discovery::new(client.clone()).run_aggregated().await;
    assert!(empty
        .map(|d| !d.has_group("vmoperator.vmware.com"))
        .unwrap_or(true));
    assert!(Discovery::new(client.clone())
        .run()
        .await
        .unwrap()
        .has_group("vmoperator.vmware.com"));
}
