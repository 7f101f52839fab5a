//! The binary layout of trace events and ring-buffer pages, as the kernel describes it.
//!
//! Every event's record layout is published in `events/<system>/<event>/format`, and the page
//! header of the per-CPU ring buffer in `events/header_page`. Field offsets change between
//! kernel versions and architectures (e.g. `sched_migrate_task.comm` became a `__data_loc`
//! string in 6.x), so the engine never hard-codes them: it parses these files and reads each
//! field by name.
//!
//! ```
//! use preempt_trace::format::EventFormat;
//! let text = "name: softirq_entry\nID: 223\nformat:\n\
//!     \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
//!     \tfield:unsigned int vec;\toffset:8;\tsize:4;\tsigned:0;\n";
//! let f = EventFormat::parse(text).unwrap();
//! assert_eq!((f.name.as_str(), f.id), ("softirq_entry", 223));
//! assert_eq!(f.field("vec").unwrap().offset, 8);
//! ```

/// One field of an event record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Field name (`prev_pid`, `comm`, ...).
    pub name: String,
    /// Byte offset in the record.
    pub offset: usize,
    /// Byte size in the record (4 for a `__data_loc` descriptor).
    pub size: usize,
    /// Whether the integer is signed.
    pub signed: bool,
    /// A `__data_loc` string: the record holds `(length << 16) | offset` of the bytes.
    pub data_loc: bool,
}

impl Field {
    /// Reads the field as an integer (sign-extended when signed); 0 if the record is short.
    pub fn int(&self, rec: &[u8]) -> i64 {
        let Some(b) = rec.get(self.offset..self.offset + self.size) else {
            return 0;
        };
        match (self.size, self.signed) {
            (1, false) => i64::from(b[0]),
            (1, true) => i64::from(b[0] as i8),
            (2, false) => i64::from(u16::from_ne_bytes([b[0], b[1]])),
            (2, true) => i64::from(i16::from_ne_bytes([b[0], b[1]])),
            (4, false) => i64::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
            (4, true) => i64::from(i32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
            (8, _) => i64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            _ => 0,
        }
    }

    /// Reads the field as a string (a `char[N]` array up to its NUL, or a `__data_loc`
    /// string); lossy UTF-8.
    pub fn str<'a>(&self, rec: &'a [u8]) -> &'a [u8] {
        let bytes = if self.data_loc {
            let loc = self.int(rec) as u32;
            let (off, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
            rec.get(off..off + len).unwrap_or(&[])
        } else {
            rec.get(self.offset..self.offset + self.size).unwrap_or(&[])
        };
        let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
        &bytes[..end]
    }
}

/// The format of one event, from its `format` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    /// Event name.
    pub name: String,
    /// The event's type id (the record's `common_type`).
    pub id: u16,
    /// The fields, common ones included.
    pub fields: Vec<Field>,
}

impl EventFormat {
    /// Parses a `format` file.
    ///
    /// # Errors
    /// A message naming what is missing or malformed.
    pub fn parse(text: &str) -> Result<EventFormat, String> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(n) = line.strip_prefix("name:") {
                name = Some(n.trim().to_string());
            } else if let Some(i) = line.strip_prefix("ID:") {
                id = Some(
                    i.trim()
                        .parse::<u16>()
                        .map_err(|e| format!("bad event ID {i:?}: {e}"))?,
                );
            } else if line.starts_with("field:") {
                fields.push(parse_field(line)?);
            }
        }
        Ok(EventFormat {
            name: name.ok_or("format file has no name: line")?,
            id: id.ok_or("format file has no ID: line")?,
            fields,
        })
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Parses `field:<decl>;\toffset:N;\tsize:N;\tsigned:N;`.
fn parse_field(line: &str) -> Result<Field, String> {
    let mut parts = line.split(';').map(str::trim);
    let decl = parts
        .next()
        .and_then(|d| d.strip_prefix("field:"))
        .ok_or_else(|| format!("bad field line {line:?}"))?
        .trim();
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for p in parts {
        let num = |v: &str| {
            v.trim()
                .parse::<usize>()
                .map_err(|e| format!("bad number in {line:?}: {e}"))
        };
        if let Some(v) = p.strip_prefix("offset:") {
            offset = Some(num(v)?);
        } else if let Some(v) = p.strip_prefix("size:") {
            size = Some(num(v)?);
        } else if let Some(v) = p.strip_prefix("signed:") {
            signed = num(v)? != 0;
        }
    }
    let last = decl.rsplit(' ').next().unwrap_or(decl);
    let name = last.split('[').next().unwrap_or(last).to_string();
    Ok(Field {
        name,
        offset: offset.ok_or_else(|| format!("no offset in {line:?}"))?,
        size: size.ok_or_else(|| format!("no size in {line:?}"))?,
        signed,
        data_loc: decl.starts_with("__data_loc"),
    })
}

/// The layout of a ring-buffer page, from `events/header_page`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageHeader {
    /// Offset of the page's base timestamp (u64).
    pub timestamp_offset: usize,
    /// Offset of the commit word (bytes of event data on the page, plus flag bits).
    pub commit_offset: usize,
    /// Size of the commit word (8 on 64-bit kernels).
    pub commit_size: usize,
    /// Offset of the event data.
    pub data_offset: usize,
    /// Capacity of the data area; `data_offset + data_size` is the page size.
    pub data_size: usize,
}

impl PageHeader {
    /// Parses `events/header_page`.
    ///
    /// # Errors
    /// A message naming the missing field.
    pub(crate) fn parse(text: &str) -> Result<PageHeader, String> {
        let mut fields = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with("field:") {
                // `field: u64 timestamp;` has a space after the colon: normalise it.
                fields.push(parse_field(&line.replacen("field: ", "field:", 1))?);
            }
        }
        let get = |n: &str| {
            fields
                .iter()
                .find(|f| f.name == n)
                .ok_or_else(|| format!("header_page has no {n} field"))
        };
        let (ts, commit, data) = (get("timestamp")?, get("commit")?, get("data")?);
        Ok(PageHeader {
            timestamp_offset: ts.offset,
            commit_offset: commit.offset,
            commit_size: commit.size,
            data_offset: data.offset,
            data_size: data.size,
        })
    }

    /// Bytes per page (what one `read` of `trace_pipe_raw` returns).
    pub(crate) fn page_size(&self) -> usize {
        self.data_offset + self.data_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
\tfield:__data_loc char[] name;\toffset:28;\tsize:4;\tsigned:0;\n\nprint fmt: \"x\"\n";

    #[test]
    fn parses_arrays_data_loc_and_signs() {
        let f = EventFormat::parse(SWITCH).unwrap();
        assert_eq!(f.id, 372);
        let comm = f.field("prev_comm").unwrap();
        assert_eq!((comm.offset, comm.size, comm.data_loc), (8, 16, false));
        let name = f.field("name").unwrap();
        assert!(name.data_loc);
        let mut rec = vec![0u8; 40];
        rec[8..12].copy_from_slice(b"hog\0");
        rec[24..28].copy_from_slice(&(-5i32).to_ne_bytes());
        rec[28..32].copy_from_slice(&((4u32 << 16) | 32).to_ne_bytes());
        rec[32..36].copy_from_slice(b"eth0");
        assert_eq!(comm.str(&rec), b"hog");
        assert_eq!(f.field("prev_pid").unwrap().int(&rec), -5);
        assert_eq!(name.str(&rec), b"eth0");
    }

    #[test]
    fn parses_header_page() {
        let text = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        let h = PageHeader::parse(text).unwrap();
        assert_eq!((h.commit_offset, h.commit_size, h.data_offset), (8, 8, 16));
        assert_eq!(h.page_size(), 4096);
    }

    #[test]
    fn missing_id_is_an_error() {
        assert!(EventFormat::parse("name: x\n").is_err());
    }
}
