//! Trace records → typed scheduler and interrupt events.
//!
//! [`Decoder`] is built from the `format` files of the events the engine enabled and turns a
//! raw record into an [`Event`] by its `common_type`, reading each field at the offset the kernel
//! published. Names (task comms, interrupt handler names) are kept in side tables, so an
//! [`Event`] is a small `Copy` value and a long history stays compact.

use std::collections::HashMap;

use crate::format::{EventFormat, Field};

/// A task's command name as the kernel stores it (`TASK_COMM_LEN` = 16, NUL-padded).
pub(crate) type Comm = [u8; 16];

/// The x86 interrupt vectors traced through `irq_vectors` (system interrupts without an irq
/// number: the local APIC timer, inter-processor interrupts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vector {
    /// `local_timer_entry/exit`: the local APIC timer (hrtimers, the tick).
    LocalTimer,
    /// `reschedule_entry/exit`: the reschedule IPI.
    Reschedule,
    /// `call_function_entry/exit`: a cross-CPU function call IPI.
    CallFunction,
    /// `call_function_single_entry/exit`.
    CallFunctionSingle,
    /// `irq_work_entry/exit`.
    IrqWork,
}

impl Vector {
    /// The name shown in causes (as in `/proc/interrupts`: LOC, RES, CAL, IWI).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Vector::LocalTimer => "LOC local_timer",
            Vector::Reschedule => "RES reschedule",
            Vector::CallFunction => "CAL call_function",
            Vector::CallFunctionSingle => "CAL call_function_single",
            Vector::IrqWork => "IWI irq_work",
        }
    }

    const ALL: [(Vector, &'static str); 5] = [
        (Vector::LocalTimer, "local_timer"),
        (Vector::Reschedule, "reschedule"),
        (Vector::CallFunction, "call_function"),
        (Vector::CallFunctionSingle, "call_function_single"),
        (Vector::IrqWork, "irq_work"),
    ];
}

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `sched_switch`: `prev` left the CPU, `next` runs. Priorities are kernel priorities
    /// (0..=98 real-time, 99 − rtprio; 100..=139 normal, 120 + nice; −1 deadline).
    Switch {
        /// Task leaving.
        prev_pid: i32,
        /// Its kernel priority.
        prev_prio: i32,
        /// Its state (0 = still runnable: it was preempted).
        prev_state: i64,
        /// Task entering.
        next_pid: i32,
        /// Its kernel priority.
        next_prio: i32,
    },
    /// `sched_waking` (`woken == false`) or `sched_wakeup` (`true`) of `pid`.
    Waking {
        /// Task woken.
        pid: i32,
        /// Its kernel priority.
        prio: i32,
        /// CPU it will run on.
        target_cpu: i32,
        /// `sched_wakeup` (queued) rather than `sched_waking` (first step).
        woken: bool,
    },
    /// `sched_migrate_task`.
    Migrate {
        /// Task moved.
        pid: i32,
        /// From.
        orig_cpu: i32,
        /// To.
        dest_cpu: i32,
    },
    /// `irq_handler_entry`.
    IrqEntry {
        /// Interrupt number.
        irq: i32,
    },
    /// `irq_handler_exit`.
    IrqExit {
        /// Interrupt number.
        irq: i32,
    },
    /// `softirq_entry`.
    SoftirqEntry {
        /// Softirq vector (0 HI .. 9 RCU).
        vec: u32,
    },
    /// `softirq_exit`.
    SoftirqExit {
        /// Softirq vector.
        vec: u32,
    },
    /// `hrtimer_expire_entry`: a high-resolution timer's callback starts.
    HrtimerEntry {
        /// The timer base's time at expiry (CLOCK_MONOTONIC ns).
        now: i64,
    },
    /// `hrtimer_expire_exit`.
    HrtimerExit,
    /// An x86 system vector starts.
    VectorEntry(Vector),
    /// An x86 system vector ends.
    VectorExit(Vector),
}

/// One decoded event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// CLOCK_MONOTONIC ns (the instance's `trace_clock` is `mono`).
    pub ts: u64,
    /// The CPU whose buffer held it.
    pub cpu: u32,
    /// What happened.
    pub kind: Kind,
}

/// Softirq vector names (include/linux/interrupt.h, `softirq_to_name`).
pub(crate) const SOFTIRQ_NAMES: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

#[derive(Debug)]
enum Decode {
    Switch {
        prev_comm: Field,
        prev_pid: Field,
        prev_prio: Field,
        prev_state: Field,
        next_comm: Field,
        next_pid: Field,
        next_prio: Field,
    },
    Waking {
        comm: Field,
        pid: Field,
        prio: Field,
        target_cpu: Field,
        woken: bool,
    },
    Migrate {
        pid: Field,
        orig: Field,
        dest: Field,
    },
    IrqEntry {
        irq: Field,
        name: Field,
    },
    IrqExit {
        irq: Field,
    },
    Softirq {
        vec: Field,
        entry: bool,
    },
    HrtimerEntry {
        now: Field,
    },
    HrtimerExit,
    Vector {
        vector: Vector,
        entry: bool,
    },
}

/// Turns records into events; keeps the names seen (task comms, irq handler names).
#[derive(Debug)]
pub struct Decoder {
    common_type: Field,
    by_id: HashMap<u16, Decode>,
    comms: HashMap<i32, Comm>,
    irq_names: HashMap<i32, String>,
}

/// The events the engine enables, as `(system, event)`. The `irq_vectors` ones exist on x86
/// only; a missing event is skipped.
///
/// Every enabled event the measured CPU writes on a wake-up path lengthens that path (a few
/// hundred ns each on a cold cache after idle), so the hrtimer callbacks are enabled only where
/// no `irq_vectors` events bracket the timer interrupt ([`FALLBACK_EVENTS`]). `sched_wakeup`
/// stays: it is written on the woken task's CPU even when the waker runs elsewhere, and the
/// repair of a lost idle switch-in (`session.rs`) needs it there.
pub const EVENTS: &[(&str, &str)] = &[
    ("sched", "sched_switch"),
    ("sched", "sched_waking"),
    ("sched", "sched_wakeup"),
    ("sched", "sched_migrate_task"),
    ("irq", "irq_handler_entry"),
    ("irq", "irq_handler_exit"),
    ("irq", "softirq_entry"),
    ("irq", "softirq_exit"),
    ("irq_vectors", "local_timer_entry"),
    ("irq_vectors", "local_timer_exit"),
    ("irq_vectors", "reschedule_entry"),
    ("irq_vectors", "reschedule_exit"),
    ("irq_vectors", "call_function_entry"),
    ("irq_vectors", "call_function_exit"),
    ("irq_vectors", "call_function_single_entry"),
    ("irq_vectors", "call_function_single_exit"),
    ("irq_vectors", "irq_work_entry"),
    ("irq_vectors", "irq_work_exit"),
];

/// Enabled only where the kernel has no `irq_vectors/local_timer_entry` event (not x86): then
/// the hrtimer callbacks are what marks time spent in the timer interrupt. With the vector
/// events, a callback in hard-irq context is charged to `local_timer` and one in softirq
/// context to the `HRTIMER` softirq either way, so these two would only add two events to
/// every timer wake-up.
pub const FALLBACK_EVENTS: &[(&str, &str)] = &[
    ("timer", "hrtimer_expire_entry"),
    ("timer", "hrtimer_expire_exit"),
];

impl Decoder {
    /// Builds a decoder from the formats of the enabled events.
    ///
    /// # Errors
    /// A message naming an event whose format lacks a field the engine reads.
    pub fn new(formats: &[EventFormat]) -> Result<Decoder, String> {
        let mut by_id = HashMap::new();
        let mut common_type = None;
        for f in formats {
            let get = |n: &str| {
                f.field(n)
                    .cloned()
                    .ok_or_else(|| format!("event {} has no field {n}", f.name))
            };
            common_type.get_or_insert(get("common_type")?);
            let d = match f.name.as_str() {
                "sched_switch" => Decode::Switch {
                    prev_comm: get("prev_comm")?,
                    prev_pid: get("prev_pid")?,
                    prev_prio: get("prev_prio")?,
                    prev_state: get("prev_state")?,
                    next_comm: get("next_comm")?,
                    next_pid: get("next_pid")?,
                    next_prio: get("next_prio")?,
                },
                "sched_waking" | "sched_wakeup" => Decode::Waking {
                    comm: get("comm")?,
                    pid: get("pid")?,
                    prio: get("prio")?,
                    target_cpu: get("target_cpu")?,
                    woken: f.name == "sched_wakeup",
                },
                "sched_migrate_task" => Decode::Migrate {
                    pid: get("pid")?,
                    orig: get("orig_cpu")?,
                    dest: get("dest_cpu")?,
                },
                "irq_handler_entry" => Decode::IrqEntry {
                    irq: get("irq")?,
                    name: get("name")?,
                },
                "irq_handler_exit" => Decode::IrqExit { irq: get("irq")? },
                "softirq_entry" | "softirq_exit" => Decode::Softirq {
                    vec: get("vec")?,
                    entry: f.name == "softirq_entry",
                },
                "hrtimer_expire_entry" => Decode::HrtimerEntry { now: get("now")? },
                "hrtimer_expire_exit" => Decode::HrtimerExit,
                other => {
                    let Some((vector, entry)) = Vector::ALL.iter().find_map(|(v, n)| {
                        let rest = other.strip_prefix(n)?;
                        match rest {
                            "_entry" => Some((*v, true)),
                            "_exit" => Some((*v, false)),
                            _ => None,
                        }
                    }) else {
                        continue;
                    };
                    Decode::Vector { vector, entry }
                }
            };
            by_id.insert(f.id, d);
        }
        Ok(Decoder {
            common_type: common_type.ok_or("no event formats")?,
            by_id,
            comms: HashMap::new(),
            irq_names: HashMap::new(),
        })
    }

    /// Decodes one record; `None` for an event type the engine did not ask for.
    pub fn decode(&mut self, ts: u64, cpu: u32, rec: &[u8]) -> Option<Event> {
        let id = u16::try_from(self.common_type.int(rec)).ok()?;
        let kind = match self.by_id.get(&id)? {
            Decode::Switch {
                prev_comm,
                prev_pid,
                prev_prio,
                prev_state,
                next_comm,
                next_pid,
                next_prio,
            } => {
                let (p, n) = (prev_pid.int(rec) as i32, next_pid.int(rec) as i32);
                self.comms.insert(p, comm(prev_comm.str(rec)));
                self.comms.insert(n, comm(next_comm.str(rec)));
                Kind::Switch {
                    prev_pid: p,
                    prev_prio: prev_prio.int(rec) as i32,
                    prev_state: prev_state.int(rec),
                    next_pid: n,
                    next_prio: next_prio.int(rec) as i32,
                }
            }
            Decode::Waking {
                comm: c,
                pid,
                prio,
                target_cpu,
                woken,
            } => {
                let pid = pid.int(rec) as i32;
                self.comms.insert(pid, comm(c.str(rec)));
                Kind::Waking {
                    pid,
                    prio: prio.int(rec) as i32,
                    target_cpu: target_cpu.int(rec) as i32,
                    woken: *woken,
                }
            }
            Decode::Migrate { pid, orig, dest } => Kind::Migrate {
                pid: pid.int(rec) as i32,
                orig_cpu: orig.int(rec) as i32,
                dest_cpu: dest.int(rec) as i32,
            },
            Decode::IrqEntry { irq, name } => {
                let irq = irq.int(rec) as i32;
                self.irq_names
                    .entry(irq)
                    .or_insert_with(|| String::from_utf8_lossy(name.str(rec)).into_owned());
                Kind::IrqEntry { irq }
            }
            Decode::IrqExit { irq } => Kind::IrqExit {
                irq: irq.int(rec) as i32,
            },
            Decode::Softirq { vec, entry } => {
                let vec = vec.int(rec) as u32;
                if *entry {
                    Kind::SoftirqEntry { vec }
                } else {
                    Kind::SoftirqExit { vec }
                }
            }
            Decode::HrtimerEntry { now } => Kind::HrtimerEntry { now: now.int(rec) },
            Decode::HrtimerExit => Kind::HrtimerExit,
            Decode::Vector { vector, entry } => {
                if *entry {
                    Kind::VectorEntry(*vector)
                } else {
                    Kind::VectorExit(*vector)
                }
            }
        };
        Some(Event { ts, cpu, kind })
    }

    /// The comm last seen for `pid` (`swapper` for the idle task, `?` if never seen).
    pub fn comm(&self, pid: i32) -> String {
        if pid == 0 {
            return "swapper".into();
        }
        match self.comms.get(&pid) {
            Some(c) => {
                let end = c.iter().position(|&b| b == 0).unwrap_or(c.len());
                String::from_utf8_lossy(&c[..end]).into_owned()
            }
            None => "?".into(),
        }
    }

    /// The handler name of interrupt `irq`, if its entry was seen.
    pub(crate) fn irq_name_seen(&self, irq: i32) -> Option<String> {
        self.irq_names.get(&irq).cloned()
    }

    /// The handler name of interrupt `irq` (`irq<N>` if its entry was never seen).
    pub(crate) fn irq_name(&self, irq: i32) -> String {
        self.irq_name_seen(irq)
            .unwrap_or_else(|| format!("irq{irq}"))
    }
}

fn comm(bytes: &[u8]) -> Comm {
    let mut c = [0u8; 16];
    let n = bytes.len().min(16);
    c[..n].copy_from_slice(&bytes[..n]);
    c
}
