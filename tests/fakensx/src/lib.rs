//! A fake NSX Manager for kubectl-etcdnet's tests, built from the public Policy API (the API
//! reference's shapes, vmware/vsphere-automation-sdk-go's generated paths,
//! terraform-provider-nsxt's fields), never from what the plugin sends.
//!
//! [`FakeNsx`] serves a [`World`] over HTTPS on loopback with a CA made per process
//! ([`tls::ca_pem`]): the DFW (security policies of every category and their rules, groups and
//! their effective members, services) in the T1/NCP layout (`/policy/api/v1/infra/domains/
//! <domain>/…`) or the VPC one (`/policy/api/v1/orgs/<o>/projects/<p>/vpcs/<v>/…`), the fabric's
//! VMs and VIFs (`/api/v1/fabric/virtual-machines`, `/api/v1/fabric/vifs`), segment or subnet
//! ports, a subset of the search API, and Traceflow (create, status, observations, delete),
//! every list paginated as NSX does. Users sign in with basic auth or a session
//! (`/api/session/create`, `JSESSIONID` and `X-XSRF-TOKEN`), refused as NSX refuses them (403,
//! `error_code` 403; a lockout after 5 failures in 900 s; an expired session 403, `error_code`
//! 98: [`AuthPolicy`]); their role decides what they may read or run. Traceflows are answered by the fake's own first-match DFW evaluation
//! ([`dfw::evaluate`]) or by an oracle the test gives ([`FakeNsx::set_oracle`]).
//!
//! A test can inject faults ([`Fault`]: 401/403/429/503, N times or always), slow or trickle
//! every answer, grow the world to thousands of objects ([`World::with_filler`]), cap the
//! traceflows alive, and read what happened: the request log ([`FakeNsx::requests`], with how
//! each request authenticated and as whom, never a secret), any password sent where it should
//! not be ([`FakeNsx::password_leaks`]), the traceflows alive, deleted and the most at once.
//!
//! ```no_run
//! use etcdnet_fakensx::FakeNsx;
//! # fn main() -> anyhow::Result<()> {
//! let nsx = FakeNsx::start_world("infra-drop-2380")?;
//! let ca = std::env::temp_dir().join("nsx-ca.pem");
//! nsx.write_ca(&ca)?;
//! // ... run the plugin with --nsx-manager <nsx.url()> --nsx-ca <ca> ...
//! assert!(nsx.password_leaks().is_empty());
//! assert!(nsx.traceflows_live().is_empty());
//! # Ok(()) }
//! ```

pub mod dfw;
pub mod enforce;
mod list;
pub mod members;
mod server;
pub mod tls;
pub mod traceflow;
pub mod world;

pub use dfw::{Protocol, RuleRef, Side, TraceflowOutcome, TraceflowQuery};
pub use list::MAX_PAGE;
pub use server::{
    AuthPolicy, AuthUsed, FakeNsx, Fault, Options, Oracle, Request, TraceflowOp, TraceflowRecord,
};
pub use traceflow::ObservationFlavour;
pub use world::{world_dir, ExplicitMembers, Layout, Privilege, User, World};
