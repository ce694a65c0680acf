//! Reading the Supervisor: every request the find stage makes, over the table of kinds
//! ([`KINDS`]), the rows' requests together. What was read is an [`Inventory`], understood apart
//! and without a client ([`Inventory::facts`]).
//!
//! - one cluster ([`Inventory::of_cluster`]): the Cluster and its control plane by name, its
//!   Machines, VSphereMachines and VMs by label (the `capw` labels only when `capv` finds none):
//!   5 requests (6 on an old Supervisor; 4 where VSphereMachines are not served);
//! - many ([`Inventory::of_namespace`], [`Inventory::of_all_namespaces`]): one list of each kind
//!   for all clusters, then the lists that depend on the Clusters (each control-plane kind
//!   referenced; `capw` VMs only when a cluster has no `capv` VM);
//! - the network kinds ([`Need::Evidence`] rows, [`read_network`]) only when the Supervisor
//!   serves an NSX group; a failed request there is a note, never a failure;
//! - the rows read by name for a caller ([`Selector::Named`], [`named`]): the cluster's
//!   secrets ([`secret`]) and the VPC objects ([`read_vpc_objects`]).
//!
//! This file is the only one that builds an `Api` on the Supervisor's objects (the plugin's own
//! pods aside: the routes create, watch and delete them), and it builds each from a row's
//! resource: `tests/it/architecture.rs` and `tests/it/rbac.rs` hold that.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::{join_all, try_join_all};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, ListParams, ObjectList};
use kube::core::{ApiResource, TypeMeta};
use kube::Client;

use super::discovery::SupervisorApis;
use super::extract;
use super::facts::MissingPermission;
use super::inventory::{existing, Inventory, Objects, Scope, Unread};
use super::kinds::{Kind, KindId, Need, NetKind, ResourceScope, Selector, KINDS, VM_LABELS};
use super::network::{cut_note, per_namespace, plan, resource_name, NetworkRead, OTHERS_NOTE};
use crate::error::{Error, Result};

fn name(o: &DynamicObject) -> &str {
    o.metadata.name.as_deref().unwrap_or_default()
}

fn list_error(what: &str, ns: Option<&str>, e: kube::Error) -> Error {
    match ns {
        Some(ns) => Error::kube(format!("listing {what} in namespace {ns:?}"), e),
        None => Error::kube(format!("listing {what} in all namespaces"), e),
    }
}

async fn list(
    client: &Client,
    ar: &ApiResource,
    ns: Option<&str>,
    selector: Option<&str>,
    what: &str,
) -> Result<Vec<DynamicObject>> {
    let api: Api<DynamicObject> = match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    };
    let mut params = ListParams::default();
    if let Some(s) = selector {
        params = params.labels(s);
    }
    let list: ObjectList<DynamicObject> = api
        .list(&params)
        .await
        .map_err(|e| list_error(what, ns, e))?;
    Ok(list.items)
}

/// What one read covers: one cluster (its Cluster already read by name), or every cluster of
/// the namespace (every namespace when `ns` is None).
#[derive(Clone, Copy)]
enum Reach<'a> {
    Cluster(&'a DynamicObject),
    Clusters,
}

/// An object with its type (list items may carry no apiVersion/kind of their own): the
/// control planes, whose kind the Cluster names, are told apart by it.
fn typed(mut o: DynamicObject, ar: &ApiResource) -> DynamicObject {
    o.types = Some(TypeMeta {
        api_version: ar.api_version.clone(),
        kind: ar.kind.clone(),
    });
    o
}

/// The rows' first requests together (the network rows are [`read_network`]'s). A failed
/// request of a [`Need::Advice`] row is a note ([`Unread`]), never a failure; a 403 on a
/// [`Need::Degrade`] row is the permission missing.
async fn read_rows(
    client: &Client,
    apis: &SupervisorApis,
    ns: Option<&str>,
    reach: Reach<'_>,
    rows: impl Iterator<Item = &'static Kind>,
) -> Result<(Objects, Unread, Vec<MissingPermission>)> {
    let read = try_join_all(
        rows.filter(|k| k.optional != Need::Evidence && k.walked())
            .map(|k| async move {
                match read_row(client, apis, ns, reach, k).await {
                    Ok(objects) => Ok::<_, Error>((k.id, Ok(objects))),
                    // Not found: the Supervisor does not serve the kind (a plain discovery
                    // answer names no kinds, so it was asked for).
                    Err(Error::Kube(f))
                        if k.optional == Need::Advice && is_not_found(&f.source) =>
                    {
                        Ok((k.id, Ok(Vec::new())))
                    }
                    Err(Error::Kube(f)) if k.optional == Need::Advice => {
                        Ok((k.id, Err(Unanswered::Note(advice_note(k, ns, &f.source)))))
                    }
                    // Forbidden, on a kind the walk can do without: the permission is named
                    // and the run goes on ([`Need::Degrade`]).
                    Err(Error::Kube(f))
                        if k.optional == Need::Degrade && is_forbidden(&f.source) =>
                    {
                        Ok((k.id, Err(Unanswered::Forbidden(missing(k, ns)))))
                    }
                    Err(e) => Err(e),
                }
            }),
    )
    .await?;
    let mut objects = Objects::new();
    let mut unread = Unread::new();
    let mut forbidden = Vec::new();
    for (id, answer) in read {
        match answer {
            Ok(o) => {
                objects.insert(id, o);
            }
            Err(Unanswered::Note(note)) => {
                unread.insert(id, note);
            }
            Err(Unanswered::Forbidden(p)) => forbidden.push(p),
        }
    }
    Ok((objects, unread, forbidden))
}

/// Why a row that may fail without failing the read was not read.
enum Unanswered {
    /// An advice row's note.
    Note(String),
    /// A [`Need::Degrade`] row's 403: the permission missing.
    Forbidden(MissingPermission),
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

fn is_forbidden(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 403)
}

/// The permission a [`Need::Degrade`] row's refused list lacked (the row's own words: never
/// the server's message).
fn missing(kind: &Kind, ns: Option<&str>) -> MissingPermission {
    MissingPermission {
        kind: kind.name.unwrap_or_default().to_string(),
        verb: "list".to_string(),
        group: match kind.group {
            super::kinds::Group::Named(g) => g.to_string(),
            super::kinds::Group::Referenced => String::new(),
        },
        resource: kind.resource.unwrap_or_default().to_string(),
        namespace: ns.map(str::to_string),
    }
}

/// The note of an advice row that could not be read: the request and why, in fixed words.
fn advice_note(kind: &Kind, ns: Option<&str>, e: &kube::Error) -> String {
    let resource = kind.resource.unwrap_or_default();
    let place = match ns {
        Some(ns) => format!("in namespace {ns}"),
        None => "in all namespaces".to_string(),
    };
    format!("list {resource} {place}: {}", failure(e))
}

/// One row's first request(s): what its selector asks for, the kind at the version discovery
/// chose; nothing when the kind is not served (or waits for the Clusters: [`read_after`]).
async fn read_row(
    client: &Client,
    apis: &SupervisorApis,
    ns: Option<&str>,
    reach: Reach<'_>,
    kind: &Kind,
) -> Result<Vec<DynamicObject>> {
    let cluster = match reach {
        Reach::Cluster(c) => Some(c),
        Reach::Clusters => None,
    };
    if let (KindId::Cluster, Some(c)) = (kind.id, cluster) {
        return Ok(vec![c.clone()]);
    }
    if kind.selector == Selector::ControlPlaneRef {
        return match (cluster, ns) {
            (Some(c), Some(ns)) => Ok(control_plane_of(client, apis, ns, c)
                .await?
                .into_iter()
                .collect()),
            _ => Ok(Vec::new()),
        };
    }
    let Some(ar) = apis.resource(kind.id) else {
        return Ok(Vec::new());
    };
    let what = format!("{}s", kind.name.unwrap_or_default());
    let cluster_name = cluster.map(name);
    if kind.selector == Selector::VmRole {
        // One cluster: `capv`, else `capw`; many: `capv` now, `capw` after the Clusters.
        for (_, prefix) in VM_LABELS {
            let selector = kind.selector.labels(cluster_name, prefix);
            let vms = list(client, &ar, ns, selector.as_deref(), &what).await?;
            if !vms.is_empty() || cluster.is_none() {
                return Ok(vms);
            }
        }
        return Ok(Vec::new());
    }
    let selector = kind.selector.labels(cluster_name, "");
    list(client, &ar, ns, selector.as_deref(), &what).await
}

/// The rows' requests that depend on the Clusters read (many clusters): each control-plane
/// kind the Clusters reference, and old-label VMs where a cluster has no new-label one.
async fn read_after(client: &Client, inv: &mut Inventory, ns: Option<&str>) -> Result<()> {
    let inv_ref = &*inv;
    let rows = KINDS
        .iter()
        .filter(|k| k.optional != Need::Evidence && k.walked());
    let read = try_join_all(rows.map(|k| async move {
        let objects = match k.selector {
            Selector::ControlPlaneRef => {
                let kinds = inv_ref.referenced_control_planes();
                let lists = try_join_all(kinds.iter().map(|ar| async move {
                    let what = format!("{}s", ar.kind);
                    list(client, ar, ns, None, &what)
                        .await
                        .map(|items| items.into_iter().map(|o| typed(o, ar)).collect::<Vec<_>>())
                }))
                .await?;
                lists.into_iter().flatten().collect()
            }
            Selector::VmRole if inv_ref.clusters_without_vms() => {
                let selector = k.selector.labels(None, VM_LABELS[1].1);
                let what = format!("{}s", k.name.unwrap_or_default());
                match inv_ref.apis.resource(k.id) {
                    Some(ar) => list(client, &ar, ns, selector.as_deref(), &what).await?,
                    None => Vec::new(),
                }
            }
            _ => Vec::new(),
        };
        Ok::<_, Error>((k.id, objects))
    }))
    .await?;
    for (id, objects) in read {
        inv.objects.entry(id).or_default().extend(objects);
    }
    Ok(())
}

impl Inventory {
    /// One cluster, read as directly as the API allows (see the module's doc). An unknown
    /// cluster is [`Error::ClusterNotFound`], naming the clusters that do exist.
    pub async fn of_cluster(
        client: &Client,
        apis: &SupervisorApis,
        scope: &Scope,
        cluster_name: &str,
    ) -> Result<Inventory> {
        let ns = scope.namespace.as_str();
        let clusters: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &apis.cluster);
        let cluster = match clusters.get_opt(cluster_name).await {
            Ok(Some(c)) => c,
            Ok(None) => return Err(cluster_not_found(&clusters, scope, cluster_name).await),
            Err(e) => {
                return Err(Error::kube(
                    format!("reading Cluster {cluster_name:?} in namespace {ns:?}"),
                    e,
                ))
            }
        };
        let ((objects, unread, forbidden), network) = tokio::try_join!(
            read_rows(
                client,
                apis,
                Some(ns),
                Reach::Cluster(&cluster),
                KINDS.iter()
            ),
            async { Ok(read_network(client, apis, Some(ns)).await) },
        )?;
        Ok(Inventory {
            namespace: ns.to_string(),
            apis: apis.clone(),
            objects,
            unread,
            forbidden,
            network,
        })
    }

    /// Every cluster of one namespace, with one list of each kind for all of them: 4 requests
    /// (plus one per further control-plane kind, one for old labels), whatever the number of
    /// clusters.
    pub async fn of_namespace(
        client: &Client,
        apis: &SupervisorApis,
        ns: &str,
    ) -> Result<Inventory> {
        Inventory::of_namespace_with(client, apis, ns, None).await
    }

    /// [`Inventory::of_namespace`], with the other namespaces' SecurityPolicies already listed
    /// (`-A` per namespace: one request for them all).
    async fn of_namespace_with(
        client: &Client,
        apis: &SupervisorApis,
        ns: &str,
        others: Option<&OthersAnswer>,
    ) -> Result<Inventory> {
        let ((objects, unread, forbidden), network) = tokio::try_join!(
            read_rows(client, apis, Some(ns), Reach::Clusters, KINDS.iter()),
            async { Ok(read_network_with(client, apis, Some(ns), others).await) },
        )?;
        let mut inv = Inventory {
            namespace: ns.to_string(),
            apis: apis.clone(),
            objects,
            unread,
            forbidden,
            network,
        };
        read_after(client, &mut inv, Some(ns)).await?;
        Ok(inv)
    }

    /// Every cluster the user can see: one list of each kind across the Supervisor when the
    /// user may list cluster-wide, else per namespace, over the namespaces the user can list (a
    /// namespace whose Clusters the user may not list is left out: the user cannot see it).
    /// Returns one inventory per namespace that has clusters, by namespace name.
    pub async fn of_all_namespaces(
        client: &Client,
        apis: &SupervisorApis,
    ) -> Result<Vec<Inventory>> {
        let clusters = KindId::Cluster.row();
        match read_row(client, apis, None, Reach::Clusters, clusters).await {
            Ok(found) => {
                let rest = KINDS.iter().filter(|k| k.id != KindId::Cluster);
                let ((mut objects, unread, forbidden), network) = tokio::try_join!(
                    read_rows(client, apis, None, Reach::Clusters, rest),
                    async { Ok(read_network(client, apis, None).await) },
                )?;
                objects.insert(KindId::Cluster, found);
                let mut all = Inventory {
                    namespace: String::new(),
                    apis: apis.clone(),
                    objects,
                    unread,
                    forbidden,
                    network,
                };
                read_after(client, &mut all, None).await?;
                Ok(all.split())
            }
            Err(e) if e.is_forbidden() => {
                // The Namespace row's resource (core v1 namespaces, listed across the Supervisor).
                let namespaces = apis
                    .resource(KindId::Net(NetKind::Namespace))
                    .expect("the Namespace row names its version");
                let list = list(client, &namespaces, None, None, "Namespaces").await?;
                let mut names: Vec<String> =
                    list.into_iter().filter_map(|n| n.metadata.name).collect();
                names.sort();
                // The other namespaces' SecurityPolicies once for every namespace (NCP/T1).
                let others = read_others(client, apis).await;
                let others = &others;
                let found = try_join_all(names.iter().map(|ns| async move {
                    match Inventory::of_namespace_with(client, apis, ns, Some(others)).await {
                        Ok(inv) => Ok(Some(inv)),
                        Err(e) if e.is_forbidden() => Ok(None),
                        Err(e) => Err(e),
                    }
                }))
                .await?;
                Ok(found
                    .into_iter()
                    .flatten()
                    .filter(|inv| !inv.of(KindId::Cluster).is_empty())
                    .collect())
            }
            Err(e) => Err(e),
        }
    }
}

/// The control plane a Cluster references, read by name (None when it has no reference, its
/// kind is not served or the object does not exist: [`Inventory::facts`] says which).
async fn control_plane_of(
    client: &Client,
    apis: &SupervisorApis,
    ns: &str,
    cluster: &DynamicObject,
) -> Result<Option<DynamicObject>> {
    let Some(r) = extract::control_plane_ref(&cluster.data) else {
        return Ok(None);
    };
    let Some(ar) = apis.kind_in(&r.group, &r.kind) else {
        return Ok(None);
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    match api.get_opt(&r.name).await {
        Ok(found) => Ok(found.map(|o| typed(o, &ar))),
        Err(e) => Err(Error::kube(
            format!("reading {} {:?} in namespace {ns:?}", r.kind, r.name),
            e,
        )),
    }
}

/// The error for an unknown cluster names the clusters that do exist, so a typo is one glance.
async fn cluster_not_found(clusters: &Api<DynamicObject>, scope: &Scope, name: &str) -> Error {
    let ns = &scope.namespace;
    let existing = match clusters.list(&ListParams::default()).await {
        Ok(list) => {
            let mut names: Vec<String> = list
                .items
                .into_iter()
                .filter_map(|c| c.metadata.name)
                .collect();
            names.sort();
            existing(ns, &names)
        }
        Err(_) => format!(
            "check the name with: {}",
            scope.kubectl.run(&format!(
                "get clusters.cluster.x-k8s.io -n {}",
                crate::command::namespace(ns)
            ))
        ),
    };
    Error::ClusterNotFound {
        name: name.to_string(),
        namespace: ns.to_string(),
        context: scope.context.clone(),
        existing,
    }
}

/// Why a request failed, in words fit for a note: fixed words for 403/404, the HTTP code and
/// the server's reason word otherwise (never its message: someone else's text).
pub(crate) fn failure(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) if s.code == 403 => "forbidden".to_string(),
        kube::Error::Api(s) if s.code == 404 => "not found".to_string(),
        kube::Error::Api(s) => {
            let reason: String = s
                .reason
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .take(40)
                .collect();
            format!("failed (HTTP {} {reason})", s.code).replace(" )", ")")
        }
        _ => "failed (no answer: the connection failed or the request went past its bounds)"
            .to_string(),
    }
}

/// Reads what [`plan`] says, in `ns` (None: across all namespaces, and every Namespace). The
/// requests run together; each failure is a note. With `ns`, where the Supervisor serves
/// nsx.vmware.com SecurityPolicies, one more request lists those of every namespace (T1/NCP
/// mode: `appliedTo: [{}]` in another namespace selects these VMs too); across all namespaces
/// the one list per resource already holds them. Every request is bounded in time and size by
/// the client ([`crate::bounds`]). Returns None when nothing is to be read.
pub(crate) async fn read_network(
    client: &Client,
    apis: &SupervisorApis,
    ns: Option<&str>,
) -> Option<NetworkRead> {
    read_network_with(client, apis, ns, None).await
}

/// The other namespaces' nsx.vmware.com SecurityPolicies, listed once across all namespaces
/// (cut per namespace as any list), or the note of why they could not be; None when the group
/// is not served. Shared by the per-namespace reads of `-A` when the user may not list
/// across namespaces ([`read_network_with`]): one request, not one per namespace.
pub(crate) type OthersAnswer =
    Option<std::result::Result<(Arc<Vec<DynamicObject>>, BTreeMap<String, usize>), String>>;

/// Lists what [`OthersAnswer`] says.
pub(crate) async fn read_others(client: &Client, apis: &SupervisorApis) -> OthersAnswer {
    let ar = plan(apis)
        .into_iter()
        .find(|(k, _)| *k == NetKind::T1SecurityPolicy)
        .map(|(_, ar)| ar)?;
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    Some(match api.list(&ListParams::default()).await {
        Ok(l) => {
            let (items, left) = per_namespace(l.items);
            Ok((Arc::new(items), left))
        }
        Err(e) => Err(format!(
            "{OTHERS_NOTE}: list {} in all namespaces: {}",
            resource_name(&ar),
            failure(&e)
        )),
    })
}

/// [`read_network`], with the other namespaces' policies already listed (`given`), or listed here when
/// None and `ns` is one namespace.
pub(crate) async fn read_network_with(
    client: &Client,
    apis: &SupervisorApis,
    ns: Option<&str>,
    given: Option<&OthersAnswer>,
) -> Option<NetworkRead> {
    let plan = plan(apis);
    if plan.is_empty() {
        return None;
    }
    let answers = join_all(plan.iter().map(|(kind, ar)| async move {
        let resource = resource_name(ar);
        let row = KindId::Net(*kind).row();
        // The vSphere Namespace by name; any other kind listed (across all namespaces: all).
        let own = row.selector == Selector::OwnNamespace;
        let (verb, result) = match (own, ns) {
            (true, Some(ns)) => {
                let api: Api<DynamicObject> = Api::all_with(client.clone(), ar);
                ("get", api.get(ns).await.map(|o| vec![o]))
            }
            (false, Some(ns)) if row.scope == ResourceScope::Namespaced => {
                let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, ar);
                (
                    "list",
                    api.list(&ListParams::default()).await.map(|l| l.items),
                )
            }
            _ => {
                let api: Api<DynamicObject> = Api::all_with(client.clone(), ar);
                (
                    "list",
                    api.list(&ListParams::default()).await.map(|l| l.items),
                )
            }
        };
        let place = match (own, ns) {
            (true, Some(ns)) => format!("{resource} {ns}"),
            (_, Some(ns)) => format!("{resource} in namespace {ns}"),
            (_, None) => format!("{resource} in all namespaces"),
        };
        (
            *kind,
            result.map_err(|e| format!("{verb} {place}: {}", failure(&e))),
        )
    }));
    // The other namespaces' nsx.vmware.com SecurityPolicies (only with one namespace: across
    // all namespaces the list above holds them).
    let others = async {
        match (given, ns) {
            (Some(answer), Some(_)) => answer.clone(),
            (None, Some(_)) => read_others(client, apis).await,
            (_, None) => None,
        }
    };
    let (answers, others) = futures::join!(answers, others);
    let mut out = NetworkRead {
        resources: plan.into_iter().collect(),
        ..NetworkRead::default()
    };
    for (kind, answer) in answers {
        match answer {
            Ok(items) => {
                let (items, left) = per_namespace(items);
                for (lns, n) in left {
                    out.unread
                        .push(cut_note(&resource_name(&out.resources[&kind]), &lns, n));
                    out.left_out.insert((kind, lns), n);
                }
                out.answered.insert(kind);
                out.objects.insert(kind, items);
            }
            Err(note) => out.unread.push(note),
        }
    }
    match (others, ns) {
        (Some(Ok((items, left))), Some(own)) => {
            // The own namespace's are in the namespaced list (and its cut): `of_cluster` takes
            // only the others' from the shared list.
            for (lns, n) in left.into_iter().filter(|(lns, _)| lns != own) {
                out.left_out.insert((NetKind::T1SecurityPolicy, lns), n);
            }
            out.other_policies = Some(items);
        }
        (Some(Err(note)), _) => out.others_unread = Some(note),
        // Across all namespaces: the one list, when it was answered.
        (_, None) if out.answered.contains(&NetKind::T1SecurityPolicy) => {
            out.other_policies = Some(Arc::new(
                out.objects
                    .get(&NetKind::T1SecurityPolicy)
                    .cloned()
                    .unwrap_or_default(),
            ));
        }
        _ => {}
    }
    Some(out)
}

/// One object of a row read by name for a caller ([`Selector::Named`]), at the version the row
/// says (discovery's for a [`Versions::Preferred`](super::kinds::Versions) row); `ns` None for a
/// cluster-scoped kind. Not found is the API's 404, as a typed `get` gives it. Panics on a row
/// the walk reads (a caller's mistake, caught by every test that reads it).
pub(crate) async fn named(
    client: &Client,
    apis: Option<&SupervisorApis>,
    id: KindId,
    ns: Option<&str>,
    name: &str,
) -> std::result::Result<DynamicObject, Unserved> {
    let row = id.row();
    assert_eq!(row.selector, Selector::Named, "{id:?} is read by the walk");
    let ar = match (apis, row.fixed()) {
        (_, Some(ar)) => ar,
        (Some(apis), None) => apis.resource(id).ok_or(Unserved::NotServed)?,
        (None, None) => return Err(Unserved::NotServed),
    };
    let api: Api<DynamicObject> = match (row.scope, ns) {
        (ResourceScope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, &ar),
        _ => Api::all_with(client.clone(), &ar),
    };
    api.get(name).await.map_err(Unserved::Failed)
}

/// Why [`named`] returned no object: the row's group or kind is not served, or the request failed.
#[derive(Debug)]
pub(crate) enum Unserved {
    NotServed,
    Failed(kube::Error),
}

/// A cluster's secret by name (`<cluster>-kubeconfig`, `<cluster>-ssh`), through the Secret row
/// ([`KindId::Secret`]): not found is the API's 404, as a typed `get` gives it.
pub(crate) async fn secret(client: &Client, namespace: &str, name: &str) -> kube::Result<Secret> {
    match named(client, None, KindId::Secret, Some(namespace), name).await {
        Ok(o) => serde_json::from_value(serde_json::to_value(o).map_err(kube::Error::SerdeError)?)
            .map_err(kube::Error::SerdeError),
        Err(Unserved::Failed(e)) => Err(e),
        // The Secret row names its version: discovery is never asked for it.
        Err(Unserved::NotServed) => unreachable!("core v1 secrets are always served"),
    }
}

/// nsx-operator's objects that say which NSX VPC a namespace is on, read only for NSX Manager
/// (`--nsx-manager` on VPC networking): the cluster-scoped `VPCNetworkConfiguration` the
/// Namespace's `nsx.vmware.com/vpc_network_config` annotation names, and the namespace's
/// `NetworkInfo`, named as the namespace (vmware-tanzu/nsx-operator
/// `pkg/apis/vpc/v1alpha1/vpcnetworkconfiguration_types.go`, `networkinfo_types.go`,
/// `pkg/controllers/namespace/namespace_controller.go`), through their rows
/// ([`KindId::VpcNetworkConfiguration`], [`KindId::NetworkInfo`]) at the version discovery
/// prefers. Two GETs, each bounded by the client; a failure is the note of what could not be
/// read, never a failed diagnosis.
pub(crate) async fn read_vpc_objects(
    client: &Client,
    apis: &SupervisorApis,
    namespace: &str,
    config: &str,
) -> (
    Option<serde_json::Value>,
    Option<serde_json::Value>,
    Vec<String>,
) {
    let (c, i) = futures::join!(
        named(
            client,
            Some(apis),
            KindId::VpcNetworkConfiguration,
            None,
            config
        ),
        named(
            client,
            Some(apis),
            KindId::NetworkInfo,
            Some(namespace),
            namespace
        )
    );
    let mut notes = Vec::new();
    let plural = |id: KindId| id.row().resource.unwrap_or_default();
    let group = super::kinds::NSX_VPC_GROUP;
    let mut take = |r: std::result::Result<DynamicObject, Unserved>, what: String| match r {
        Ok(o) => serde_json::to_value(o).ok(),
        Err(Unserved::Failed(e)) if is_not_found(&e) => {
            notes.push(format!("{what}: not found"));
            None
        }
        Err(Unserved::NotServed) => {
            notes.push(format!("{what}: not served"));
            None
        }
        Err(Unserved::Failed(e)) => {
            notes.push(format!("{what}: {}", failure(&e)));
            None
        }
    };
    let c = take(
        c,
        format!(
            "get {}.{group} {config:?}",
            plural(KindId::VpcNetworkConfiguration)
        ),
    );
    let i = take(
        i,
        format!(
            "get {}.{group} {namespace:?} in namespace {namespace:?}",
            plural(KindId::NetworkInfo)
        ),
    );
    (c, i, notes)
}
