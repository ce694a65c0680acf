//! The case report (`--report html|md`), through the real kubectl, no lab: the article's case
//! (3 nodes, the peers dropped, the jumpbox route) diagnosed on scripted vSphere Pods, whose
//! probes carry the etcd logs captured from a real 3-member cluster whose peers were dropped
//! (tests/fixtures/etcd-logs/drop-all-peers-cp*.log), so the report has its onset timeline.
//! - `diagnose --report html --report-file FILE` writes the page at the end of the live run
//!   (a failing verdict), `analyse BUNDLE --report html|md` prints it, and the page says what
//!   the json says: every matrix cell's state at its pair and port, every timeline pair's bar;
//! - `analyse` of a bundle whose node name and log line hold markup gives a page and a
//!   Markdown text where that markup is text;
//! - in headless Chromium (the distribution's package, installed by .ci/run; the test is
//!   compiled as ignored where `chromium` is not there and not in CI: build.rs,
//!   `etcdnet_browser`): the pages load with no console message and no request from the page,
//!   the grid's cells and the chart's bars are in the DOM the browser built, where the json
//!   says, the markup from the bundle is text there, and the article's page is kept as a
//!   screenshot for review (docs/report-example.png; `SNAPSHOTS=overwrite` writes it again).

use crate::common;

use std::path::{Path, PathBuf};

use common::article::*;
use common::tarball::{entries, write_entries};
use common::*;
use etcdnet::report::DiagnoseReport;

/// The condition message and the log text the hostile bundle carries.
const HOSTILE_TEXT: &str = "cp<script>alert(1)</script>";
const HOSTILE_LINE: &str = "<img src=x onerror=alert(2)>|`md`*";

/// 2026-12-02T08:26:15Z: just after the captured logs' last line (08:26:12), the probes' clock.
const PROBE_CLOCK_MS: &str = "1796199975000";

/// One VM's jumpbox section for the article's case: the captured healthy document made this
/// VM's own, its peers' 2379 and 2380 timing out (a dropping firewall), and the etcd log the
/// lab captured on that member when every peer was dropped.
fn section_peers_dropped(ip: &str) -> String {
    let text = healthy_probe_doc(ip, &CP);
    let paths: Vec<String> = ["198.18.0.11", "198.18.0.12", "198.18.0.13"]
        .iter()
        .flat_map(|t| [(*t, 2379), (*t, 2380)])
        .map(|(t, port)| {
            if t != ip {
                format!(r#"{{"target":"{t}","port":{port},"own":false,"tcp":"Timeout","tcpMs":3020,"tcpDetail":"no TCP answer within 3 s","tls":"NotTried","tlsMs":null,"tlsDetail":null,"httpStatus":null}}"#)
            } else {
                format!(r#"{{"target":"{t}","port":{port},"own":true,"tcp":"Connected","tcpMs":1,"tcpDetail":null,"tls":"Completed","tlsMs":40,"tlsDetail":null,"httpStatus":200}}"#)
            }
        })
        .collect();
    let at = text.find("\"paths\":[").unwrap();
    let close = at + text[at..].find(']').unwrap();
    let text = format!(
        "{}\"paths\":[{}{}",
        &text[..at],
        paths.join(","),
        &text[close..]
    );
    // The log: the healthy one's text swapped for the capture of this member.
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let old = serde_json::to_string(doc["etcd"]["logs"]["text"].as_str().unwrap()).unwrap();
    assert!(
        text.contains(&old),
        "the log text is written as serde_json writes it"
    );
    let n = ip.rsplit('.').next().unwrap().parse::<u8>().unwrap() - 10;
    let log = read(&format!(
        "tests/fixtures/etcd-logs/drop-all-peers-cp{n}.log"
    ));
    let clock = doc["clockMs"].to_string();
    let text = text
        .replace(&old, &serde_json::to_string(&log).unwrap())
        .replace(
            &format!("\"clockMs\":{clock}"),
            &format!("\"clockMs\":{PROBE_CLOCK_MS}"),
        );
    jumpbox_section(&text)
}

/// The article's Supervisor, the workload API dark, each VM's probe [`section_peers_dropped`].
fn article_env() -> Env {
    let env = Env::new(SET, Workload::black_hole());
    env.script_jumpbox_pods_with(&CP, |_, ip| Some(section_peers_dropped(ip)));
    env
}

/// The live run with `--bundle` and `--report html --report-file`: the bundle and the page.
fn live(env: &Env) -> (PathBuf, PathBuf) {
    let bundle = env.dir.path().join("tkc-prod.tar.gz");
    let page = env.dir.path().join("live.html");
    let run = crate::bundle::diagnose(
        env,
        &bundle,
        &["--report", "html", "--report-file", page.to_str().unwrap()],
    );
    run.expect_code(1);
    assert!(
        run.stdout.contains("EtcdPeerNetworkBlocked"),
        "the tables as usual: {}",
        run.stdout
    );
    assert!(
        run.stderr
            .contains(&format!("html report written to {}", page.display())),
        "{}",
        run.stderr
    );
    (bundle, page)
}

/// The bundle again with markup in the text a namespace editor and a node write: the Machines'
/// condition messages ([`HOSTILE_TEXT`]) and the etcd logs' lines ([`HOSTILE_LINE`]). (Names
/// cannot hold it: `analyse` refuses a bundle whose names the API server would not accept.)
fn hostile_bundle(bundle: &Path, to: &Path) {
    let edited: Vec<(String, Vec<u8>)> = entries(bundle)
        .into_iter()
        .map(|(path, bytes)| {
            let text = String::from_utf8(bytes)
                .unwrap()
                .replace("Etcd member status reports errors", HOSTILE_TEXT)
                .replace("lost TCP streaming connection", HOSTILE_LINE);
            (path, text.into_bytes())
        })
        .collect();
    write_entries(to, &edited);
}

/// The value of `attr` in an HTML start tag's text, as the page writes it (double quotes).
fn attr<'a>(tag: &'a str, attr: &str) -> Option<&'a str> {
    let at = tag.find(&format!(" {attr}=\""))? + attr.len() + 3;
    Some(&tag[at..at + tag[at..].find('"')?])
}

/// Every start tag `<name ...>` of `html` (the browser's serialization or ours).
fn tags<'a>(html: &'a str, name: &str) -> Vec<&'a str> {
    html.match_indices(&format!("<{name} "))
        .map(|(i, _)| &html[i..i + html[i..].find('>').unwrap_or(0)])
        .collect()
}

/// `&lt;` and friends back to text (the attribute values of a serialized DOM or of our page).
fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&#x2F;", "/")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// What the page says is what the report says: a grid part at each pair and port with its
/// state as the json names it, and a bar for each pair of the timeline with its onset, in
/// the order of the onsets.
fn assert_page_matches(html: &str, report: &DiagnoseReport) {
    let parts = tags(html, "span");
    let cells = tags(html, "td");
    for m in &report.matrices {
        for c in &m.cells {
            let td = cells
                .iter()
                .position(|t| {
                    attr(t, "data-from").map(unescape).as_deref() == Some(c.from.as_str())
                        && attr(t, "data-to").map(unescape).as_deref() == Some(c.to.as_str())
                })
                .unwrap_or_else(|| panic!("no cell {} → {}", c.from, c.to));
            // The cell's parts are the spans after its td and before the next td.
            let start = html.find(cells[td]).unwrap();
            let end = cells
                .get(td + 1)
                .and_then(|n| html.find(n))
                .unwrap_or(html.len());
            let inside = &html[start..end];
            let part = parts
                .iter()
                .find(|p| inside.contains(*p) && attr(p, "data-port") == Some(&m.port.to_string()))
                .unwrap_or_else(|| panic!("no part {} → {}:{}", c.from, c.to, m.port));
            assert_eq!(
                attr(part, "data-state"),
                Some(c.state.to_string().as_str()),
                "{} → {}:{}",
                c.from,
                c.to,
                m.port
            );
            let class = attr(part, "class").unwrap();
            let want = if c.state.is_ok() { "open" } else { "failing" };
            assert!(class.contains(want), "{class}: {} → {}", c.from, c.to);
        }
    }
    let timeline = report.timeline.as_ref().expect("a timeline");
    assert!(!timeline.pairs.is_empty());
    let bars: Vec<&str> = tags(html, "rect")
        .into_iter()
        .filter(|t| attr(t, "class").is_some_and(|c| c.starts_with("bar")))
        .collect();
    assert_eq!(bars.len(), timeline.pairs.len(), "a bar a pair");
    let mut placed = Vec::new();
    for p in &timeline.pairs {
        let bar = bars
            .iter()
            .find(|b| {
                attr(b, "data-from").map(unescape).as_deref() == Some(p.from.as_str())
                    && attr(b, "data-to").map(unescape).as_deref() == Some(p.to.as_str())
            })
            .unwrap_or_else(|| panic!("no bar {} → {}", p.from, p.to));
        let onset = p.onset.as_deref().and_then(etcdnet::when::parse);
        let x: f64 = attr(bar, "x").unwrap().parse().unwrap();
        let w: f64 = attr(bar, "width").unwrap().parse().unwrap();
        if let Some(t) = onset {
            let ms = t
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis()
                .to_string();
            assert_eq!(attr(bar, "data-onset-ms"), Some(ms.as_str()));
        }
        placed.push((onset, x, x + w));
    }
    // Every bar ends at the probes' time; an earlier onset starts further left.
    let end = placed[0].2;
    for (onset, x, right) in &placed {
        assert!((right - end).abs() < 0.2, "{placed:?}");
        for (other, ox, _) in &placed {
            if let (Some(a), Some(b)) = (onset, other) {
                if a < b {
                    assert!(x <= ox, "{placed:?}");
                }
            }
        }
    }
    // The leader's loss, where the logs say etcd had none.
    let marks = tags(html, "g")
        .into_iter()
        .filter(|t| attr(t, "class") == Some("leader-lost"))
        .count();
    assert_eq!(
        marks > 0,
        timeline.no_leader.iter().any(|n| n.since.is_some()),
        "{:?}",
        timeline.no_leader
    );
}

#[test]
fn html_and_md_reports_say_what_the_json_says() {
    let env = article_env();
    let (bundle, live_page) = live(&env);
    let json = crate::bundle::analyse(&env, &bundle, &["-o", "json"]);
    json.expect_code(1);
    let report = json.diagnose_report();

    // Printed instead of the tables, the exit code the verdict's.
    let html = crate::bundle::analyse(&env, &bundle, &["--report", "html"]);
    html.expect_code(1);
    let page = &html.stdout;
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    assert!(page.contains("Content-Security-Policy"), "{page}");
    assert!(!page.contains("<script"), "no script in the page");
    // Nothing to load: no source, and every link is to the page itself.
    assert!(!page.contains(" src="), "{page}");
    assert!(
        tags(page, "a")
            .iter()
            .all(|a| attr(a, "href").is_some_and(|h| h.starts_with('#'))),
        "{page}"
    );
    assert!(page.contains("EtcdPeerNetworkBlocked"), "{page}");
    for section in [
        "verdict",
        "matrix",
        "timeline",
        "nodes",
        "etcd",
        "evidence",
        "provenance",
    ] {
        assert!(
            page.contains(&format!("<section id=\"{section}\">")),
            "{section}"
        );
    }
    assert_page_matches(page, &report);
    // The live run's page is the same report of the same cluster.
    let live = std::fs::read_to_string(&live_page).unwrap();
    assert_page_matches(&live, &report);
    assert!(live.contains("a live run"), "provenance");

    // Markdown: the same sections as headings, the matrix as a GitHub table.
    let md = crate::bundle::analyse(&env, &bundle, &["--report", "md"]);
    md.expect_code(1);
    let text = &md.stdout;
    assert!(
        text.starts_with("# etcd network report: ns-prod/tkc-prod"),
        "{text}"
    );
    for heading in [
        "## Verdict",
        "## Paths between the nodes",
        "## Since when",
        "## Provenance",
    ] {
        assert!(text.contains(heading), "{heading}: {text}");
    }
    assert!(text.contains(&format!("| {} | ✓ 2379 ok", CP[0])), "{text}");
    assert!(text.contains("✗ 2380 timeout"), "{text}");

    // To a file: the tables as usual, the report beside them; never over the bundle.
    let file = env.dir.path().join("case.md");
    let run = crate::bundle::analyse(
        &env,
        &bundle,
        &["--report", "md", "--report-file", file.to_str().unwrap()],
    );
    run.expect_code(1);
    assert!(
        run.stdout.contains("VERDICT: EtcdPeerNetworkBlocked"),
        "{}",
        run.stdout
    );
    assert_eq!(&std::fs::read_to_string(&file).unwrap(), text);
    let over = crate::bundle::analyse(
        &env,
        &bundle,
        &[
            "--report",
            "html",
            "--report-file",
            bundle.to_str().unwrap(),
        ],
    );
    over.expect_code(2);
    assert!(
        over.stderr.contains("it is the bundle being analysed"),
        "{}",
        over.stderr
    );
    let missing = env.dir.path().join("no-such-dir").join("case.html");
    let no_dir = crate::bundle::analyse(
        &env,
        &bundle,
        &[
            "--report",
            "html",
            "--report-file",
            missing.to_str().unwrap(),
        ],
    );
    no_dir.expect_code(2);
    assert!(
        no_dir.stderr.contains("cannot write report"),
        "{}",
        no_dir.stderr
    );
    let leftovers: Vec<_> = std::fs::read_dir(env.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // The file flag alone says what it needs.
    env.kubectl(&[
        "analyse",
        bundle.to_str().unwrap(),
        "--report-file",
        "x.html",
    ])
    .expect_code(2);
}

#[test]
fn markup_in_a_bundle_is_text_in_the_report() {
    let env = article_env();
    let (bundle, _) = live(&env);
    let hostile = env.dir.path().join("hostile.tar.gz");
    hostile_bundle(&bundle, &hostile);
    let json = crate::bundle::analyse(&env, &hostile, &["-o", "json"]);
    json.expect_code(1);
    let report = json.diagnose_report();
    for hostile in [HOSTILE_TEXT, HOSTILE_LINE] {
        // In the evidence, or in the notes (a Machine condition older than the onset is stale).
        assert!(
            report
                .verdict
                .evidence
                .iter()
                .chain(&report.verdict.notes)
                .any(|e| e.contains(hostile)),
            "the bundle's text is read as it is: {:#?}",
            report.verdict
        );
    }
    let html = crate::bundle::analyse(&env, &hostile, &["--report", "html"]);
    html.expect_code(1);
    let page = &html.stdout;
    assert!(!page.contains("<script"), "{page}");
    assert!(!page.contains("<img"), "{page}");
    assert!(
        page.contains("cp&lt;script&gt;alert(1)&lt;&#x2F;script&gt;"),
        "{page}"
    );
    assert_page_matches(page, &report);

    let md = crate::bundle::analyse(&env, &hostile, &["--report", "md"]);
    md.expect_code(1);
    assert!(!md.stdout.contains("<script"), "{}", md.stdout);
    assert!(!md.stdout.contains("<img"), "{}", md.stdout);
    assert!(
        md.stdout
            .contains("cp&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{}",
        md.stdout
    );
    assert!(md.stdout.contains("\\|\\`md\\`\\*"), "{}", md.stdout);
}

/// The pages in a real browser. See the module's doc.
#[test]
#[cfg_attr(
    not(etcdnet_browser),
    ignore = "needs chromium (Debian's package; .ci/run installs it): ETCDNET_BROWSER=1 to run it anyway"
)]
fn the_pages_in_headless_chromium() {
    let env = article_env();
    let (bundle, _) = live(&env);
    let report = crate::bundle::analyse(&env, &bundle, &["-o", "json"]).diagnose_report();
    let hostile = env.dir.path().join("hostile.tar.gz");
    hostile_bundle(&bundle, &hostile);
    let hostile_report = crate::bundle::analyse(&env, &hostile, &["-o", "json"]).diagnose_report();
    let write = |name: &str, bundle: &Path| {
        let path = env.dir.path().join(name);
        crate::bundle::analyse(
            &env,
            bundle,
            &["--report", "html", "--report-file", path.to_str().unwrap()],
        )
        .expect_code(1);
        path
    };
    let article = write("article.html", &bundle);
    let hostile_page = write("hostile.html", &hostile);

    // The detectors first: a page without our policy that logs to the console and loads an
    // image from this machine's discard port is caught by both.
    let control = env.dir.path().join("control.html");
    std::fs::write(
        &control,
        "<!DOCTYPE html><html><head><title>control</title></head><body><p>control</p>\
         <script>console.error('control message')</script><img src=\"http://127.0.0.1:9/x.png\"></body></html>",
    )
    .unwrap();
    let c = browser::load(&control, env.dir.path());
    assert!(
        c.console.iter().any(|l| l.contains("control message")),
        "the console is read: {:?}",
        c.stderr_tail
    );
    assert!(
        c.page_requests
            .iter()
            .any(|u| u.starts_with("http://127.0.0.1:9/")),
        "the page's requests are read: {:?}",
        c.page_requests
    );

    let mut doms = Vec::new();
    // (The live run's page is the same renderer's: `html_and_md_reports_say_what_the_json_says`
    // checks it against the json; one browser start less in CI.)
    for (page, report) in [(&article, &report), (&hostile_page, &hostile_report)] {
        let l = browser::load(page, env.dir.path());
        assert!(
            l.console.is_empty(),
            "{}: console: {:?}",
            page.display(),
            l.console
        );
        assert!(
            l.page_requests.is_empty(),
            "{}: requests: {:?}",
            page.display(),
            l.page_requests
        );
        // The DOM the browser built: the cells and the bars where the json says.
        assert!(l.dom.contains("<section id=\"matrix\">"), "{}", l.dom);
        assert_page_matches(&l.dom, report);
        // No script element, whatever the bundle held; the hostile name is text.
        assert!(!l.dom.contains("<script"), "{}", l.dom);
        assert!(!l.dom.contains("<img"), "{}", l.dom);
        doms.push(l.dom);
    }
    let hostile_dom = &doms[1];
    assert!(
        hostile_dom.contains("cp&lt;script&gt;alert(1)&lt;/script&gt;"),
        "the name is text in the DOM: {hostile_dom}"
    );

    // The article's page as a picture, for review: regenerated with SNAPSHOTS=overwrite; else
    // only its size is compared (the fonts and the anti-aliasing are the machine's).
    let shot = browser::screenshot(&article, env.dir.path());
    let kept = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report-example.png");
    if std::env::var("SNAPSHOTS").as_deref() == Ok("overwrite") {
        std::fs::write(&kept, &shot).unwrap();
    }
    let size = |png: &[u8]| -> (u32, u32) {
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
        let be = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
        (be(16), be(20))
    };
    let kept_png = std::fs::read(&kept).expect("docs/report-example.png (SNAPSHOTS=overwrite)");
    assert_eq!(size(&shot), size(&kept_png), "the screenshot's size");
}

/// Headless Chromium, one process a page: the DOM after load (`--dump-dom`), the console
/// messages (its log on stderr, `CONSOLE` lines: a CSP refusal is one too), and the requests
/// the page made (its NetLog: the browser's own background requests, which have no page as
/// initiator, are set apart; none leaves the machine: every host name resolves to nothing).
mod browser {
    use std::path::Path;
    use std::process::Command;

    pub struct Load {
        pub dom: String,
        pub console: Vec<String>,
        pub page_requests: Vec<String>,
        pub stderr_tail: String,
    }

    fn chromium(dir: &Path, tag: &str) -> Command {
        let mut c = Command::new("chromium");
        c.args([
            "--headless",
            // As root in CI: Chromium's sandbox needs user namespaces it may not have there.
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            // No name resolves: nothing the browser itself would fetch leaves the machine.
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--window-size=1200,2400",
            "--hide-scrollbars",
        ]);
        c.arg(format!(
            "--user-data-dir={}",
            dir.join(format!("chromium-{tag}")).display()
        ));
        c
    }

    fn url(page: &Path) -> String {
        format!("file://{}", page.canonicalize().unwrap().display())
    }

    pub fn load(page: &Path, dir: &Path) -> Load {
        let tag = page.file_stem().unwrap().to_string_lossy().into_owned();
        let netlog = dir.join(format!("{tag}.netlog.json"));
        let out = chromium(dir, &tag)
            .args(["--enable-logging=stderr", "--v=0"])
            .arg(format!("--log-net-log={}", netlog.display()))
            .arg("--dump-dom")
            .arg(url(page))
            .output()
            .expect("chromium runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "chromium: {stderr}");
        let console = stderr
            .lines()
            .filter(|l| l.contains(":CONSOLE"))
            .map(str::to_string)
            .collect();
        let log: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&netlog).unwrap()).expect("a NetLog");
        let start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].clone();
        let page_requests = log["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == start)
            .filter(|e| e["params"]["initiator"] != "not an origin")
            .filter_map(|e| e["params"]["url"].as_str().map(str::to_string))
            .collect();
        let tail = stderr.lines().rev().take(20).collect::<Vec<_>>().join("\n");
        Load {
            dom: String::from_utf8_lossy(&out.stdout).into_owned(),
            console,
            page_requests,
            stderr_tail: tail,
        }
    }

    pub fn screenshot(page: &Path, dir: &Path) -> Vec<u8> {
        let png = dir.join("shot.png");
        let out = chromium(dir, "shot")
            .arg(format!("--screenshot={}", png.display()))
            .arg(url(page))
            .output()
            .expect("chromium runs");
        assert!(
            out.status.success(),
            "chromium: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::read(&png).unwrap()
    }
}
