//! What nccl-tests' own loop adds to a call's time when one host thread drives several GPUs.
//!
//! nccl-tests times `iters` calls issued back to back and prints the average. Run as
//! `all_reduce_perf -g N` (one thread driving N GPUs, the header's `nThread 1 nGpus N`) without
//! CUDA graphs (`graph: 0`), every call is one `ncclGroupStart` … `ncclGroupEnd` in which the
//! thread enqueues the collective and launches its kernel on each of its N GPUs in turn. The
//! host then needs N launches per call while the GPUs run the previous one, so a call takes at
//! least N × the host's cost of one launch: the GPUs' time where that is longer, the host's
//! where it is not (small sizes). One process per GPU (`-g 1` under MPI) or CUDA graphs (`-G`)
//! remove the floor: that is what NCCL's maintainers recommend for latency figures, because of
//! "the CUDA latency overheads of single process jobs" (NVIDIA/nccl-tests issue 333).
//!
//! The cost of one launch, [`HOST_LAUNCH_PER_GPU_US`], is read off a log other than those the
//! twin is compared with (tests/fixtures/nccl-real): in the same issue, nccl-tests with
//! symmetric memory on one node of 8 B200 reads about 22 µs for small all-reduces with one
//! process driving 4 GPUs (`-g 4`), where an NVIDIA engineer reports under 8 µs up to 1 KB on 4
//! Blackwell GPUs of one node run as recommended: the GPUs' own time is under 8 µs, so the
//! 22 µs is the host's 4 launches, 5.5 µs each. (The same issue's 2-GPU run, about 9 µs, is
//! 4.5 µs per launch.) This is not part of NCCL's own model (`src/graph/tuning.cc` has no host
//! term), and it is not a cost of the collective inside a training job launched one process per
//! GPU: it is charged only when asked for ([`crate::CollectiveSpec::gpus_per_thread`]), as the
//! doctor does when the real log's header says it ran that way.

use rocelab_model::SimTime;

/// The host's cost of enqueueing one call on one GPU from a thread that drives several, µs
/// (see the module doc for its source).
pub const HOST_LAUNCH_PER_GPU_US: f64 = 5.5;

/// The most GPUs one thread may drive here (nccl-tests takes any `-g`; a node holds far fewer).
pub const MAX_GPUS_PER_THREAD: u32 = 4096;

/// The least time a call takes when one thread launches it on `gpus` GPUs without CUDA graphs.
pub fn floor(gpus: u32) -> SimTime {
    SimTime::from_secs_f64(gpus as f64 * HOST_LAUNCH_PER_GPU_US * 1e-6)
}

/// nccl-tests' time for a call whose GPUs take `gpu_time`, launched by one thread on `gpus`
/// GPUs (`None`: a thread per GPU or CUDA graphs, no floor): back-to-back calls take the longer
/// of the GPUs' time and the host's launches.
pub fn call_time(gpu_time: SimTime, gpus: Option<u32>) -> SimTime {
    gpus.map_or(gpu_time, |g| gpu_time.max(floor(g)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_floor_binds_only_where_the_gpus_are_faster() {
        // 8 GPUs from one thread: 8 × 5.5 = 44 µs.
        assert_eq!(floor(8), SimTime::from_us(44));
        // A 25 µs call waits for the host; a 100 µs one does not.
        assert_eq!(call_time(SimTime::from_us(25), Some(8)), SimTime::from_us(44));
        assert_eq!(call_time(SimTime::from_us(100), Some(8)), SimTime::from_us(100));
        // A thread per GPU (or CUDA graphs): the GPUs' time alone.
        assert_eq!(call_time(SimTime::from_us(25), None), SimTime::from_us(25));
        // The source's own figure: 4 GPUs from one thread read 22 µs.
        assert_eq!(floor(4), SimTime::from_us(22));
    }
}
