//! The case report (`--report html|md`), through the real kubectl, no lab: the article's case
//! (3 nodes, the peers dropped, the jumpbox route) diagnosed on scripted vSphere Pods, whose
//! probes carry the etcd logs captured from a real 3-member cluster whose peers were dropped
//! (tests/fixtures/etcd-logs/drop-all-peers-cp*.log), so the report has its onset timeline.
//! - `diagnose --report html FILE` writes the page at the end of the live run (a failing
//!   verdict), `analyse BUNDLE --report html|md` prints it, and the page says what the json
//!   says: every matrix cell's state at its pair and port, every timeline pair's bar;
//! - `analyse NEW --against GOOD --report html|md [FILE]`: the comparison as a page and as
//!   Markdown, the pairs that broke in their section as the json says, a condition's markup
//!   from the newer bundle as text;
//! - `analyse` of a bundle whose node name and log line hold markup gives a page and a
//!   Markdown text where that markup is text;
//! - in headless Chromium (the distribution's package, installed by .ci/run; the test is
//!   compiled as ignored where `chromium` is not there and not in CI: build.rs,
//!   `etcdnet_browser`): the pages load with no console message and no request from the page,
//!   the grid's cells and the chart's bars are in the DOM the browser built, where the json
//!   says, the markup from the bundle is text there, the comparison's page likewise, and the
//!   article's page is a screenshot snapshot (docs/report-example.png): the fresh screenshot,
//!   of a page whose every word is fixed (the bundle stamped), is compared pixel by pixel with
//!   the kept one, a small share of pixels allowed to differ for the fonts' antialiasing; a
//!   failure says the share and writes the new picture beside the kept one for review
//!   (`SNAPSHOTS=overwrite` writes it over the kept one).

use crate::common;

use std::path::{Path, PathBuf};

use common::article::*;
use common::tarball::{edit_manifest, entries, write_entries};
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

/// The live run with `--bundle` and `--report html FILE`: the bundle and the page.
fn live(env: &Env) -> (PathBuf, PathBuf) {
    let bundle = env.dir.path().join("tkc-prod.tar.gz");
    let page = env.dir.path().join("live.html");
    let run = crate::bundle::diagnose(env, &bundle, &["--report", "html", page.to_str().unwrap()]);
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
    replaced(
        bundle,
        to,
        &[
            ("Etcd member status reports errors", HOSTILE_TEXT),
            ("lost TCP streaming connection", HOSTILE_LINE),
        ],
    );
}

/// The bundle at `bundle` with each text replaced in every file, written to `to`.
fn replaced(bundle: &Path, to: &Path, texts: &[(&str, &str)]) {
    let edited: Vec<(String, Vec<u8>)> = entries(bundle)
        .into_iter()
        .map(|(path, bytes)| {
            let mut text = String::from_utf8(bytes).unwrap();
            for (from, to) in texts {
                text = text.replace(from, to);
            }
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

/// The page has a section of each of these anchors.
fn assert_sections(page: &str, ids: &[&str]) {
    for id in ids {
        assert!(
            page.contains(&format!("<section id=\"{id}\">")),
            "{id}: {page}"
        );
    }
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
    assert_sections(
        page,
        &[
            "verdict",
            "matrix",
            "timeline",
            "nodes",
            "etcd",
            "evidence",
            "provenance",
        ],
    );
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
    let run = crate::bundle::analyse(&env, &bundle, &["--report", "md", file.to_str().unwrap()]);
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
        &["--report", "html", bundle.to_str().unwrap()],
    );
    over.expect_code(2);
    assert!(
        over.stderr.contains("it is the bundle being analysed"),
        "{}",
        over.stderr
    );
    let missing = env.dir.path().join("no-such-dir").join("case.html");
    // The old spelling still works for a release, with its deprecation line.
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
    assert!(
        no_dir.stderr.contains(
            "Flag --report-file FILE has been deprecated, use --report FORMAT FILE instead"
        ),
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
    let write = |name: &str, bundle: &Path, more: &[&str]| {
        let path = env.dir.path().join(name);
        let mut args = more.to_vec();
        args.extend(["--report", "html", path.to_str().unwrap()]);
        crate::bundle::analyse(&env, bundle, &args).expect_code(1);
        path
    };
    // Every word of the article's page fixed (its screenshot is a snapshot): the Supervisor
    // read just before the probes' clock (the conditions' ages), the bundle written just
    // after it, by the command the article runs.
    let stamped = env.dir.path().join("stamped.tar.gz");
    edit_manifest(&bundle, &stamped, |m| {
        m["created"] = "2026-12-02T08:26:20Z".into();
        m["clusters"][0]["readAt"] = "2026-12-02T08:26:05Z".into();
        let args = format!("diagnose {CLUSTER} -n {NS} --via jumpbox --bundle tkc-prod.tar.gz");
        m["args"] = args.split(' ').collect::<Vec<_>>().into();
    });
    let article = write("article.html", &stamped, &[]);
    let hostile_page = write("hostile.html", &hostile, &[]);
    let (good, changed, comparison) = compared(&env, &bundle);
    let good = good.to_str().unwrap();
    let compare_page = write("compare.html", &changed, &["--against", good]);

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

    // The comparison's page: loads with nothing logged and nothing fetched, the pairs that
    // broke where the comparison says, the markup from the newer bundle text.
    let l = browser::load(&compare_page, env.dir.path());
    assert!(l.console.is_empty(), "console: {:?}", l.console);
    assert!(
        l.page_requests.is_empty(),
        "requests: {:?}",
        l.page_requests
    );
    assert_comparison_page(&l.dom, &comparison);
    assert!(!l.dom.contains("<script"), "{}", l.dom);
    assert!(
        l.dom.contains(HOSTILE_REASON_DOM),
        "the reason is text in the DOM: {}",
        l.dom
    );

    // The article's page as a snapshot for review.
    let shot = browser::screenshot(&article, env.dir.path());
    snapshot::assert_png(&shot, "docs/report-example.png");
}

/// A condition's reason with markup, which a namespace editor can write on a Machine's status.
const HOSTILE_REASON: &str = "<script>alert(3)</script>";
/// [`HOSTILE_REASON`] as a browser serializes it as text.
const HOSTILE_REASON_DOM: &str = "&lt;script&gt;alert(3)&lt;/script&gt;";

/// Two bundles of the article's cluster for `--against`: GOOD written an hour before, while
/// every path worked, and NEW, `bundle` (the peers dropped) with a Machine condition's reason
/// holding markup. Returns GOOD, NEW and the comparison's json.
fn compared(env: &Env, bundle: &Path) -> (PathBuf, PathBuf, serde_json::Value) {
    let good_env = Env::new(SET, Workload::black_hole());
    good_env.script_jumpbox_pods(&CP);
    let good = env.dir.path().join("good.tar.gz");
    crate::bundle::diagnose(&good_env, &good, &[]).expect_code(1);
    crate::bundle::written_an_hour_ago(&good);
    let new = env.dir.path().join("new.tar.gz");
    replaced(
        bundle,
        &new,
        // A JSON string may hold `<`, `>` and `/` as they are.
        &[("EtcdMemberUnhealthy", HOSTILE_REASON)],
    );
    let json = crate::bundle::analyse(
        env,
        &new,
        &["--against", good.to_str().unwrap(), "-o", "json"],
    );
    json.expect_code(1);
    (good, new, json.json())
}

/// The comparison's page (ours or the DOM a browser built) says what its json says: a row in
/// the section of the paths that broke for each pair and port that broke (`a ↔ b` when both
/// ways broke), and nothing broke that the json does not name.
fn assert_comparison_page(html: &str, c: &serde_json::Value) {
    let start = html
        .find("<section id=\"paths-broke\">")
        .unwrap_or_else(|| panic!("no section of the paths that broke: {html}"));
    let section = &html[start..start + html[start..].find("</section>").unwrap()];
    let mut want = std::collections::BTreeSet::new();
    for p in c["paths"].as_array().unwrap() {
        assert_eq!(p["change"], "Broke", "{p}");
        let (from, to) = (p["from"].as_str().unwrap(), p["to"].as_str().unwrap());
        want.insert((p["port"].as_u64().unwrap(), from.min(to), from.max(to)));
    }
    assert!(!want.is_empty(), "{c}");
    let rows = section.matches("<tr><td>").count();
    assert_eq!(rows, want.len(), "a row a pair and port: {section}");
    for (port, a, b) in want {
        let row = format!("<tr><td>{a} ↔ {b}</td><td>{port}</td>");
        assert!(section.contains(&row), "{row}: {section}");
    }
}

/// `analyse NEW --against GOOD --report html|md [FILE]` (issue 38.6): the comparison as a
/// page and as Markdown, printed or written; the tables as usual beside a file; the exit code
/// NEW's; the markup of the newer bundle as text.
#[test]
fn the_comparison_as_a_page_and_as_markdown() {
    let env = article_env();
    let (bundle, _) = live(&env);
    let (good, new, c) = compared(&env, &bundle);
    let good = good.to_str().unwrap();
    assert!(
        c["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["after"]["reason"] == HOSTILE_REASON),
        "the reason is read as it is: {c}"
    );

    let html = crate::bundle::analyse(&env, &new, &["--against", good, "--report", "html"]);
    html.expect_code(1);
    let page = &html.stdout;
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    assert!(
        page.contains("default-src &#x27;none&#x27;"),
        "the case report's policy: {page}"
    );
    assert!(!page.contains("<script"), "{page}");
    assert!(!page.contains(" src="), "{page}");
    assert!(
        page.contains("&lt;script&gt;alert(3)&lt;&#x2F;script&gt;"),
        "{page}"
    );
    assert!(
        page.contains(&format!("etcd network changes: {NS}&#x2F;{CLUSTER}")),
        "{page}"
    );
    assert_sections(
        page,
        &[
            "header",
            "verdict",
            "paths-broke",
            "conditions",
            "provenance",
        ],
    );
    assert_comparison_page(page, &c);

    // Markdown, to a file: the table printed as usual, the text the same as printed.
    let md = crate::bundle::analyse(&env, &new, &["--against", good, "--report", "md"]);
    md.expect_code(1);
    let text = &md.stdout;
    assert!(
        text.contains("## PATHS THAT BROKE (12 paths, 6 pairs)"),
        "{text}"
    );
    assert!(
        text.contains(&format!("| {} ↔ {} | 2380 |", CP[0], CP[1])),
        "{text}"
    );
    assert!(
        text.contains("&lt;script&gt;alert(3)&lt;/script&gt;"),
        "{text}"
    );
    assert!(!text.contains("<script"), "{text}");
    let file = env.dir.path().join("changes.md");
    let run = crate::bundle::analyse(
        &env,
        &new,
        &["--against", good, "--report", "md", file.to_str().unwrap()],
    );
    run.expect_code(1);
    assert!(run.stdout.starts_with("COMPARED  "), "{}", run.stdout);
    assert!(
        run.stderr
            .contains(&format!("md report written to {}", file.display())),
        "{}",
        run.stderr
    );
    assert_eq!(&std::fs::read_to_string(&file).unwrap(), text);
    // Never over one of the bundles.
    let over = crate::bundle::analyse(&env, &new, &["--against", good, "--report", "html", good]);
    over.expect_code(2);
    assert!(
        over.stderr.contains("it is the bundle being analysed"),
        "{}",
        over.stderr
    );
}

/// The screenshot snapshot: a PNG compared with the kept one pixel by pixel.
mod snapshot {
    use std::path::Path;

    /// A pixel differs when one of its channels moved by more than this (of 255): the fonts'
    /// antialiasing moves edges by less between two runs of one browser.
    const CHANNEL: u8 = 48;
    /// The share of pixels that may differ: a few glyphs' edges, not a word or a cell.
    const SHARE: f64 = 0.002;

    /// RGBA8 pixels and the size of a PNG, decoded by the png crate.
    fn decode(png: &[u8]) -> (u32, u32, Vec<[u8; 4]>) {
        let mut d = png::Decoder::new(std::io::Cursor::new(png));
        d.set_transformations(png::Transformations::normalize_to_color8());
        let mut r = d.read_info().expect("a PNG");
        let mut buf = vec![0; r.output_buffer_size().expect("a PNG's size")];
        let info = r.next_frame(&mut buf).expect("a PNG's pixels");
        let samples = info.color_type.samples();
        let pixels = buf[..info.buffer_size()]
            .chunks(info.line_size)
            .flat_map(|line| line[..info.width as usize * samples].chunks(samples))
            .map(|p| match *p {
                [g] => [g, g, g, 255],
                [g, a] => [g, g, g, a],
                [r, g, b] => [r, g, b, 255],
                [r, g, b, a] => [r, g, b, a],
                _ => unreachable!("8-bit samples"),
            })
            .collect();
        (info.width, info.height, pixels)
    }

    /// The share of the pixels of `a` and `b` that differ (1 when their sizes differ).
    pub fn differing(a: &[u8], b: &[u8]) -> f64 {
        let (a, b) = (decode(a), decode(b));
        if (a.0, a.1) != (b.0, b.1) {
            return 1.0;
        }
        let off =
            a.2.iter()
                .zip(&b.2)
                .filter(|(p, q)| {
                    p.iter()
                        .zip(q.iter())
                        .any(|(x, y)| x.abs_diff(*y) > CHANNEL)
                })
                .count();
        off as f64 / a.2.len().max(1) as f64
    }

    /// `shot` is the picture kept at `kept` (from the repository's root), within [`SHARE`].
    /// `SNAPSHOTS=overwrite` writes it there; a failure writes it beside (`NAME.new.png`) for
    /// review, and says the share that differs.
    pub fn assert_png(shot: &[u8], kept: &str) {
        let kept = Path::new(env!("CARGO_MANIFEST_DIR")).join(kept);
        if std::env::var("SNAPSHOTS").as_deref() == Ok("overwrite") {
            std::fs::write(&kept, shot).unwrap();
        }
        let was = std::fs::read(&kept)
            .unwrap_or_else(|e| panic!("{}: {e} (SNAPSHOTS=overwrite writes it)", kept.display()));
        let share = differing(shot, &was);
        let new = kept.with_extension("new.png");
        if share > SHARE {
            std::fs::write(&new, shot).unwrap();
            panic!(
                "{:.2}% of the pixels differ from {} (at most {:.2}%): the new screenshot is {} for review; SNAPSHOTS=overwrite keeps it",
                share * 100.0,
                kept.display(),
                SHARE * 100.0,
                new.display()
            );
        }
        let _ = std::fs::remove_file(&new);
    }

    /// The comparison itself: the same picture is alike, a picture with a block painted over
    /// differs by that block's share, and another size differs wholly.
    #[test]
    fn a_screenshot_is_compared_pixel_by_pixel() {
        let picture = |w: u32, h: u32, paint: &dyn Fn(u32, u32) -> [u8; 3]| {
            let mut out = Vec::new();
            let mut e = png::Encoder::new(&mut out, w, h);
            e.set_color(png::ColorType::Rgb);
            e.set_depth(png::BitDepth::Eight);
            let mut wr = e.write_header().unwrap();
            let data: Vec<u8> = (0..h)
                .flat_map(|y| (0..w).flat_map(move |x| paint(x, y)))
                .collect();
            wr.write_image_data(&data).unwrap();
            wr.finish().unwrap();
            out
        };
        let white = picture(100, 100, &|_, _| [255; 3]);
        // An antialiased edge: a little grey is not a difference.
        let grey = picture(100, 100, &|x, _| if x == 0 { [230; 3] } else { [255; 3] });
        let block = picture(100, 100, &|x, y| {
            if x < 10 && y < 10 {
                [211, 47, 47]
            } else {
                [255; 3]
            }
        });
        assert_eq!(differing(&white, &white), 0.0);
        assert_eq!(differing(&white, &grey), 0.0);
        assert_eq!(differing(&white, &block), 0.01);
        assert_eq!(differing(&white, &picture(100, 90, &|_, _| [255; 3])), 1.0);
    }
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
        // The same picture on every run: the viewport ([`chromium`]'s window) at one pixel a
        // CSS pixel, sRGB, grey antialiasing without hinting (no subpixel colours that follow
        // the machine's font settings). The page has no script, no caret, no animation; its
        // words are the bundle's, which the test fixes.
        let out = chromium(dir, "shot")
            .args([
                "--force-device-scale-factor=1",
                "--force-color-profile=srgb",
                "--font-render-hinting=none",
                "--disable-lcd-text",
                "--disable-font-subpixel-positioning",
            ])
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
