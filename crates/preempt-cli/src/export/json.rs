//! The JSON exporter: the complete result, pretty-printed (the exchange format every other
//! tool reads).

use anyhow::Result;

use super::Exporter;
use crate::results::ResultFile;

/// Writes the whole [`ResultFile`] as pretty JSON with a trailing newline.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn serialize(&self, result: &ResultFile) -> Result<Vec<u8>> {
        let mut out = serde_json::to_vec_pretty(result)?;
        out.push(b'\n');
        Ok(out)
    }
}
