//! Under the mock clock, with fd events replayed at virtual times: a hardware task runs when
//! its eventfd is written (two writes at one instant are one readiness carrying both
//! signals), another when a datagram arrives on its UNIX socket, a spawn to a higher level
//! preempts a running job on the spot, and async tasks talk through
//! rtic-sync's `Channel` and `Signal`, pacing themselves with `Mono::delay_until` and
//! `Mono::timeout_after`, unchanged from RTIC v2. Every line is asserted.

use std::sync::Mutex;

use preempt::sim;

static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn log(line: String) {
    LOG.lock().unwrap().push(line);
}

#[preempt::app(clock = mock, main = false)]
mod app {
    use preempt::fd::{EventSource, FdSource, UnixDatagramSource};
    use rtic_sync::channel::{Receiver, Sender};
    use rtic_sync::signal::{Signal, SignalReader, SignalWriter};
    use std::os::unix::net::UnixDatagram;

    use super::log;

    static SIGNAL: Signal<u32> = Signal::new();

    #[local]
    struct Local {
        line: EventSource,
        socket: UnixDatagramSource,
        tx: Sender<'static, u32, 2>,
        rx: Receiver<'static, u32, 2>,
        done: SignalWriter<'static, u32>,
        on_done: SignalReader<'static, u32>,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        let line = EventSource::new().unwrap();
        for at_us in [100, 250, 250] {
            let notifier = line.notifier().unwrap();
            preempt::sim::at(Instant::from_nanos(at_us * 1_000), move || {
                notifier.notify().unwrap()
            });
        }
        let (ours, theirs) = UnixDatagram::pair().unwrap();
        let socket = UnixDatagramSource::from_socket(ours, 64).unwrap();
        let peer = std::sync::Arc::new(theirs);
        for (at_us, word) in [(600, "hello"), (700, "world")] {
            let peer = peer.clone();
            preempt::sim::at(Instant::from_nanos(at_us * 1_000), move || {
                peer.send(word.as_bytes()).unwrap();
            });
        }
        let (tx, rx) = rtic_sync::make_channel!(u32, 2);
        let (done, on_done) = SIGNAL.split();
        producer::spawn().unwrap();
        // One live instance: a second spawn gives the (empty) arguments back.
        assert_eq!(producer::spawn(), Err(()));
        consumer::spawn(3).unwrap();
        waiter::spawn().unwrap();
        (
            Shared {},
            Local {
                line,
                socket,
                tx,
                rx,
                done,
                on_done,
            },
            init::Monotonics(),
        )
    }

    #[task(binds = line, priority = 3)]
    fn on_line(cx: on_line::Context) {
        let count = cx.local.line.read_event().unwrap().unwrap();
        log(format!("{} on_line {count}", Mono::now().as_nanos()));
        urgent::spawn().unwrap(); // priority 4: preempts this job here
        preempt::sim::advance(10.micros());
    }

    #[task(binds = socket, priority = 3)]
    fn on_datagram(cx: on_datagram::Context) {
        while let Ok(Some(d)) = cx.local.socket.read_event() {
            let word = String::from_utf8_lossy(d.data).into_owned();
            log(format!("{} datagram {word}", Mono::now().as_nanos()));
        }
    }

    #[task(priority = 4)]
    fn urgent(_: urgent::Context) {
        log(format!("{} urgent", Mono::now().as_nanos()));
    }

    #[task(priority = 2, local = [tx])]
    async fn producer(cx: producer::Context) {
        let mut next = Mono::now();
        for i in 0..3 {
            next += 1.millis();
            Mono::delay_until(next).await;
            cx.local.tx.send(i).await.unwrap();
            log(format!("{} sent {i}", Mono::now().as_nanos()));
        }
    }

    #[task(priority = 1, local = [rx, done])]
    async fn consumer(cx: consumer::Context, expected: u32) {
        for _ in 0..expected {
            let v = cx.local.rx.recv().await.unwrap();
            log(format!("{} got {v}", Mono::now().as_nanos()));
        }
        let r = Mono::timeout_after(500.micros(), cx.local.rx.recv()).await;
        log(format!("{} timeout {}", Mono::now().as_nanos(), r.is_err()));
        cx.local.done.write(42);
    }

    #[task(priority = 1, local = [on_done])]
    async fn waiter(cx: waiter::Context) {
        let v = cx.local.on_done.wait().await;
        log(format!("{} signal {v}", Mono::now().as_nanos()));
        preempt::exit(0);
    }
}

#[test]
fn fd_events_async_tasks_and_preemption_replay_deterministically() {
    assert_eq!(app::run(), 0);
    assert_eq!(
        *LOG.lock().unwrap(),
        [
            "100000 on_line 1",
            "100000 urgent",
            "250000 on_line 2",
            "250000 urgent",
            "600000 datagram hello",
            "700000 datagram world",
            "1000000 sent 0",
            "1000000 got 0",
            "2000000 sent 1",
            "2000000 got 1",
            "3000000 sent 2",
            "3000000 got 2",
            "3500000 timeout true",
            "3500000 signal 42",
        ]
    );
    let trace: Vec<String> = sim::take_trace().iter().map(ToString::to_string).collect();
    // The hardware task is preempted by `urgent` at the spawn, then finishes its 10 µs.
    let hw: Vec<&str> = trace
        .iter()
        .map(String::as_str)
        .filter(|l| l.contains("on_line") || l.contains("urgent"))
        .take(4)
        .collect();
    assert_eq!(
        hw,
        [
            "100000 start on_line released 100000",
            "100000 start urgent released 100000",
            "100000 end urgent",
            "110000 end on_line",
        ]
    );
    let stats = app::stats();
    let on_line = &stats.task("on_line").unwrap().stats;
    assert_eq!((on_line.releases, on_line.exec_max_ns), (2, Some(10_000)));
    let producer = &stats.task("producer").unwrap().stats;
    assert_eq!((producer.releases, producer.completions), (1, 1));
    // The async producer's response time spans its three delays.
    assert_eq!(producer.response_max_ns, Some(3_000_000));
    assert_eq!(
        stats.task("producer").unwrap().kind,
        preempt::task::TaskKind::Async
    );
}
