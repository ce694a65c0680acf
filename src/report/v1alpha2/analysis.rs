//! The analysis of a `DiagnoseReport`: the verdict, the node-to-node matrices and each node's
//! etcd log findings. The log findings are the classifier's own types (`probe::etcdlog`), which
//! derive the contract's serde names and schema.

pub(crate) use crate::analyse::verdict::NodeLogs;
pub(crate) use crate::probe::etcdlog::LeaderState;
#[cfg(test)]
pub(crate) use crate::probe::etcdlog::LogSummary;
#[cfg(test)]
pub(crate) use crate::probe::etcdlog::{LeaderView, LogFormat, WindowEnd};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse::verdict;
    use crate::probe::etcdlog;

    #[test]
    fn a_log_summary_is_camel_case_and_round_trips() {
        let s = etcdlog::classify(&etcdlog::tests::wrapped_log());
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["findings"][0]["kind"], "PeerUnhealthy");
        assert_eq!(json["findings"][1]["peerAddresses"][0], "198.18.0.12:2380");
        assert_eq!(json["parsedLines"], 4);
        assert_eq!(serde_json::from_value::<LogSummary>(json).unwrap(), s);
    }

    #[test]
    fn the_schema_follows_the_serde_attributes() {
        let schema = serde_json::to_string(&schemars::schema_for!(NodeLogs)).unwrap();
        for said in [
            "\"parsedLines\"",
            "\"untilFrom\"",
            "\"PeerUnhealthy\"",
            "\"NoLeader\"",
            "\"LogFinding\"",
        ] {
            assert!(schema.contains(said), "{said} not in {schema}");
        }
        let schema =
            serde_json::to_string(&schemars::schema_for!(crate::analyse::matrix::Matrix)).unwrap();
        assert!(schema.contains("\"TlsStalled\""), "{schema}");
        let schema = serde_json::to_string(&schemars::schema_for!(verdict::Verdict)).unwrap();
        assert!(schema.contains("\"nextSteps\""), "{schema}");
    }
}
