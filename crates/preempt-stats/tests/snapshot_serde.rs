//! JSON round trips of the serializable snapshots (feature `serde`).

use preempt_stats::histogram::{Digits2, Histogram, HistogramSnapshot};
use preempt_stats::rta::{Report, Task, analyse};
use preempt_stats::task_stats::{Completion, TaskSnapshot, TaskStats};

#[test]
fn task_snapshot_round_trips_through_json() {
    let stats: TaskStats = TaskStats::new("ctl");
    stats.record_start(1_000, 3_500);
    stats.record_completion(Completion {
        release_ns: 1_000,
        start_ns: 3_500,
        end_ns: 900_000,
        cpu_ns: Some(800_000),
        deadline_ns: Some(500_000),
    });
    stats.record_page_faults(3, 0);
    let snap = stats.snapshot();
    let json = serde_json::to_string(&snap).unwrap();
    assert!(
        json.contains("\"release_latency\"") && json.contains("\"low_ns\":2496"),
        "{json}"
    );
    let back: TaskSnapshot = serde_json::from_str(&json).unwrap();
    assert_eq!(back, snap);
    assert_eq!(back.max_lateness_ns, Some(400_000));
    assert_eq!(back.execution_time.max_ns, Some(800_000));
}

#[test]
fn a_task_snapshot_written_before_the_execution_histogram_reads_back_empty() {
    let stats: TaskStats = TaskStats::new("old");
    let mut json = serde_json::to_value(stats.snapshot()).unwrap();
    json.as_object_mut()
        .unwrap()
        .remove("execution_time")
        .unwrap();
    let back: TaskSnapshot = serde_json::from_value(json).unwrap();
    assert_eq!(
        back.execution_time,
        HistogramSnapshot::empty(Histogram::<Digits2>::LAYOUT)
    );
    assert_eq!(back, stats.snapshot());
}

#[test]
fn histogram_snapshot_lists_only_non_empty_buckets() {
    let h: Histogram<Digits2> = Histogram::new();
    h.record_n(1_000, 5);
    h.record(2_000_000);
    let json = serde_json::to_value(h.snapshot()).unwrap();
    assert_eq!(json["buckets"].as_array().unwrap().len(), 2);
    assert_eq!(json["count"], 6);
    let back: HistogramSnapshot = serde_json::from_value(json).unwrap();
    // The median is the top of 1 000's bucket (1 000..=1 003), as HdrHistogram reports it.
    assert_eq!(back.value_at_quantile(0.5), 1_003);
}

#[test]
fn rta_report_round_trips_through_json() {
    let report = analyse(&[Task::new("a", 2, 10, 3), Task::new("b", 1, 20, 5)]).unwrap();
    let back: Report = serde_json::from_str(&serde_json::to_string(&report).unwrap()).unwrap();
    assert_eq!(back, report);
}
