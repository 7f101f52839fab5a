//! Response-time analysis on textbook task sets with known response times.
//!
//! Times are abstract units (the analysis is unit-free; preempt feeds it nanoseconds). Every
//! expected value below is also derived by hand in the comment next to it, so a reader can check
//! the test without the book.

use preempt_stats::rta::{RtaError, Task, analyse};

fn response(report: &preempt_stats::rta::Report, name: &str) -> u64 {
    report.task(name).unwrap().response_ns
}

/// Burns & Wellings, "Real-Time Systems and Programming Languages" (4th ed., 2009), §11.5,
/// the response-time analysis example: a = (T 7, C 3, P 3), b = (T 12, C 3, P 2),
/// c = (T 20, C 5, P 1); the book iterates c through 5, 11, 14, 17, 20, 20.
#[test]
fn burns_wellings_response_time_example() {
    let tasks = [
        Task::new("a", 3, 7, 3),
        Task::new("b", 2, 12, 3),
        Task::new("c", 1, 20, 5),
    ];
    let r = analyse(&tasks).unwrap();
    assert_eq!(response(&r, "a"), 3);
    // b: 3 → 3 + ⌈3/7⌉·3 = 6 → 3 + ⌈6/7⌉·3 = 6.
    assert_eq!(response(&r, "b"), 6);
    // c: 5 → 5 + 3 + 3 = 11 → 5 + 6 + 3 = 14 → 5 + 6 + 6 = 17 → 5 + 9 + 6 = 20 → 20.
    assert_eq!(response(&r, "c"), 20);
    assert_eq!(r.task("c").unwrap().margin_ns, 0);
    // Starting from C + B = 5, the iterates are 11, 14, 17, 20, 20: five evaluations.
    assert_eq!(r.task("c").unwrap().iterations, 5);
    assert!(r.schedulable());
}

/// Burns & Wellings (ibid.), the harmonic set with utilisation exactly 1.0:
/// a = (T 80, C 40, P 1), b = (T 40, C 10, P 2), c = (T 20, C 5, P 3).
#[test]
fn burns_wellings_full_utilisation_harmonic_set() {
    let tasks = [
        Task::new("a", 1, 80, 40),
        Task::new("b", 2, 40, 10),
        Task::new("c", 3, 20, 5),
    ];
    let r = analyse(&tasks).unwrap();
    assert_eq!(response(&r, "c"), 5);
    // b: 10 → 10 + ⌈10/20⌉·5 = 15 → 15.
    assert_eq!(response(&r, "b"), 15);
    // a: 40 → 40 + 10 + 10 = 60 → 40 + 20 + 15 = 75 → 40 + 20 + 20 = 80 → 80.
    assert_eq!(response(&r, "a"), 80);
    assert!(r.schedulable());
    assert!((r.cores[0].utilisation - 1.0).abs() < 1e-12);
}

/// The point Buttazzo makes in "Hard Real-Time Computing Systems" (3rd ed., §4.3 and §4.5):
/// the Liu & Layland bound is only sufficient. τ1 = (C 1, T 4), τ2 = (C 2, T 6),
/// τ3 = (C 3, T 10) under rate-monotonic priorities has U = 0.883 > 3(2^(1/3) − 1) = 0.780,
/// yet exact analysis shows every deadline met.
#[test]
fn utilisation_above_the_liu_layland_bound_can_be_schedulable() {
    let tasks = [
        Task::new("t1", 3, 4, 1),
        Task::new("t2", 2, 6, 2),
        Task::new("t3", 1, 10, 3),
    ];
    let r = analyse(&tasks).unwrap();
    let u = r.cores[0].utilisation;
    assert!(u > 3.0 * (2_f64.powf(1.0 / 3.0) - 1.0));
    assert_eq!(response(&r, "t1"), 1);
    // t2: 2 → 2 + ⌈2/4⌉ = 3 → 3.
    assert_eq!(response(&r, "t2"), 3);
    // t3: 3 → 3 + 1 + 2 = 6 → 3 + 2 + 2 = 7 → 3 + 2 + 4 = 9 → 3 + 3 + 4 = 10 → 10.
    assert_eq!(response(&r, "t3"), 10);
    assert!(r.schedulable());
}

#[test]
fn an_overloaded_core_is_reported_with_a_negative_margin() {
    // U = 0.5 + 0.6 > 1. t2: 3 → 3 + ⌈3/4⌉·2 = 5 → 3 + ⌈5/4⌉·2 = 7 > 5: stop.
    let r = analyse(&[Task::new("t1", 2, 4, 2), Task::new("t2", 1, 5, 3)]).unwrap();
    let t2 = r.task("t2").unwrap();
    assert!(!t2.schedulable);
    assert_eq!(t2.response_ns, 7);
    assert_eq!(t2.margin_ns, -2);
    assert!(!r.schedulable());
    let text = r.to_string();
    assert!(
        text.contains("MISS") && text.contains("NOT schedulable"),
        "{text}"
    );
}

/// Priority Ceiling Protocol blocking (Sha, Rajkumar & Lehoczky 1990; Buttazzo §7.7):
/// H (P 3, T 50, C 5) uses S1 for 1; M (P 2, T 100, C 20) uses S2 for 3;
/// L (P 1, T 200, C 40) uses S1 for 4 and S2 for 6. Ceilings: S1 = 3, S2 = 2.
#[test]
fn priority_ceiling_blocking_is_one_critical_section() {
    let tasks = [
        Task::new("H", 3, 50, 5).uses("S1", 1),
        Task::new("M", 2, 100, 20).uses("S2", 3),
        Task::new("L", 1, 200, 40).uses("S1", 4).uses("S2", 6),
    ];
    let r = analyse(&tasks).unwrap();
    // H is blocked only through S1 (ceiling 3 >= 3): L's 4. M's S2 has ceiling 2 < 3.
    assert_eq!(r.task("H").unwrap().blocking_ns, 4);
    assert_eq!(response(&r, "H"), 9);
    // M: the longest of L's sections on ceilings >= 2 is S2's 6. 26 → 26 + 5 = 31 → 31.
    assert_eq!(r.task("M").unwrap().blocking_ns, 6);
    assert_eq!(response(&r, "M"), 31);
    // L is never blocked: 40 → 40 + 5 + 20 = 65 → 40 + 10 + 20 = 70 → 70.
    assert_eq!(r.task("L").unwrap().blocking_ns, 0);
    assert_eq!(response(&r, "L"), 70);
}

#[test]
fn equal_priorities_queue_behind_each_other_but_do_not_preempt() {
    // RTIC: one executor thread per priority, FIFO run-to-completion.
    let r = analyse(&[Task::new("a", 5, 10, 3), Task::new("b", 5, 10, 4)]).unwrap();
    assert_eq!(response(&r, "a"), 7);
    assert_eq!(response(&r, "b"), 7);
}

#[test]
fn tasks_on_different_cores_do_not_interfere() {
    let r = analyse(&[
        Task::new("fast", 9, 10, 6).on_core(0),
        Task::new("slow", 1, 10, 6).on_core(1),
    ])
    .unwrap();
    assert_eq!(response(&r, "fast"), 6);
    assert_eq!(response(&r, "slow"), 6);
    assert_eq!(r.cores.len(), 2);
}

/// A resource shared across cores: X (core 0, P 5, T 100, C 10, r for 2) and
/// Y (core 1, P 4, T 100, C 20, r for 3); Z (core 1, P 1, T 1000, C 80) shares nothing.
#[test]
fn blocking_across_cores_and_suspension_jitter() {
    let r = analyse(&[
        Task::new("X", 5, 100, 10).on_core(0).uses("r", 2),
        Task::new("Y", 4, 100, 20).on_core(1).uses("r", 3),
        Task::new("Z", 1, 1_000, 80).on_core(1),
    ])
    .unwrap();
    // X waits at its one request for Y's section: B = 1 · 3, R = 13.
    assert_eq!(r.task("X").unwrap().blocking_ns, 3);
    assert_eq!(response(&r, "X"), 13);
    // Y waits for X's section (B = 2) and X, higher priority, may lock again within the
    // window: ⌈R/100⌉ · 2. 22 → 24 → 24.
    assert_eq!(r.task("Y").unwrap().blocking_ns, 2);
    assert_eq!(response(&r, "Y"), 24);
    // Z is not blocked, but Y can suspend, so Y gets jitter R_Y − C_Y = 4:
    // 80 → 80 + ⌈84/100⌉·20 = 100 → 80 + ⌈104/100⌉·20 = 120 → 120.
    // (Without the jitter Z would come out at 100.)
    assert_eq!(response(&r, "Z"), 120);
}

#[test]
fn bad_task_sets_are_rejected_with_the_fix() {
    let err = analyse(&[Task::new("a", 1, 10, 1), Task::new("a", 2, 10, 1)]).unwrap_err();
    assert_eq!(err, RtaError::DuplicateName("a".into()));
    let err = analyse(&[Task::new("a", 1, 0, 1)]).unwrap_err();
    assert!(err.to_string().contains("period 0"), "{err}");
    let err = analyse(&[Task::new("a", 1, 10, 1).deadline(11)]).unwrap_err();
    assert!(err.to_string().contains("deadline <= period"), "{err}");
    let err = analyse(&[Task::new("a", 1, 10, 1).uses("r", 2)]).unwrap_err();
    assert!(err.to_string().contains("longer than its WCET"), "{err}");
    let err = analyse(&[Task::new("a", 1, 10, 5).uses_n("r", 2, 0)]).unwrap_err();
    assert!(matches!(err, RtaError::BadCriticalSection { .. }));
}

#[test]
fn huge_values_do_not_overflow() {
    let r = analyse(&[
        Task::new("hi", 2, u64::MAX, u64::MAX / 2),
        Task::new("lo", 1, u64::MAX, u64::MAX / 2 + 2),
    ])
    .unwrap();
    assert!(r.task("hi").unwrap().schedulable);
    let lo = r.task("lo").unwrap();
    assert!(!lo.schedulable);
    assert_eq!(lo.response_ns, u64::MAX); // saturated in the report, exact internally
}
