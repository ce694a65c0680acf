//! The case report's content as plain values (`--report html|md`): sections of facts, lists,
//! tables, the matrix grid and the onset chart, every string plain text as read. [`super::html`]
//! and [`super::markdown`] lay the same sections out, each through its own one escaping function,
//! so what a page says and what a ticket's text says are one content; [`super::case`] makes the
//! sections of a diagnosis. Another report (e.g. what changed between two bundles) is a title and
//! its own sections given to [`super::case_page`].

/// One titled part of the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    pub title: String,
    /// The `id` of its anchor (ASCII, ours, never read from outside).
    pub id: String,
    pub blocks: Vec<Block>,
}

impl Section {
    pub fn new(id: &str, title: impl Into<String>) -> Section {
        Section {
            title: title.into(),
            id: id.into(),
            blocks: Vec::new(),
        }
    }

    pub fn with(mut self, block: Block) -> Section {
        self.blocks.push(block);
        self
    }
}

/// What a section holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Block {
    /// Name and value pairs (the header, the provenance).
    Facts(Vec<(String, String)>),
    /// The verdict's code, whether it is `Healthy`, and its sentence.
    Verdict {
        code: String,
        healthy: bool,
        summary: String,
    },
    /// A paragraph.
    Text(String),
    /// A bulleted list.
    List(Vec<String>),
    /// A numbered list of commands and actions (next steps).
    Steps(Vec<String>),
    /// A table; rows shorter than the header are padded.
    Table {
        header: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    /// Text laid out in columns by a text renderer, kept as it prints (monospaced).
    Pre(String),
    Grid(Grid),
    Chart(Chart),
}

/// How a part of a grid cell reads at a glance (its colour, and its word in the legend).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    /// The path works.
    Open,
    /// The path fails.
    Failing,
    /// Not tried, or no probe from that node.
    Unknown,
}

impl Mark {
    /// Its CSS class and its legend's word.
    pub fn class(self) -> &'static str {
        match self {
            Mark::Open => "open",
            Mark::Failing => "failing",
            Mark::Unknown => "unknown",
        }
    }

    pub fn legend(self) -> &'static str {
        match self {
            Mark::Open => "answers",
            Mark::Failing => "fails (timeout, refused, no route, TLS)",
            Mark::Unknown => "not probed",
        }
    }
}

/// The combined matrix: FROM rows, TO columns, each cell one part per port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grid {
    pub nodes: Vec<String>,
    pub ports: Vec<u16>,
    /// Row-major: `cells[i * nodes.len() + j]` is nodes[i] → nodes[j].
    pub cells: Vec<GridCell>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GridCell {
    pub from: String,
    pub to: String,
    /// One per port of the grid, in its order.
    pub parts: Vec<GridPart>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GridPart {
    pub port: u16,
    /// The state as the json names it (`Timeout`), for machines reading the page.
    pub state: String,
    /// The state as the tables say it (`timeout`, `ok 1ms`).
    pub text: String,
    pub mark: Mark,
}

/// The onset timeline as a chart: one bar a failing pair from its onset to the probes' time,
/// the times etcd lost its leader marked. Times are milliseconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chart {
    pub start_ms: i64,
    pub end_ms: i64,
    pub bars: Vec<Bar>,
    pub marks: Vec<ChartMark>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bar {
    pub from: String,
    pub to: String,
    /// None: the logs read do not go back to it; the bar starts at the chart's start, hatched.
    pub onset_ms: Option<i64>,
    /// When the onset is a window (etcd's prober says it up to 34 s late): its start, drawn
    /// lighter up to the onset.
    pub earliest_ms: Option<i64>,
    /// What the bar's tooltip and the md table say of it.
    pub detail: String,
    /// Still failing at the probes' time (a bar that ended is drawn lighter).
    pub failing_now: bool,
}

/// A moment on the chart: nodes that lost their leader at that second.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChartMark {
    pub at_ms: i64,
    pub label: String,
    pub nodes: Vec<String>,
}
