use super::*;

/// A body that yields `frames`, each after `every`; then, if `endless`, one byte per `every`
/// forever (a server that never finishes).
struct Slowly {
    frames: std::collections::VecDeque<Bytes>,
    every: Duration,
    endless: bool,
    wait: Option<Pin<Box<Sleep>>>,
}

impl Slowly {
    fn new(frames: Vec<&[u8]>, every: Duration, endless: bool) -> Slowly {
        Slowly {
            frames: frames.into_iter().map(Bytes::copy_from_slice).collect(),
            every,
            endless,
            wait: None,
        }
    }
}

impl Body for Slowly {
    type Data = Bytes;
    type Error = BoxError;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let every = self.every;
        let wait = self
            .wait
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(every)));
        if wait.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.wait = None;
        match self.frames.pop_front() {
            Some(b) => Poll::Ready(Some(Ok(Frame::data(b)))),
            None if self.endless => Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b" "))))),
            None => Poll::Ready(None),
        }
    }
}

fn bound(deadline: Duration, max_body: u64, max_line: u64) -> Bound {
    Bound {
        api: Api::Workload,
        server: "https://198.18.0.10:6443/".into(),
        deadline,
        max_body,
        max_line,
    }
}

/// The body of a request to `uri`, as the layer wraps it.
fn wrap(b: &Bound, uri: &str, inner: Slowly) -> BoundBody<Slowly> {
    let limits = b.limits(&uri.parse().unwrap());
    BoundBody {
        inner,
        timer: Box::pin(tokio::time::sleep(limits.within)),
        limits,
        seen: 0,
        line: 0,
        bound: b.clone(),
    }
}

/// Reads the body to its end: its bytes, or the bound it went past.
async fn read(mut body: BoundBody<Slowly>) -> Result<Vec<u8>, Exceeded> {
    let mut out = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        match frame {
            Ok(f) => out.extend_from_slice(f.data_ref().unwrap()),
            Err(e) => return Err(exceeded(e.as_ref()).expect("a bound's error").clone()),
        }
    }
    Ok(out)
}

#[test]
fn each_request_is_bounded_by_its_kind() {
    let b = bound(Duration::from_secs(10), 100, 10);
    let plain = b.limits(
        &"/api/v1/namespaces/ns/pods?labelSelector=a%3Db"
            .parse()
            .unwrap(),
    );
    assert_eq!(
        plain,
        Limits {
            within: Duration::from_secs(10),
            body: Some(100),
            line: None
        }
    );
    let log = b.limits(
        &"/api/v1/namespaces/ns/pods/p/log?&limitBytes=4194305"
            .parse()
            .unwrap(),
    );
    assert_eq!(log.body, Some(4_194_305));
    let watch = b.limits(
        &"/api/v1/namespaces/ns/pods?&fieldSelector=metadata.name%3Dp&timeoutSeconds=290&watch=true&resourceVersion=1"
            .parse()
            .unwrap(),
    );
    assert_eq!(
        watch,
        Limits {
            within: Duration::from_secs(300),
            body: None,
            line: Some(10)
        }
    );
    // A watch that gives the server no end is cut at the deadline.
    let endless = b.limits(&"/api/v1/pods?watch=1".parse().unwrap());
    assert_eq!(endless.within, Duration::from_secs(10));
    // Not a watch: a value named like one.
    let not = b.limits(&"/api/v1/pods?labelSelector=watch%3Dtrue".parse().unwrap());
    assert_eq!(not.body, Some(100));
}

#[tokio::test]
async fn a_body_that_trickles_past_the_deadline_fails_naming_it() {
    let b = bound(Duration::from_millis(300), 1 << 20, 1 << 20);
    let started = std::time::Instant::now();
    let trickle = Slowly::new(vec![b"{"], Duration::from_millis(20), true);
    let err = read(wrap(&b, "/api/v1/pods", trickle)).await.unwrap_err();
    // Stopped by the 300 ms deadline, not the endless body: wide slack, as a loaded machine
    // stretches wall time (CI, load 15-78).
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        err.to_string(),
        "the workload API at https://198.18.0.10:6443/ did not finish answering within 300ms"
    );
    // The same body, finishing in time, is read whole.
    let quick = Slowly::new(vec![b"{", b"}"], Duration::from_millis(10), false);
    assert_eq!(read(wrap(&b, "/api/v1/pods", quick)).await.unwrap(), b"{}");
}

#[tokio::test]
async fn a_body_one_byte_over_its_cap_is_refused() {
    let b = bound(Duration::from_secs(5), 6, 1 << 20);
    let exact = Slowly::new(vec![b"abc", b"def"], Duration::ZERO, false);
    assert_eq!(read(wrap(&b, "/api", exact)).await.unwrap(), b"abcdef");
    let over = Slowly::new(vec![b"abc", b"defg"], Duration::ZERO, false);
    let err = read(wrap(&b, "/api", over)).await.unwrap_err();
    assert!(matches!(err, Exceeded::Large { limit: 6, .. }), "{err}");
    assert!(err.to_string().contains("sent more than 6 bytes"), "{err}");
    // A log read is held to the limitBytes it asked for.
    let log = Slowly::new(vec![b"abc"], Duration::ZERO, false);
    let err = read(wrap(&b, "/log?limitBytes=2", log)).await.unwrap_err();
    assert!(matches!(err, Exceeded::Large { limit: 2, .. }), "{err}");
    assert_eq!(
        Exceeded::Large {
            api: Api::Supervisor,
            server: "https://sv/".into(),
            limit: MAX_BODY_BYTES
        }
        .to_string(),
        "the Supervisor API at https://sv/ sent more than 64 MiB (refused unread)"
    );
}

#[tokio::test]
async fn a_watch_caps_each_line_not_the_stream() {
    let b = bound(Duration::from_secs(5), 8, 4);
    // Many short lines, more than the body cap in all: a watch's stream is not capped.
    let lines = Slowly::new(
        vec![b"abcd\nab", b"cd\n", b"a\nb\nc\nd\n", b"abcd\n"],
        Duration::ZERO,
        false,
    );
    let watch = "/api/v1/pods?watch=true&timeoutSeconds=1";
    assert_eq!(read(wrap(&b, watch, lines)).await.unwrap().len(), 23);
    // A line carried over frames past the cap.
    let carried = Slowly::new(vec![b"ab\nabc", b"de\n"], Duration::ZERO, false);
    let err = read(wrap(&b, watch, carried)).await.unwrap_err();
    assert!(matches!(err, Exceeded::Line { limit: 4, .. }), "{err}");
    // A long line inside one frame, and one that never ends.
    let inside = Slowly::new(vec![b"a\nabcdefgh\nb\n"], Duration::ZERO, false);
    assert!(read(wrap(&b, watch, inside)).await.is_err());
    let endless = Slowly::new(vec![], Duration::ZERO, true);
    assert!(matches!(
        read(wrap(&b, watch, endless)).await,
        Err(Exceeded::Line { .. })
    ));
}

#[tokio::test]
async fn a_watch_lives_its_timeout_seconds_plus_the_deadline() {
    let b = bound(Duration::from_millis(200), 1 << 20, 1 << 20);
    let started = std::time::Instant::now();
    // One event line every 50 ms, forever: never too long, never quiet.
    let mut frames: Vec<&[u8]> = Vec::new();
    frames.resize(1000, b"{}\n");
    let events = Slowly::new(frames, Duration::from_millis(50), false);
    let err = read(wrap(&b, "/api/v1/pods?watch=true&timeoutSeconds=1", events))
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, Exceeded::Slow { .. }), "{err}");
    // At least timeoutSeconds plus the deadline; at most far less than the 50 s the events
    // would go on for (wide slack: a loaded machine stretches wall time, CI at load 15-78).
    assert!(
        took >= Duration::from_millis(1200) && took < Duration::from_secs(20),
        "{took:?}"
    );
}
