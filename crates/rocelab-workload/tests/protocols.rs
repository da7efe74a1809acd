//! NCCL's protocols and its tuning model on the twin: the pick, the small-size latency it
//! predicts, the lines on the wire, slices along the ring.

use rocelab_model::Model;
use rocelab_plan::tuning::NcclSystem;
use rocelab_sim::SimOptions;
use rocelab_workload::{nccl_system, run_collective, Algo, Collective, CollectiveSpec, Proto};
use std::path::PathBuf;

fn example(name: &str) -> Model {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name);
    rocelab_model::load_file(&p).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn rail_128gpu_is_what_the_hand_computed_model_was_given() {
    // 16 H100 nodes, 8 × 400G NICs each: the system the tuning tests computed by hand.
    let m = example("rail-128gpu.toml");
    let p = rocelab_workload::placement::placement(&m).unwrap();
    let sys: NcclSystem = nccl_system(&m, &p);
    assert_eq!((sys.ranks, sys.nodes, sys.channels, sys.bw_inter_gbytes), (128, 16, 8, 48.0));
    // NCCL's picks there, the twin's as resolved.
    for (bytes, algo, proto) in [
        (8u64, Algo::Tree, Proto::Ll),
        (64 << 10, Algo::Tree, Proto::Ll),
        (8 << 20, Algo::Tree, Proto::Ll128),
        (1 << 30, Algo::Ring, Proto::Simple),
    ] {
        let r = CollectiveSpec::nccl(Collective::AllReduce, bytes).resolve(&m).unwrap();
        assert_eq!((r.algo, r.proto), (algo, proto), "{bytes} B");
        // NCCL's tree runs a channel of each of its two trees per NIC; the ring one per NIC.
        assert_eq!(r.channels, if algo == Algo::Tree { 16 } else { 8 });
    }
}

#[test]
fn an_8_byte_all_reduce_on_16_nodes_takes_about_what_nccls_model_says() {
    // NCCL's model: tree/LL, 6.8 + 2·(7 · 0.6 + ⌊log₂ 16⌋ · 5.0) = 55.2 µs. The twin runs the
    // same tree: its base latency, 7 NVLink hops of 0.6 µs up the node's chain and down again,
    // and 4 network hops each way, each the fabric's own latency plus the proxy's 1 µs.
    let m = example("rail-128gpu.toml");
    let r = run_collective(&m, &CollectiveSpec::nccl(Collective::AllReduce, 8), SimOptions::default()).unwrap();
    assert_eq!((r.algo, r.proto, r.ranks), ("tree", "LL", 128));
    let model_us = 55.2;
    println!("8 B all-reduce on 128 GPUs: twin {:.1} µs, NCCL's model {model_us} µs", r.time_us);
    assert!(r.time_us >= model_us / 2.0 && r.time_us <= model_us * 2.0, "{} µs", r.time_us);
    // Simple's ring, as the twin ran it before protocols, takes over ten times longer.
    let ring = CollectiveSpec { channels: None, ..CollectiveSpec::new(Collective::AllReduce, 8) };
    let ring = run_collective(&m, &ring, SimOptions::default()).unwrap();
    assert!(ring.time_us > 10.0 * r.time_us, "ring/Simple {} µs", ring.time_us);
}

#[test]
fn ll_puts_twice_the_data_on_the_wire_and_ll128_sixteen_fifteenths() {
    let m = example("rail-16gpu-workloads.toml");
    let run = |proto| {
        let spec = CollectiveSpec {
            proto: Some(proto),
            channels: Some(8),
            ..CollectiveSpec::new(Collective::AllReduce, 16 << 20)
        };
        run_collective(&m, &spec, SimOptions::default()).unwrap()
    };
    let (simple, ll, ll128) = (run(Proto::Simple), run(Proto::Ll), run(Proto::Ll128));
    let pk = |r: &rocelab_workload::CollectiveResult| r.data_packets as f64;
    // 16 MiB over 16 ranks and 8 channels: a 128 KiB step per channel, one message each way
    // (below every protocol's step). On the wire: 128 KiB, twice that in LL's 8-byte lines,
    // ⌈131,072 / 120⌉ × 128 = 139,904 B in LL128's; packets of the MTU's payload each.
    let mtu = m.nics[0].mtu as u64;
    let per_msg = |b: u64| b.div_ceil(mtu) as f64;
    let step = 128u64 << 10;
    assert_eq!(pk(&ll) / pk(&simple), per_msg(2 * step) / per_msg(step));
    assert_eq!(pk(&ll128) / pk(&simple), per_msg(step.div_ceil(120) * 128) / per_msg(step));
    assert_eq!((ll.proto, ll128.proto), ("LL", "LL128"));
    // LL's doubled bytes cost time at this size.
    assert!(ll.time_us > simple.time_us, "LL {} µs, Simple {} µs", ll.time_us, simple.time_us);
}

#[test]
fn the_model_is_overridden_as_nccl_algo_and_nccl_proto_do() {
    let m = example("rail-128gpu.toml");
    let spec = CollectiveSpec { algo: Some(Algo::Ring), ..CollectiveSpec::nccl(Collective::AllReduce, 8) };
    let r = spec.resolve(&m).unwrap();
    assert_eq!((r.algo, r.proto), (Algo::Ring, Proto::Ll));
    let spec = CollectiveSpec { proto: Some(Proto::Simple), ..CollectiveSpec::nccl(Collective::AllReduce, 8) };
    assert_eq!(spec.resolve(&m).unwrap().algo, Algo::Tree);
    // Algorithms NCCL has that the twin does not run are refused, naming what it runs.
    let spec = CollectiveSpec { algo: Some(Algo::Pat), ..CollectiveSpec::nccl(Collective::AllGather, 8) };
    let e = spec.resolve(&m).unwrap_err();
    assert!(e[0].message.contains("NCCL_ALGO=pat") && e[0].hint.contains("ring"), "{e:?}");
}

/// rail-16gpu-workloads with `[gpu_node.pcie]` lines.
fn with_pcie(lines: &str) -> Model {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rail-16gpu-workloads.toml");
    let text = std::fs::read_to_string(&p).unwrap() + "\n[gpu_node.pcie]\n" + lines + "\n";
    rocelab_model::load_str("pcie.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn without_gpudirect_every_message_pays_the_bounce_through_host_memory() {
    // send/recv of 64 MiB on one channel over 2 nodes: ranks 7 → 8 and 15 → 0 cross the
    // fabric, the others stay on NVLink. Without GPUDirect RDMA the crossing messages are
    // staged in host memory on both ends: each side copies the 64 MiB over the GPU's own
    // PCIe Gen 5 ×16 link (16 × 32 GT/s × 128/130 / 8 × 256/280 = 57.6 GB/s).
    let s = 64u64 << 20;
    let run = |m: &Model| {
        let spec = CollectiveSpec { channels: Some(1), ..CollectiveSpec::nccl(Collective::SendRecv, s) };
        run_collective(m, &spec, SimOptions::default()).unwrap()
    };
    let gdr = run(&with_pcie("gen = 5"));
    let bounce = run(&with_pcie("gen = 5\ngpudirect = false"));
    let pcie_bytes_per_s = 16.0 * 32e9 * 128.0 / 130.0 / 8.0 * 256.0 / 280.0;
    let bounce_us = 2.0 * s as f64 / pcie_bytes_per_s * 1e6;
    println!(
        "64 MiB send/recv: GDR {:.1} µs, bounce {:.1} µs, the bounce's cost {bounce_us:.1} µs",
        gdr.time_us, bounce.time_us
    );
    assert!(((bounce.time_us - gdr.time_us) / bounce_us - 1.0).abs() < 0.001, "{} vs {}", bounce.time_us, gdr.time_us);
    // A GPU across the sockets from its NIC (SYS): NCCL does not use GPUDirect there either,
    // and each DMA crosses the socket link; LL128 is off (beyond PXB).
    let sys = with_pcie("gpu_nic = \"SYS\"");
    let far = run(&sys);
    assert!(far.time_us > bounce.time_us, "SYS {} µs vs bounce {} µs", far.time_us, bounce.time_us);
    let r = CollectiveSpec::nccl(Collective::AllReduce, 8 << 20).resolve(&sys).unwrap();
    assert_ne!(r.proto, Proto::Ll128);
    assert_eq!(
        CollectiveSpec::nccl(Collective::AllReduce, 8 << 20).resolve(&with_pcie("")).unwrap().proto,
        Proto::Ll128
    );
}

#[test]
fn the_packet_engine_sends_no_faster_than_the_nics_pcie_link() {
    // The same 64 MiB send/recv with the NIC on PCIe Gen 5 ×4: 4 × 32 GT/s × 128/130 / 8 ×
    // 256/280 = 14.4 GB/s (115.2 Gb/s), below its 400G port. Frames of 4,096 B of payload
    // carry 82 B of headers (Ethernet, IPv4, UDP, BTH, ICRC, FCS, preamble and gap), so the
    // crossing message takes at least S × 4178/4096 / 14.4 GB/s; at the port's speed (the
    // ×16 link carries 57.6 GB/s, more than the port) S × 4178/4096 / 50 GB/s.
    let s = 64u64 << 20;
    let run = |m: &Model| {
        let spec = CollectiveSpec { channels: Some(1), ..CollectiveSpec::nccl(Collective::SendRecv, s) };
        run_collective(m, &spec, SimOptions::default()).unwrap()
    };
    let x16 = run(&with_pcie("gen = 5"));
    let x4 = run(&with_pcie("gen = 5\nnic_lanes = 4"));
    let wire = s as f64 * 4178.0 / 4096.0;
    let (at_port_us, at_pcie_us) = (wire / 50e9 * 1e6, wire / (4.0 * 32e9 * 128.0 / 130.0 / 8.0 * 256.0 / 280.0) * 1e6);
    println!(
        "64 MiB send/recv: x16 {:.1} µs (port {at_port_us:.1}), x4 {:.1} µs (PCIe {at_pcie_us:.1})",
        x16.time_us, x4.time_us
    );
    assert!(x16.time_us >= at_port_us && x16.time_us < at_port_us * 1.02, "{} µs", x16.time_us);
    assert!(x4.time_us >= at_pcie_us && x4.time_us < at_pcie_us * 1.02, "{} µs", x4.time_us);
    // The busbw bound the scenario and `plan` use is the same cap.
    let m = with_pcie("gen = 5\nnic_lanes = 4");
    let nic = m.hosts().next().unwrap();
    let x4_gbps = 4.0 * 32.0 * 128.0 / 130.0 * 256.0 / 280.0;
    assert!((rocelab_workload::nic_line_gbps(&m, nic, true) - x4_gbps).abs() < 1e-6);
}

#[test]
fn with_nccls_costs_a_channel_streams_no_faster_than_nccls_model_says() {
    // rail-16gpu-workloads (2 nodes × 8 H100, 8 × 400G) with `[nccl] net_hop_latency =
    // "tuning"`. NCCL's model for 16 MiB picks tree/LL128 there: latency 14 + 2 × (7 × 1.25 +
    // 8.5) = 48.5 µs and algorithm bandwidth min(8 × 48 × 0.92, 8 × 41.4) × 120/128 capped at
    // 8 × 36.7, halved: 146.8 GB/s, so S / 146.8 GB/s = 114.3 µs of streaming at the leaves. The
    // twin charges both and its links' own time on top: at least their sum, and the NIC-bound
    // run without the cap is faster.
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rail-16gpu-workloads.toml");
    let text = std::fs::read_to_string(&p).unwrap();
    let tuned =
        rocelab_model::load_str("t.toml", &(text.clone() + "\n[nccl]\nnet_hop_latency = \"tuning\"\n")).unwrap();
    let plain = rocelab_model::load_str("p.toml", &text).unwrap();
    let s = 16u64 << 20;
    let spec = CollectiveSpec::nccl(Collective::AllReduce, s);
    let r = spec.resolve(&tuned).unwrap();
    assert_eq!((r.algo, r.proto), (Algo::Tree, Proto::Ll128));
    let sys = nccl_system(&tuned, &rocelab_workload::placement::placement(&tuned).unwrap());
    let (bw, lat) = sys.table(Collective::AllReduce, Algo::Tree, Proto::Ll128).unwrap();
    assert!((bw - 146.8).abs() < 1e-9 && (lat - 48.5).abs() < 1e-9, "{bw} GB/s, {lat} µs");
    let floor = lat + s as f64 / (1000.0 * bw);
    let t = run_collective(&tuned, &spec, SimOptions::default()).unwrap();
    let p = run_collective(&plain, &spec, SimOptions::default()).unwrap();
    println!(
        "16 MiB tree/LL128: twin {:.1} µs with NCCL's costs (floor {floor:.1}), {:.1} µs without",
        t.time_us, p.time_us
    );
    assert!(t.time_us >= floor && t.time_us < 1.6 * floor, "{} µs against {floor}", t.time_us);
    assert!(p.time_us < floor, "{} µs", p.time_us);
}

/// 2 GPU servers, each one NIC with two 200G ports to a switch (2 × 200G).
fn dual_port() -> Model {
    let mut t = String::from("[fabric]\nname = \"dual-port\"\n[topology.explicit]\n");
    t += "[[topology.explicit.node]]\nname = \"sw\"\nkind = \"switch\"\n";
    for h in 0..2 {
        t += &format!(
            "[[topology.explicit.node]]\nname = \"gpu{h}-nic0\"\nkind = \"host\"\ngpu_node = \"gpu{h}\"\nrail = 0\n"
        );
    }
    for h in 0..2 {
        for _ in 0..2 {
            t += &format!(
                "[[topology.explicit.link]]\na = \"gpu{h}-nic0\"\nb = \"sw\"\nspeed_gbps = 200\nlength_m = 3\n"
            );
        }
    }
    rocelab_model::load_str("dual-port.toml", &t).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_dual_port_nic_counts_as_two_ports_for_the_planner_and_nccls_model() {
    let m = dual_port();
    let f = rocelab_workload::step::fabric_facts(&m);
    // Before ports were counted: one 200G NIC per node.
    assert_eq!((f.nics_per_node, f.nic_rate_gbps), (Some(2), Some(200.0)));
    let p = rocelab_workload::placement::placement(&m).unwrap();
    let sys = nccl_system(&m, &p);
    // Two net devices of 25 GB/s: NCCL's search gives each a channel at 24 GB/s.
    assert_eq!((sys.channels, sys.bw_inter_gbytes), (2, 24.0));
    // `plan --fabric` on it: two 200G NICs per server, 400 Gb/s a node.
    let plan = "[plan.model]\npreset = \"llama3-8b\"\n[plan.parallel]\ntp = 8\ndp = 2\n";
    let (s, _) = rocelab_workload::step::plan_on_fabric("plan.toml", plan, &m).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((s.cluster.nics_per_node, s.cluster.network.rate_gbps), (2, 200.0));
}

#[test]
fn striping_over_16_qps_on_an_idle_rail_keeps_the_unsplit_busbw() {
    // NCCL_IB_SPLIT_DATA_ON_QPS=1 with 16 QPs per connection: every 512 KiB step striped over
    // 16 QPs of 32 KiB. On idle rails striping costs almost nothing physically; it read 71 %
    // of the unsplit busbw while a connection's queued steps shared the NIC (see ring.rs).
    let m = example("rail-16gpu-workloads.toml");
    let run = |q: u32, split: bool| {
        let spec = CollectiveSpec {
            qps_per_connection: q,
            split_data_on_qps: split,
            channels: None,
            ..CollectiveSpec::new(Collective::AllReduce, 64 << 20)
        };
        run_collective(&m, &spec, SimOptions::default()).unwrap().busbw_gbytes_per_s
    };
    let (whole, striped) = (run(1, false), run(16, true));
    println!("64 MiB all-reduce on 16 GPUs: {whole:.1} GB/s unsplit, {striped:.1} GB/s over 16 QPs");
    assert!(striped >= 0.9 * whole, "{striped} against {whole} GB/s");
}

#[test]
fn a_dual_port_nics_busbw_stays_within_the_bound_of_both_its_ports() {
    // The collective scenario reported 150 % of its bound on a 2 × 200G NIC: the bound counted
    // the NIC once at one port's 200 Gb/s while NCCL ran a channel per port and the two ports
    // carried them. The bound is every port of the NICs the channels cross: 400 Gb/s here.
    let m = dual_port();
    let spec = CollectiveSpec::nccl(Collective::AllReduce, 64 << 20);
    let r = spec.resolve(&m).unwrap();
    // NCCL sees two net devices per node: a ring channel on each.
    assert_eq!(r.channels, 2);
    let bound = rocelab_workload::busbw_bound_gbps(&m, &r.placement, r.channels);
    assert_eq!(bound, 400.0);
    // Eight QPs per connection so that the switch's hash spreads each channel over both of the
    // receiver's ports (with one QP each, the two channels may hash onto one downlink).
    let spread = CollectiveSpec { qps_per_connection: 8, ..spec };
    let busbw = run_collective(&m, &spread, SimOptions::default()).unwrap().busbw_gbytes_per_s;
    let share = busbw * 8.0 / bound;
    println!("64 MiB all-reduce over 2 × (2 × 200G): {busbw:.2} GB/s, {:.1} % of the bound", share * 100.0);
    // Above one port's 200 Gb/s (so both ports carry traffic), never above both.
    assert!(busbw * 8.0 > 200.0 && share <= 1.0, "{busbw} GB/s against {bound} Gb/s");
}

#[test]
fn one_thread_driving_8_gpus_puts_a_host_floor_under_each_call() {
    // nccl-tests' `-g 8` without CUDA graphs: the thread launches each call on its 8 GPUs, 5.5 µs
    // each (`rocelab_workload::launch`), so back-to-back calls take at least 44 µs.
    let m = example("rail-128gpu.toml");
    let run = |bytes: u64, gpus: Option<u32>| {
        let spec = CollectiveSpec {
            gpus_per_thread: gpus,
            gpu_nodes: Some(2),
            ..CollectiveSpec::nccl(Collective::AllReduce, bytes)
        };
        run_collective(&m, &spec, SimOptions::default()).unwrap()
    };
    // 8 B on 2 nodes: the GPUs take about NCCL's model's 25 µs; the host's 8 launches, 44 µs.
    let (gpu, host) = (run(8, None), run(8, Some(8)));
    assert!(gpu.time_us > 15.0 && gpu.time_us < 44.0, "{} µs", gpu.time_us);
    assert!((host.time_us - 44.0).abs() < 1e-6, "{} µs", host.time_us);
    assert_eq!(host.host_launch_floor_us, Some(44.0));
    assert_eq!(gpu.host_launch_floor_us, None);
    // 64 MiB takes far longer than 44 µs on the GPUs: the floor changes nothing there.
    let (big, big_host) = (run(64 << 20, None), run(64 << 20, Some(8)));
    assert!(big.time_us > 200.0);
    assert_eq!(big.time_us, big_host.time_us);
    // One GPU per thread still launches once per call.
    assert!((run(8, Some(1)).time_us - gpu.time_us.max(5.5)).abs() < 1e-6);
    // A count no thread has is refused, naming the value.
    let bad = CollectiveSpec { gpus_per_thread: Some(0), ..CollectiveSpec::nccl(Collective::AllReduce, 8) };
    let e = bad.resolve(&m).unwrap_err();
    assert!(e[0].message.contains("0 GPUs per host thread"), "{e:?}");
}
