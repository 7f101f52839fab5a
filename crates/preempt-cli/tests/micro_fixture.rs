//! A `micro` result written before `micro` became a [`RunResult`] variant
//! (tests/fixtures/micro-v1.json: `preempt micro --sets nxp,zephyr --scale 0.01` from the old
//! `MicroFile` writer, trimmed to five benchmarks, argv[0] shortened) still loads through the
//! one results path, writes back byte for byte, and is read by report, compare and history.

use preempt_cli::export::{Exporter, csv::CsvExporter, json::JsonExporter};
use preempt_cli::history::{self, History};
use preempt_cli::micro;
use preempt_cli::results::input::{self, Loaded};
use preempt_cli::results::{ResultFile, RunResult};

const FIXTURE: &str = include_str!("fixtures/micro-v1.json");

#[test]
fn old_micro_file_round_trips_byte_for_byte() {
    let f: ResultFile = serde_json::from_str(FIXTURE).unwrap();
    assert_eq!(f.result.kind(), "micro");
    let RunResult::Micro(m) = &f.result else {
        panic!("kind micro did not load as RunResult::Micro");
    };
    assert_eq!(
        m.benches.iter().map(|b| b.id.as_str()).collect::<Vec<_>>(),
        [
            "malloc",
            "free",
            "mutex_lock",
            "mutex_unlock",
            "sem_give_no_switch"
        ]
    );
    let out = String::from_utf8(JsonExporter.serialize(&f).unwrap()).unwrap();
    assert_eq!(out, FIXTURE);
}

#[test]
fn old_micro_file_is_read_by_report_compare_history_and_csv() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("micro.json");
    std::fs::write(&path, FIXTURE).unwrap();
    let i = input::load_path(&path).unwrap();
    assert_eq!(i.loaded.kind(), "micro");
    let Loaded::Result(f) = &i.loaded else {
        panic!("a micro file loads as a preempt result");
    };

    let figs = preempt_cli::compare::figures_of(&i);
    assert!(
        figs.iter()
            .any(|g| g.key == "micro/sem_give_no_switch" && g.cycles.is_some()),
        "{:?}",
        figs.iter().map(|g| &g.key).collect::<Vec<_>>()
    );

    let db = History::open(&d.path().join("h.sqlite")).unwrap();
    let id = db.record(f, Some(&path)).unwrap();
    let rows = db.list(10, Some("micro")).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].headline, "5 benchmarks");
    assert_eq!(history::headline(f), rows[0].headline);
    let back: ResultFile = serde_json::from_str(&db.result_json(id).unwrap()).unwrap();
    assert_eq!(&back, f.as_ref());

    let csv = String::from_utf8(CsvExporter.serialize(f).unwrap()).unwrap();
    assert!(csv.starts_with("set,id,title,samples,min_ns,"), "{csv}");
    assert_eq!(csv.lines().count(), 1 + 5);
    assert_eq!(micro::micro_of(f).unwrap().benches.len(), 5);
}
