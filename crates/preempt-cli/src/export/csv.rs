//! The CSV exporter: one row per measured unit (thread, matrix cell, wake-up case, check
//! item, rtio-bench cell or break point), with units in the column names, for spreadsheets
//! and `pandas.read_csv`.
//!
//! The raw histograms are only in the JSON export (a CSV table has no room for nested data);
//! per-sample data is what `--trace-samples` writes.

use anyhow::Result;

use super::Exporter;
use crate::results::ResultFile;

/// Writes the summary rows of a [`ResultFile`] as CSV: the table is the result kind's own
/// (`RunResult::csv_table`).
#[derive(Debug, Clone, Copy, Default)]
pub struct CsvExporter;

impl Exporter for CsvExporter {
    fn serialize(&self, result: &ResultFile) -> Result<Vec<u8>> {
        let mut w = csv::Writer::from_writer(Vec::new());
        let (header, rows) = result.result.csv_table();
        w.write_record(&header)?;
        for row in rows {
            w.write_record(&row)?;
        }
        w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))
    }
}
