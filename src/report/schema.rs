//! The JSON Schema of every output kind, generated from the report types: docs/schema/ holds
//! them, and a test (tests/it/schema.rs) fails when they differ from the types.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::Value;

/// Each output kind's file name under docs/schema/ (without `.json`) and its schema.
pub fn all() -> Vec<(&'static str, Value)> {
    vec![
        ("StatusReport", of::<super::StatusReport>()),
        ("DiagnoseReport", of::<super::DiagnoseReport>()),
        (
            "StatusReportList",
            of::<super::ListReport<super::StatusReport>>(),
        ),
        (
            "DiagnoseReportList",
            of::<super::ListReport<super::DiagnoseReport>>(),
        ),
        ("DiagnoseComparison", of::<super::Comparison>()),
        ("CleanupReport", of::<super::CleanupReport>()),
        ("Version", of::<super::VersionReport>()),
    ]
}

/// The schema of what `-o json` writes: serialization's view, so a field skipped when empty is
/// optional and a field written always is required.
fn of<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    generator.into_root_schema_for::<T>().to_value()
}
