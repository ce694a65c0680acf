//! The reader's requests: what a failed network request's note says, and no request for the
//! network where the Supervisor serves no NSX group.

use super::network::plan;
use super::network::tests::served;
use super::read::{failure, read_network};

#[test]
fn failures_are_notes_naming_verb_and_resource() {
    let status = |code: u16, reason: &str| {
        kube::Error::Api(Box::new(
            kube::core::Status::failure("\u{1b}]0;evil\u{7} /etc/passwd", reason).with_code(code),
        ))
    };
    assert_eq!(failure(&status(403, "Forbidden")), "forbidden");
    assert_eq!(failure(&status(404, "NotFound")), "not found");
    // The server's message never reaches the note; its reason only as letters and digits.
    assert_eq!(
        failure(&status(500, "Internal\u{1b}[2JError")),
        "failed (HTTP 500 Internal2JError)"
    );
    assert_eq!(failure(&status(503, "")), "failed (HTTP 503)");
}

#[tokio::test]
async fn a_supervisor_without_nsx_is_asked_nothing_more() {
    let (api, client) = served("healthy-v1alpha3");
    let apis = crate::supervisor::discovery::discover(&client, "sv")
        .await
        .unwrap();
    api.clear_requests();
    assert!(read_network(&client, &apis, Some("ns-prod"))
        .await
        .is_none());
    assert!(read_network(&client, &apis, None).await.is_none());
    assert!(api.requests().is_empty());

    let (api, client) = served("nsx-vpc");
    let apis = crate::supervisor::discovery::discover(&client, "sv")
        .await
        .unwrap();
    api.clear_requests();
    let net = read_network(&client, &apis, Some("ns-prod")).await.unwrap();
    // One request per planned resource, each answered.
    assert_eq!(api.requests().len(), plan(&apis).len());
    assert_eq!(net.answered.len(), plan(&apis).len());
    assert!(net.unread.is_empty(), "{:?}", net.unread);
}

/// VSphereMachines refused (403) on a CAPI v1beta2 Supervisor (references without uid): the
/// facts join the VMs by their owner's name and carry the permission missing; without the note
/// the same objects (no VSphereMachine among them) would leave every Machine without its VM,
/// which is why the evidence and a bundle keep it.
#[test]
fn refused_vsphere_machines_join_by_names_and_say_so() {
    use super::facts::{JoinedBy, MissingPermission};
    use super::Inventory;
    use serde_json::json;
    let group = |name: &str, version: &str| {
        json!({"name": name, "versions": [{"groupVersion": format!("{name}/{version}"), "version": version}],
               "preferredVersion": {"groupVersion": format!("{name}/{version}"), "version": version}})
    };
    let answer = json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        group("vmoperator.vmware.com", "v1alpha6"),
        group("cluster.x-k8s.io", "v1beta2"),
        group("controlplane.cluster.x-k8s.io", "v1beta2"),
        group("vmware.infrastructure.cluster.x-k8s.io", "v1beta2"),
    ]});
    let apis = super::discovery::from_answer(&answer, "sv").unwrap();
    // The Cluster, KCP, Machines and VMs: no VSphereMachine was read.
    let objects = crate::testing::fixture_objects("v1alpha6");
    let refused = MissingPermission {
        kind: "VSphereMachine".into(),
        verb: "list".into(),
        group: "vmware.infrastructure.cluster.x-k8s.io".into(),
        resource: "vspheremachines".into(),
        namespace: Some("ns-prod".into()),
    };
    let inv = Inventory::from_objects("ns-prod", apis, &objects);
    let without_note = inv.facts("sv", "tkc-prod").unwrap();
    assert!(
        without_note
            .nodes
            .iter()
            .all(|n| n.vm.is_none() || n.machine.is_none()),
        "read and none found: no VM is any Machine's"
    );
    let facts = inv
        .with_forbidden(std::slice::from_ref(&refused))
        .facts("sv", "tkc-prod")
        .unwrap();
    assert_eq!(facts.nodes.len(), 3, "{:#?}", facts.nodes);
    for n in &facts.nodes {
        assert_eq!(n.join.by, Some(JoinedBy::OwnerName), "{n:#?}");
        assert!(n.is_target() && n.ip().is_some(), "{n:#?}");
    }
    assert_eq!(facts.missing_permissions, std::slice::from_ref(&refused));
    assert_eq!(
        refused.describe(),
        "list vspheremachines.vmware.infrastructure.cluster.x-k8s.io in namespace ns-prod"
    );
}

/// The rows read by name: a cluster's secret through the Secret row (the same GET a typed
/// `Api<Secret>` made, its 404 kept), and the VPC objects at the version discovery prefers,
/// the configuration cluster-scoped, each a note when it is not there.
#[tokio::test]
async fn the_rows_read_by_name_ask_what_a_typed_get_asked() {
    use super::read::{read_vpc_objects, secret};
    let (api, client) = served("nsx-vpc-manager");
    let apis = crate::supervisor::discovery::discover(&client, "sv")
        .await
        .unwrap();
    api.clear_requests();
    let ssh = secret(&client, "ns-prod", "tkc-prod-ssh").await.unwrap();
    assert!(ssh.data.unwrap().contains_key("ssh-privatekey"));
    let missing = secret(&client, "ns-prod", "nope-ssh").await.unwrap_err();
    assert!(
        matches!(&missing, kube::Error::Api(s) if s.code == 404),
        "{missing}"
    );
    let paths: Vec<String> = api.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        [
            "/api/v1/namespaces/ns-prod/secrets/tkc-prod-ssh",
            "/api/v1/namespaces/ns-prod/secrets/nope-ssh"
        ]
    );

    api.clear_requests();
    let (config, info, notes) =
        read_vpc_objects(&client, &apis, "ns-prod", "ns-prod-vpc-config").await;
    assert_eq!(config.unwrap()["kind"], "VPCNetworkConfiguration");
    assert_eq!(info.unwrap()["metadata"]["name"], "ns-prod");
    assert!(notes.is_empty(), "{notes:?}");
    let mut paths: Vec<String> = api.requests().into_iter().map(|r| r.path).collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "/apis/crd.nsx.vmware.com/v1alpha1/namespaces/ns-prod/networkinfos/ns-prod",
            "/apis/crd.nsx.vmware.com/v1alpha1/vpcnetworkconfigurations/ns-prod-vpc-config",
        ]
    );
    let (config, _, notes) = read_vpc_objects(&client, &apis, "ns-prod", "other").await;
    assert!(config.is_none());
    assert_eq!(
        notes,
        ["get vpcnetworkconfigurations.crd.nsx.vmware.com \"other\": not found"]
    );
}
