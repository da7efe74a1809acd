//! The same fabric on both link layers: what the twin measures of RoCE and of InfiniBand on one
//! topology, for `rocelab plan --compare --fabric` (its RoCE and IB columns take these figures
//! instead of one preset efficiency for both).
//!
//! The fabric's file is run as written for its own link layer, and with the other link layer's
//! defaults for the other (a RoCE file's IB twin: `[infiniband]` defaults, static routing, no
//! congestion control; an IB file's RoCE twin: the file's classes with PFC, ECN and DCQCN as
//! the file or the defaults set them). Its traffic, faults, workloads and scenarios are left out.
//! On `ranks` hosts spread evenly over the fabric (every leaf takes part), each side runs a ring
//! all-reduce and an all-to-all of `bytes` per rank; its figure is the lower of the two bus
//! bandwidths over the host link's rate: the share of the line rate the network delivers to a
//! collective, headers, congestion control and path collisions included (NCCL's and the GPUs'
//! own overheads are not in it).

use crate::{run_collective, Collective, CollectiveSpec};
use rocelab_model::config::LinkLayer;
use rocelab_model::{Diagnostic, Model};
use rocelab_sim::SimOptions;
use serde::Serialize;

/// One link layer's measurement.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkLayerFigures {
    /// `roce` or `infiniband`.
    pub link_layer: &'static str,
    pub ranks: u32,
    pub bytes: u64,
    /// The slowest host link among the ranks, Gb/s.
    pub line_gbps: f64,
    pub all_reduce_busbw_gbytes_per_s: f64,
    pub alltoall_busbw_gbytes_per_s: f64,
    /// min(busbw) / line rate.
    pub efficiency: f64,
}

/// The model of `m`'s topology on `layer`: `m` itself when it already runs on it.
fn on_layer(m: &Model, layer: LinkLayer) -> Result<Model, Vec<Diagnostic>> {
    let mut c = m.config.clone();
    c.traffic.clear();
    c.fault.clear();
    c.workload.clear();
    c.scenario.clear();
    if c.fabric.link_layer != layer {
        c.fabric.link_layer = layer;
        c.infiniband = None;
    }
    Model::from_config(c, &format!("{} on {}", m.name, layer.name()))
}

/// Measures both link layers on `m`'s topology (RoCE first), on at most `max_ranks` hosts.
pub fn measure_link_layers(
    m: &Model,
    max_ranks: usize,
    bytes: u64,
    seed: u64,
) -> Result<[LinkLayerFigures; 2], Vec<Diagnostic>> {
    let hosts: Vec<_> = m.hosts().collect();
    if hosts.len() < 2 {
        return Err(vec![Diagnostic::new("topology", "a link-layer comparison needs two hosts", "add hosts")]);
    }
    let k = hosts.len().min(max_ranks.max(2));
    let ranks: Vec<_> = (0..k).map(|i| hosts[i * hosts.len() / k]).collect();
    let line_gbps = ranks.iter().map(|h| m.host_speed(*h).gbps()).fold(f64::INFINITY, f64::min);
    let mut out = Vec::new();
    for layer in [LinkLayer::Roce, LinkLayer::Infiniband] {
        let model = on_layer(m, layer)?;
        let opts = SimOptions { seed, ..SimOptions::default() };
        let mut busbw = [0.0; 2];
        for (i, op) in [Collective::AllReduce, Collective::AllToAll].into_iter().enumerate() {
            let spec = CollectiveSpec { ranks: Some(ranks.clone()), ..CollectiveSpec::new(op, bytes) };
            let r = run_collective(&model, &spec, opts.clone())?;
            if r.failed_chunks > 0 {
                // No figure to give: said, not passed on as an efficiency of 0.
                return Err(vec![Diagnostic::new(
                    "topology",
                    format!(
                        "the twin's {} on {} did not complete: {} chunks failed, no efficiency to measure",
                        r.op,
                        layer.name(),
                        r.failed_chunks
                    ),
                    "check that every host reaches every other (rocelab topo), or leave out --fabric",
                )]);
            }
            busbw[i] = r.busbw_gbytes_per_s;
        }
        out.push(LinkLayerFigures {
            link_layer: layer.name(),
            ranks: k as u32,
            bytes,
            line_gbps,
            all_reduce_busbw_gbytes_per_s: busbw[0],
            alltoall_busbw_gbytes_per_s: busbw[1],
            efficiency: busbw[0].min(busbw[1]) / (line_gbps / 8.0),
        });
    }
    let ib = out.pop().expect("two");
    Ok([out.pop().expect("two"), ib])
}
