//! Engine benchmarks: `cargo bench -p rocelab-bench [-- NAME...]`.
//!
//! Prints data packets, packet-hops and events per second, peak RSS and wall/CPU time per
//! scenario (the same scenarios as `rocelab bench`). A benchmark, not a test: nothing asserts
//! on time. It does assert the hot-path rule of docs/architecture.md — no allocation per event in steady
//! state — by counting allocations during the run: queues, buckets and the packet slab grow
//! to their high-water marks and are then reused, so allocations must stay a vanishing
//! fraction of events.

use rocelab_sim::alloc::HugePages;
use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { HugePages.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { HugePages.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { HugePages.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn main() {
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let all = rocelab_bench::all();
    let width = all.iter().map(|s| s.name.len()).max().unwrap_or(8);
    println!("{}  allocations", rocelab_bench::measure::table_header(width, false));
    for s in all {
        if !filter.is_empty() && !filter.iter().any(|f| s.name.contains(f.as_str())) {
            continue;
        }
        // The same measurement as `rocelab bench` (warmup, then timed runs).
        match rocelab_bench::measure(
            &s,
            rocelab_bench::Plan::default(),
            &|| ALLOCS.load(Ordering::Relaxed),
            &mut |_| {},
        ) {
            Ok((m, allocs)) => {
                // Counted over the event loop only (loading and routing are excluded).
                let per_event = allocs as f64 / m.events.max(1) as f64;
                println!("{}  {allocs} ({per_event:.5} per event)", rocelab_bench::measure::table_row(&m, width, None));
                assert!(per_event < 0.01, "{}: {allocs} allocations for {} events", s.name, m.events);
            }
            Err(e) => eprintln!("{}: {e}", s.name),
        }
    }
}
