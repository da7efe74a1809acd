//! The usage → acceptable network table: its ordering comes from computed numbers, and moving a
//! link rate moves the verdict.

use rocelab_plan::compare::{parse_link, CompareSpec, CompareTable};
use rocelab_plan::render::{render_compare, Format};
use rocelab_plan::{compare, PlanSpec, Verdict};

fn table() -> CompareTable {
    compare(&CompareSpec::new(PlanSpec::default())).unwrap()
}

fn row<'a>(t: &'a CompareTable, usage: &str) -> &'a rocelab_plan::compare::Row {
    t.rows.iter().find(|r| r.usage == usage).unwrap()
}

/// Column index of the first acceptable link (usize::MAX: none).
fn need(t: &CompareTable, usage: &str) -> usize {
    let r = row(t, usage);
    r.cells.iter().position(|c| c.verdict.is_acceptable()).unwrap_or(usize::MAX)
}

#[test]
fn the_qualitative_ordering_emerges_from_the_numbers() {
    let t = table();
    let serving = need(&t, "replicated serving");
    let rag = need(&t, "RAG");
    let storage = need(&t, "shared storage");
    let pp = need(&t, "multi-node pipeline parallel");
    let tp = need(&t, "multi-node tensor parallel");
    // Ethernet with TCP carries replicated serving, RAG and storage.
    for (u, i) in [("serving", serving), ("RAG", rag), ("storage", storage)] {
        assert!(t.links[i].contains("tcp"), "{u} needs {}", t.links[i]);
    }
    // Pipeline parallel across nodes needs more than TCP: an RDMA fabric.
    assert!(pp > serving.max(rag).max(storage));
    assert!(t.links[pp].starts_with("roce") || t.links[pp].starts_with("ib"), "PP needs {}", t.links[pp]);
    // Tensor parallel across nodes needs more still.
    assert!(tp > pp, "TP {tp} vs PP {pp}");
    // Thunderbolt has no switches: fine for the homelab, unbuildable for every cluster usage.
    let tb = t.links.iter().position(|l| l == "tb5").unwrap();
    assert_eq!(need(&t, "homelab"), tb);
    for r in t.rows.iter().filter(|r| r.usage != "homelab") {
        assert_eq!(r.cells[tb].verdict, Verdict::Unbuildable, "{}", r.usage);
    }
}

#[test]
fn every_cell_shows_its_deciding_figure() {
    let t = table();
    for r in &t.rows {
        assert_eq!(r.cells.len(), t.links.len());
        for c in &r.cells {
            assert!(
                c.figure.contains('%') || c.figure.contains("hosts") || c.figure.contains("GB"),
                "{}: {}",
                r.usage,
                c.figure
            );
        }
    }
    let text = render_compare(&t, Format::Table);
    assert!(text.contains("acceptable network"));
    let md = render_compare(&t, Format::Markdown);
    assert!(md.contains("| usage |"));
}

#[test]
fn raising_a_link_rate_moves_the_pipeline_verdict() {
    let mut spec = CompareSpec::new(PlanSpec::default());
    spec.links = vec![parse_link("eth100-tcp").unwrap(), parse_link("eth100-tcp@800").unwrap()];
    let t = compare(&spec).unwrap();
    let r = row(&t, "multi-node pipeline parallel");
    assert!(r.cells[1].verdict < r.cells[0].verdict, "{:?}", r.cells);
    assert!(r.cells[1].share < r.cells[0].share / 4.0);
    assert_eq!(r.acceptable.as_deref(), Some("eth100-tcp@800G"));
}

#[test]
fn compare_json_is_deterministic() {
    let a = render_compare(&table(), Format::Json);
    let b = render_compare(&table(), Format::Json);
    assert_eq!(a, b);
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    assert_eq!(v["rows"].as_array().unwrap().len(), 6);
}

#[test]
fn bad_columns_are_rejected() {
    assert!(parse_link("roce999").unwrap_err().hint.contains("roce400"));
    assert!(parse_link("nvlink4").is_err());
    assert!(parse_link("roce400@fast").is_err());
}

#[test]
fn a_model_too_big_for_a_node_cannot_be_served_from_one() {
    let mut base = PlanSpec::default();
    base.model.preset = Some("llama3-405b".into());
    let mut spec = CompareSpec::new(base);
    spec.links = vec![parse_link("roce400").unwrap()];
    let t = compare(&spec).unwrap();
    // 405B in BF16 is 810 GB of weights: more than 8 × 80 GB.
    assert_eq!(row(&t, "replicated serving").cells[0].verdict, Verdict::DoesNotFit);
    assert!(row(&t, "replicated serving").acceptable.is_none());
}

#[test]
fn compare_settings_come_from_the_plan_file() {
    let spec = rocelab_plan::spec::parse_plan_file(
        "c.toml",
        "[plan.compare]\nlinks = [\"eth25-tcp\", \"roce400@800\"]\nnodes = 4\ncheckpoint_interval_seconds = 600\n",
    )
    .unwrap();
    let cs = CompareSpec::from_plan(spec).unwrap();
    assert_eq!(cs.nodes, 4);
    assert_eq!(cs.checkpoint_interval_seconds, 600.0);
    let t = compare(&cs).unwrap();
    assert_eq!(t.links, vec!["eth25-tcp".to_string(), "roce400@800G".to_string()]);
    let bad = rocelab_plan::spec::parse_plan_file("c.toml", "[plan.compare]\nlinks = [\"warp9\"]\n").unwrap();
    assert_eq!(CompareSpec::from_plan(bad).unwrap_err().key, "compare.links");
}

#[test]
fn twin_measured_efficiencies_replace_the_roce_and_ib_presets_and_move_their_cells() {
    use rocelab_plan::compare::TwinLinks;
    let mut spec = CompareSpec::new(PlanSpec::default());
    spec.links = ["eth100-tcp", "roce400", "ib-ndr"].iter().map(|l| parse_link(l).unwrap()).collect();
    let preset = compare(&spec).unwrap();
    // Presets: one efficiency (0.94) for both RDMA columns.
    assert_eq!(parse_link("roce400").unwrap().efficiency, parse_link("ib-ndr").unwrap().efficiency);
    let twin =
        TwinLinks { roce_efficiency: 0.60, ib_efficiency: 0.92, note: "measured on f.toml".into(), serving: None };
    // Only RoCE and IB columns change, rate kept.
    let tcp = parse_link("eth100-tcp").unwrap();
    assert_eq!(twin.apply(&tcp), tcp);
    let r = twin.apply(&parse_link("roce400@800").unwrap());
    assert_eq!((r.efficiency, r.rate_gbps), (0.60, 800.0));
    assert_eq!(twin.apply(&parse_link("ib-ndr").unwrap()).efficiency, 0.92);
    // Out of range: the preset stays.
    let bad = TwinLinks { roce_efficiency: f64::NAN, ib_efficiency: 1.5, note: String::new(), serving: None };
    assert_eq!(bad.apply(&parse_link("roce400").unwrap()).efficiency, 0.94);
    spec.twin = Some(twin);
    let measured = compare(&spec).unwrap();
    assert!(measured.note.ends_with("measured on f.toml"), "{}", measured.note);
    let share = |t: &CompareTable, link: usize| row(t, "multi-node pipeline parallel").cells[link].share;
    // The same 400G pipe: equal shares under the presets; with the twin's figures the RoCE
    // column waits longer on the network than the IB one, and TCP is untouched.
    assert!((share(&preset, 1) - share(&preset, 2)).abs() < 0.02, "{} {}", share(&preset, 1), share(&preset, 2));
    assert!(share(&measured, 1) > share(&preset, 1) && share(&measured, 1) > share(&measured, 2));
    assert_eq!(share(&measured, 0), share(&preset, 0));
}

#[test]
fn the_serving_twins_figure_replaces_the_homelab_cell_of_its_own_column_only() {
    use rocelab_plan::compare::{homelab_scenario, TwinLinks, TwinServing};
    let mut spec = CompareSpec::new(PlanSpec::default());
    spec.links = ["tb4", "tb5", "roce400"].iter().map(|l| parse_link(l).unwrap()).collect();
    let preset = compare(&spec).unwrap();
    // The plan the CLI serves on the twin is the row's own: Llama 3 70B in int4, PP2 of 4090s.
    let sc = homelab_scenario(&spec, &parse_link("tb5").unwrap()).unwrap();
    assert_eq!((sc.parallel.tp, sc.parallel.pp, sc.cluster.gpu.name.as_str()), (1, 2, "rtx4090"));
    let serving = TwinServing { link: "tb5".into(), network_share: 0.2, ttft_ms: 1.0, tpot_ms: 1.0 };
    spec.twin =
        Some(TwinLinks { roce_efficiency: 0.94, ib_efficiency: 0.94, note: "n".into(), serving: Some(serving) });
    let t = compare(&spec).unwrap();
    let (before, after) = (&row(&preset, "homelab").cells, &row(&t, "homelab").cells);
    assert_eq!(after[1].share, 0.2);
    assert_eq!(after[1].verdict, rocelab_plan::Verdict::Marginal, "{:?}", after[1]);
    assert!(after[1].figure.starts_with("(twin 20.0%"), "{}", after[1].figure);
    assert_eq!((&after[0], &after[2]), (&before[0], &before[2]));
}
