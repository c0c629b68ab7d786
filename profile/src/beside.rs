//! Two halves of one job on the two cores the CLI has (native only: the viewer's wasm
//! has one thread). Used where a pass over every sample splits cleanly in two: the
//! index's frames, the merged samples' build, their validation.

/// Below this many items a job runs on this thread alone: a thread costs tens of
/// microseconds to start, a small profile's whole pass less.
const WORTH_A_THREAD: usize = 1 << 14;

/// Runs `a` and `b` (halves of a job over `items` items), `b` on a thread of its own
/// when the job is worth one and one can start; else both here. A panic in `b` is
/// raised again here.
pub(crate) fn beside<A: Send, B: Send>(
    items: usize,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if items < WORTH_A_THREAD {
        return (a(), b());
    }
    let slot = std::sync::Mutex::new(Some(b));
    let take = || slot.lock().ok().and_then(|mut b| b.take());
    std::thread::scope(|s| {
        let spawned = std::thread::Builder::new()
            .name("heapsnap half".into())
            .spawn_scoped(s, || take().map(|b| b()));
        let ra = a();
        let rb = match spawned.map(|h| h.join()) {
            Ok(Ok(Some(rb))) => rb,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            // No thread: `b` runs here.
            _ => match take() {
                Some(b) => b(),
                None => unreachable!("b was taken by a thread that returned it"),
            },
        };
        (ra, rb)
    })
}
