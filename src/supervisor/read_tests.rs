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
