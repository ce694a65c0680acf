#!/usr/bin/env python3
"""Masks what differs between two runs of the same lab case, so that two captures can be diffed:
timings, clocks, timestamps, ephemeral ports, container/member ids, certificate dates, random run
ids, ssh host keys (each lab makes new ones), raft terms and leaders, and what etcd's log holds
(which lines, kinds and counts etcd wrote in 8 s varies from run to run: the log-derived
evidence lines become one marker). Two captures of the same commit compare equal with it.
Keys, their order, enum values and everything structural are kept as they are."""
import json, re, sys

VOLATILE_KEYS = {
    "ms", "tcpMs", "tlsMs", "durationMs", "clockMs", "elapsedMs", "expiresInS", "notAfter",
    "notBefore", "createdAt", "id", "containerId", "since", "first", "last", "firstTs", "lastTs",
    "count", "example", "lines", "parsedLines", "peerIds", "localMemberId", "server", "text",
    "sha256", "term", "changes", "leaderId",
}

def scrub(s):
    s = re.sub(r"\d+ms", "Nms", s)
    s = re.sub(r"\d+ milliseconds", "N milliseconds", s)
    s = re.sub(r"\d+ ms\b", "N ms", s)
    s = re.sub(r"\b\d\d:\d\d:\d\d\b", "HH:MM:SS", s)
    s = re.sub(r"(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}):\d{4,5}(?!\d)", lambda m: m.group(1) + (":" + m.group(0).split(":")[1] if m.group(0).split(":")[1] in ("2379", "2380", "6443", "22") else ":PORT"), s)
    s = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", s)
    s = re.sub(r"\d+×", "N×", s)
    s = re.sub(r"\d{4}-\d\d-\d\dT[0-9:.]+Z", "TS", s)
    s = re.sub(r"\"[^\"]*\" \(", "\"LOG\" (", s)
    return s

def walk(v, key=None):
    if key in VOLATILE_KEYS and v is not None:
        return "<masked>"
    if isinstance(v, dict):
        return {k: walk(x, k) for k, x in v.items()}
    if isinstance(v, list):
        return [walk(x) for x in v]
    if isinstance(v, str):
        return scrub(v)
    return v

text = sys.stdin.read()
try:
    doc = json.loads(text)
except ValueError:
    print(text)
    sys.exit(0)
# The etcd log findings (which kinds appear in 8 s, and the history) vary from run to run.
for l in doc.get("logs", []) if isinstance(doc, dict) else []:
    l["summary"]["findings"] = "<masked>"
    # "Mixed" when the lines read happen to include a non-JSON one (a start-up banner, a panic).
    l["summary"]["format"] = "<masked>"
    if "history" in l["summary"]:
        l["summary"]["history"] = "<masked>"
doc = walk(doc)
if isinstance(doc, dict) and "verdict" in doc:
    # Evidence lines quote log lines and counts; keep them, scrubbed, but not their order/number.
    # Lines read from etcd's log (which lines etcd wrote varies from run to run) become one marker.
    evidence = ["<etcd log evidence>" if "etcd log" in e else e for e in doc["verdict"]["evidence"]]
    doc["verdict"]["evidence"] = sorted(set(evidence))
print(json.dumps(doc, indent=2, ensure_ascii=False))
