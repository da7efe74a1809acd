//! Every rule: a fabric that triggers it and one that does not. `BASE` is clean under every
//! rule (`base_is_clean`); each test changes one thing.

use rocelab_lint::{lint, Finding, Options};

const BASE: &str = r#"
[topology.leaf_spine]
leaves = 2
spines = 2
hosts_per_leaf = 2
host_link = { speed_gbps = 100, length_m = 3 }
fabric_link = { speed_gbps = 100, length_m = 30 }

[qos]
trust = "dscp"
cnp_class = "cnp"

[[qos.class]]
name = "roce"
dscp = [26]
priority = 3
lossless = true
scheduler = "dwrr"
weight = 50
carries = ["rdma"]
ecn = { kmin_bytes = 150000, kmax_bytes = 1500000, pmax = 0.1 }

[[qos.class]]
name = "cnp"
dscp = [48]
priority = 6
scheduler = "strict"
carries = ["cnp"]

[[qos.class]]
name = "default"
dscp = [0, 8, 10]
priority = 0
scheduler = "dwrr"
weight = 50
carries = ["tcp", "storage", "management"]

[nic]
mtu = 4096
firmware = "28.39.2048"

[nic.qos]
trust = "dscp"
"#;

fn run(text: &str) -> Vec<Finding> {
    let model = rocelab_model::load_str("t.toml", text).unwrap_or_else(|e| panic!("fixture must load:\n{e}"));
    lint(&model, "t.toml", text, &Options::default()).findings
}

/// Asserts `code` is found and returns its first finding.
#[track_caller]
fn fires(text: &str, code: &str) -> Finding {
    let fs = run(text);
    fs.iter().find(|f| f.code == code).cloned().unwrap_or_else(|| {
        panic!("{code} not found; got {:?}", fs.iter().map(|f| (f.code, &f.message)).collect::<Vec<_>>())
    })
}

#[track_caller]
fn quiet(text: &str, code: &str) {
    let fs = run(text);
    assert!(
        !fs.iter().any(|f| f.code == code),
        "{code} fired: {:?}",
        fs.iter().filter(|f| f.code == code).map(|f| &f.message).collect::<Vec<_>>()
    );
}

fn edit(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "fixture lacks {from:?}");
    BASE.replacen(from, to, 1)
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).expect("needle") + 1
}

#[test]
fn base_is_clean() {
    assert_eq!(run(BASE), vec![]);
}

#[test]
fn pfc001_more_than_two_priorities() {
    let t = format!("{BASE}\n[qos.pfc]\npriorities = [3, 4, 5]\n");
    let t = t.replace("[nic.qos]\ntrust = \"dscp\"", "[nic.qos]\ntrust = \"dscp\"\npfc_priorities = [3, 4, 5]");
    let f = fires(&t, "PFC001");
    assert!(f.message.contains("3 priorities"), "{}", f.message);
    assert_eq!(f.line, t.lines().position(|l| l.starts_with("priorities = [3, 4, 5]")).unwrap() + 1);
    let two = format!("{BASE}\n[qos.pfc]\npriorities = [3, 4]\n")
        .replace("[nic.qos]\ntrust = \"dscp\"", "[nic.qos]\ntrust = \"dscp\"\npfc_priorities = [3, 4]");
    quiet(&two, "PFC001");
}

#[test]
fn pfc002_pfc_on_default_class() {
    let t = format!("{BASE}\n[qos.pfc]\npriorities = [0, 3]\n");
    let f = fires(&t, "PFC002");
    assert!(f.message.contains("priority 0") && f.message.contains("`default`"), "{}", f.message);
    quiet(&format!("{BASE}\n[qos.pfc]\npriorities = [3]\n"), "PFC002");
    // A lossless storage class that is not the default class is allowed.
    let storage = BASE.replace(
        "[[qos.class]]\nname = \"default\"",
        "[[qos.class]]\nname = \"storage\"\ndscp = [24]\npriority = 4\nlossless = true\ncarries = [\"rdma\"]\n\n[[qos.class]]\nname = \"default\"",
    );
    quiet(&storage, "PFC002");
}

#[test]
fn qos001_roce_not_lossless() {
    let t = edit("lossless = true\n", "lossless = false\n");
    let f = fires(&t, "QOS001");
    assert_eq!(f.line, line_of(&t, "lossless = false"));
    quiet(BASE, "QOS001");
}

#[test]
fn qos002_lossless_without_ecn() {
    let t = edit("ecn = { kmin_bytes = 150000, kmax_bytes = 1500000, pmax = 0.1 }\n", "");
    fires(&t, "QOS002");
    quiet(BASE, "QOS002");
}

#[test]
fn cnp001_no_dedicated_cnp_class() {
    let t = edit("cnp_class = \"cnp\"", "cnp_class = \"roce\"");
    let f = fires(&t, "CNP001");
    assert!(f.message.contains("RoCE data class"), "{}", f.message);
    assert_eq!(f.line, line_of(&t, "cnp_class"));
    fires(&edit("cnp_class = \"cnp\"", "cnp_class = \"default\""), "CNP001");
    quiet(BASE, "CNP001");
}

#[test]
fn cnp002_cnp_not_strict() {
    let t = edit("scheduler = \"strict\"", "scheduler = \"dwrr\"\nweight = 10");
    fires(&t, "CNP002");
    quiet(BASE, "CNP002");
}

#[test]
fn cnp003_cnp_shares_a_queue() {
    // Set up as the data class it shares with (a queue has one scheduler, weight and ECN
    // profile, or the file does not load): CNPs queue behind that class's data.
    let t = edit("priority = 6\nscheduler = \"strict\"", "priority = 6\nqueue = 3\nscheduler = \"dwrr\"\nweight = 50")
        .replace(
            "carries = [\"cnp\"]",
            "carries = [\"cnp\"]\necn = { kmin_bytes = 150000, kmax_bytes = 1500000, pmax = 0.1 }",
        );
    let f = fires(&t, "CNP003");
    assert!(f.message.contains("queue 3") && f.message.contains("`roce`"), "{}", f.message);
    quiet(&edit("priority = 6\n", "priority = 6\nqueue = 6\n"), "CNP003");
    // Differently set up, the same sharing is refused at load, naming both classes.
    let clash = edit("priority = 6\n", "priority = 6\nqueue = 3\n");
    let e = rocelab_model::load_str("t.toml", &clash).unwrap_err().to_string();
    assert!(e.contains("classes `roce` and `cnp` share egress queue 3"), "{e}");
}

#[test]
fn iso001_rdma_with_tcp() {
    let t = edit("carries = [\"rdma\"]", "carries = [\"rdma\", \"tcp\"]");
    fires(&t, "ISO001");
    let shared_queue = edit(
        "priority = 0\n",
        "priority = 0\nqueue = 3\necn = { kmin_bytes = 150000, kmax_bytes = 1500000, pmax = 0.1 }\n",
    );
    let f = fires(&shared_queue, "ISO001");
    assert!(f.message.contains("shares egress queue 3"), "{}", f.message);
    quiet(BASE, "ISO001");
}

#[test]
fn iso002_general_traffic_reaches_the_rdma_class_by_its_marking() {
    // DSCP 0 in the RDMA class: every unmarked TCP packet rides it, though `carries` says rdma.
    let t = edit("dscp = [26]", "dscp = [0, 26]").replace("dscp = [0, 8, 10]", "dscp = [8, 10]");
    let f = fires(&t, "ISO002");
    assert_eq!(f.path, "qos.class[0].dscp[0]");
    assert!(f.message.contains("DSCP 0") && f.message.contains("`roce`"), "{}", f.message);
    quiet(&t, "ISO001");
    // No general class at all: RDMA on priority 0 is the default class, where the 59 DSCPs no
    // class lists (all but 26, 48 and the 0, 8, 10 of a class on priority 2) land.
    let t = edit(
        "priority = 3
",
        "priority = 0
",
    )
    .replace(
        "priority = 0
scheduler = \"dwrr\"
weight = 50
carries = [\"tcp\"",
        "priority = 2
scheduler = \"dwrr\"
weight = 50
carries = [\"tcp\"",
    );
    let f = fires(&t, "ISO002");
    assert_eq!(f.path, "qos.class[0].priority");
    assert!(f.message.contains("the 59 DSCP values no class lists land (1, 2, 3, 4, 5, 6, ...)"), "{}", f.message);
    // Nobody on priority 0: the first class (RDMA) is the default.
    let t = BASE.replace("priority = 0\n", "priority = 1\n");
    let f = fires(&t, "ISO002");
    assert!(f.message.contains("no class is on priority 0"), "{}", f.message);
    // Every DSCP listed somewhere: nothing lands by default.
    let all: Vec<String> = (0..64).filter(|d| *d != 26 && *d != 48).map(|d| d.to_string()).collect();
    quiet(&t.replace("dscp = [0, 8, 10]", &format!("dscp = [{}]", all.join(", "))), "ISO002");
    // PCP trust: untagged frames are priority 0.
    let pcp = edit("priority = 3\n", "priority = 0\n")
        .replace("trust = \"dscp\"", "trust = \"pcp\"")
        .replace("dscp = [0, 8, 10]\npriority = 0", "dscp = [0, 8, 10]\npriority = 2");
    let f = fires(&pcp, "ISO002");
    assert!(f.message.contains("untagged"), "{}", f.message);
    quiet(&BASE.replace("trust = \"dscp\"", "trust = \"pcp\""), "ISO002");
    quiet(BASE, "ISO002");
}

#[test]
fn host001_trust_mismatch() {
    let t = edit("[nic.qos]\ntrust = \"dscp\"", "[nic.qos]\ntrust = \"pcp\"");
    let f = fires(&t, "HOST001");
    assert_eq!(f.line, line_of(&t, "trust = \"pcp\""));
    quiet(BASE, "HOST001");
}

#[test]
fn host002_dscp_map_mismatch() {
    let t = edit("[nic.qos]\ntrust = \"dscp\"", "[nic.qos]\ntrust = \"dscp\"\ndscp_to_priority = { \"26\" = 4 }");
    let f = fires(&t, "HOST002");
    assert!(f.message.contains("DSCP 26 to priority 4"), "{}", f.message);
    quiet(
        &edit("[nic.qos]\ntrust = \"dscp\"", "[nic.qos]\ntrust = \"dscp\"\ndscp_to_priority = { \"26\" = 3 }"),
        "HOST002",
    );
}

#[test]
fn host003_pfc_priorities_mismatch() {
    let t = edit("[nic.qos]\ntrust = \"dscp\"", "[nic.qos]\ntrust = \"dscp\"\npfc_priorities = [3, 4]");
    let f = fires(&t, "HOST003");
    assert!(f.message.contains("[3, 4]") && f.message.contains("[3]"), "{}", f.message);
    // The NIC is the wrong side here: the fix says so, and does not ask the switches to follow.
    assert_eq!(f.hint, "remove [4] from the NIC's `pfc_priorities`; then both sides use [3]");
    let t = edit("[nic.qos]\ntrust = \"dscp\"", "[nic.qos]\ntrust = \"dscp\"\npfc_priorities = []");
    assert_eq!(fires(&t, "HOST003").hint, "add [3] to the NIC's `pfc_priorities`; then both sides use [3]");
    quiet(&edit("[nic.qos]\ntrust = \"dscp\"", "[nic.qos]\ntrust = \"dscp\"\npfc_priorities = [3]"), "HOST003");
}

/// The switches make the default class lossless (PFC002) and pause an unused priority; the NIC
/// pauses only the RoCE priority. HOST003 must not tell the NIC to copy the switches' mistake
/// (it used to say "use [0, 3, 4] on NICs and switches" while PFC002 said "remove 0").
#[test]
fn host003_points_at_the_switch_when_the_switch_is_wrong() {
    let t = format!(
        "{}\n[qos.pfc]\npriorities = [0, 3, 4]\n",
        edit("[nic.qos]\ntrust = \"dscp\"", "[nic.qos]\ntrust = \"dscp\"\npfc_priorities = [3]")
    );
    let all = run(&t);
    let pfc002 = all.iter().find(|f| f.code == "PFC002").expect("PFC002 fires");
    assert!(pfc002.hint.contains("remove priority 0 from PFC"), "{}", pfc002.hint);
    let f = fires(&t, "HOST003");
    assert_eq!(
        f.hint,
        "the switches are wrong on [0]: take it out of their PFC (PFC002); no class uses [4]: drop it from the \
         switches' PFC too (PFC001); then both sides use [3]"
    );
    assert!(!f.hint.contains("[0, 3, 4]"), "{}", f.hint);
}

#[test]
fn host004_roce_mtu_above_port_mtu() {
    let t = edit(
        "host_link = { speed_gbps = 100, length_m = 3 }",
        "host_link = { speed_gbps = 100, length_m = 3, mtu = 4100 }",
    );
    let f = fires(&t, "HOST004");
    assert!(f.message.contains("4174 B") && f.message.contains("MTU 4100"), "{}", f.message);
    quiet(
        &edit(
            "host_link = { speed_gbps = 100, length_m = 3 }",
            "host_link = { speed_gbps = 100, length_m = 3, mtu = 4200 }",
        ),
        "HOST004",
    );
}

#[test]
fn host005_ecn_np_rp_off() {
    let t = edit("[nic.qos]\ntrust = \"dscp\"", "[nic.qos]\ntrust = \"dscp\"\necn_np_priorities = []");
    let f = fires(&t, "HOST005");
    assert!(f.message.contains("notification point"), "{}", f.message);
    let rp = edit("[nic.qos]\ntrust = \"dscp\"", "[nic.qos]\ntrust = \"dscp\"\necn_rp_priorities = [4]");
    assert!(fires(&rp, "HOST005").message.contains("reaction point"));
    quiet(&edit("[nic.qos]\ntrust = \"dscp\"", "[nic.qos]\ntrust = \"dscp\"\necn_np_priorities = [3]"), "HOST005");
}

#[test]
fn host006_wrong_marks() {
    let t = edit("[nic.qos]\ntrust = \"dscp\"", "[nic.qos]\ntrust = \"dscp\"\nroce_dscp = 24");
    let f = fires(&t, "HOST006");
    assert!(f.message.contains("DSCP 24") && f.message.contains("`default`"), "{}", f.message);
    fires(&edit("[nic.qos]\ntrust = \"dscp\"", "[nic.qos]\ntrust = \"dscp\"\ncnp_priority = 7"), "HOST006");
    fires(&edit("[nic.qos]\ntrust = \"dscp\"", "[nic.qos]\ntrust = \"dscp\"\ncnp_dscp = 26"), "HOST006");
    quiet(
        &edit(
            "[nic.qos]\ntrust = \"dscp\"",
            "[nic.qos]\ntrust = \"dscp\"\nroce_dscp = 26\ncnp_dscp = 48\ncnp_priority = 6",
        ),
        "HOST006",
    );
}

#[test]
fn ecn001_kmin_equals_kmax() {
    let t = edit("kmax_bytes = 1500000", "kmax_bytes = 150000");
    let f = fires(&t, "ECN001");
    assert_eq!((f.line, f.path.as_str()), (line_of(&t, "ecn = {"), "qos.class[0].ecn.kmin_bytes"));
    quiet(BASE, "ECN001");
}

#[test]
fn ecn002_pmax_zero() {
    fires(&edit("pmax = 0.1", "pmax = 0.0"), "ECN002");
    quiet(&edit("pmax = 0.1", "pmax = 1.0"), "ECN002");
}

#[test]
fn ecn003_kmax_beyond_dynamic_threshold() {
    let small =
        "\n[switch_models.small]\npreset = \"spectrum\"\nbuffer_bytes = 16000000\negress_lossless_alpha = 0.125\n";
    let t = format!(
        "{}{small}",
        edit(
            "fabric_link = { speed_gbps = 100, length_m = 30 }",
            "fabric_link = { speed_gbps = 100, length_m = 30 }\nleaf_model = \"small\"\nspine_model = \"small\""
        )
    );
    let t = t.replace("kmax_bytes = 1500000", "kmax_bytes = 3000000");
    let f = fires(&t, "ECN003");
    assert!(f.message.contains("alpha 0.125"), "{}", f.message);
    quiet(&t.replace("kmax_bytes = 3000000", "kmax_bytes = 1000000"), "ECN003");
}

#[test]
fn ecn004_kmin_below_a_few_packets() {
    let f = fires(&edit("kmin_bytes = 150000", "kmin_bytes = 8000"), "ECN004");
    assert!(f.message.contains("12522 B"), "{}", f.message);
    quiet(&edit("kmin_bytes = 150000", "kmin_bytes = 20000"), "ECN004");
}

#[test]
fn ecn005_thresholds_do_not_scale() {
    let t = edit("fabric_link = { speed_gbps = 100,", "fabric_link = { speed_gbps = 400,");
    let f = fires(&t, "ECN005");
    assert!(f.message.contains("100G") && f.message.contains("400G"), "{}", f.message);
    assert!(f.message.contains(" µs vs ") && !f.message.contains(" us "), "{}", f.message);
    let scaled = t.replace(
        "ecn = { kmin_bytes = 150000, kmax_bytes = 1500000, pmax = 0.1 }",
        "ecn = { kmin_bytes = 150000, kmax_bytes = 1500000, pmax = 0.1 }\necn_per_speed.\"400\" = { kmin_bytes = 600000, kmax_bytes = 6000000, pmax = 0.1 }",
    );
    quiet(&scaled, "ECN005");
    quiet(BASE, "ECN005");
}

#[test]
fn ecn006_marking_after_xoff() {
    let t = format!("{BASE}\n[qos.pfc]\nxoff_bytes = 1000000\nxon_bytes = 500000\n");
    let f = fires(&t, "ECN006");
    assert!(f.message.contains("Kmax 1500000 B"), "{}", f.message);
    quiet(&format!("{BASE}\n[qos.pfc]\nxoff_bytes = 2000000\nxon_bytes = 500000\n"), "ECN006");
}

/// `BASE` with every port at `gbps` and the RDMA class's thresholds `kmin`/`kmax`.
fn at_speed(gbps: u32, kmin: u64, kmax: u64) -> String {
    BASE.replace("speed_gbps = 100", &format!("speed_gbps = {gbps}")).replace(
        "ecn = { kmin_bytes = 150000, kmax_bytes = 1500000, pmax = 0.1 }",
        &format!("ecn = {{ kmin_bytes = {kmin}, kmax_bytes = {kmax}, pmax = 0.1 }}"),
    )
}

#[test]
fn ecn007_ramp_shorter_than_the_bdp() {
    // Huawei's 100GE guide (7 KB / 750 KB) on 400G ports: a 743 KB ramp against
    // 400 Gb/s x 20 µs / 8 = 1,000,000 B.
    let t = at_speed(400, 7000, 750000);
    let f = fires(&t, "ECN007");
    assert_eq!(f.path, "qos.class[0].ecn.kmax_bytes");
    assert_eq!(f.line, line_of(&t, "ecn = { kmin_bytes = 7000"));
    assert!(f.message.contains("spans 743000 B (743 KB), 14.9 µs at 400G"), "{}", f.message);
    assert!(f.message.contains("(400G x 20 µs RTT = 1000000 B (1.0 MB))"), "{}", f.message);
    assert!(
        f.hint.contains("`ecn_per_speed.\"400\" = { kmin_bytes = 150000, kmax_bytes = 3000000, pmax = 0.1 }`"),
        "{}",
        f.hint
    );
    // The same thresholds where the guide meant them: 743 KB is 3 BDP at 100G.
    quiet(&at_speed(100, 7000, 750000), "ECN007");
    // One BDP of ramp is enough; a byte less is not.
    quiet(&at_speed(400, 7000, 1_007_000), "ECN007");
    fires(&at_speed(400, 7000, 1_006_999), "ECN007");
    // Cisco's 400G blueprint (150 KB / 3000 KB) is clean at 400G; at 800G it is 1.4 BDP, clean too.
    quiet(&at_speed(400, 150_000, 3_000_000), "ECN007");
    quiet(&at_speed(800, 150_000, 3_000_000), "ECN007");
    // Cumulus' 150 KB / 1.5 MB: 1.35 BDP at 400G, 0.68 at 800G.
    quiet(&at_speed(400, 150_000, 1_500_000), "ECN007");
    fires(&at_speed(800, 150_000, 1_500_000), "ECN007");
    // An `ecn_per_speed` entry for the fast ports fixes it, and the finding points at it when
    // it is the short one.
    let mixed = BASE.replace("fabric_link = { speed_gbps = 100,", "fabric_link = { speed_gbps = 400,");
    let per_speed = |kmax: u64| {
        mixed.replace(
            "ecn = { kmin_bytes = 150000, kmax_bytes = 1500000, pmax = 0.1 }",
            &format!("ecn = {{ kmin_bytes = 150000, kmax_bytes = 1500000, pmax = 0.1 }}\necn_per_speed.\"400\" = {{ kmin_bytes = 600000, kmax_bytes = {kmax}, pmax = 0.1 }}"),
        )
    };
    quiet(&per_speed(6_000_000), "ECN007");
    let f = fires(&per_speed(1_200_000), "ECN007");
    assert_eq!(f.path, "qos.class[0].ecn_per_speed.400.kmax_bytes");
    // Long cables raise the RTT: 2 km leaf-spine links (10 µs each way) make the round trip
    // 2 x (2 x 10 µs + 2 x 15 ns) = 40.06 µs, so at 100G one BDP is 500,750 B.
    let far = at_speed(100, 7000, 500_000).replace("length_m = 30", "length_m = 2000");
    let f = fires(&far, "ECN007");
    assert!(f.message.contains("(100G x 40.06 µs RTT = 500750 B (501 KB))"), "{}", f.message);
}

#[test]
fn hdr001_headroom_too_small() {
    let t = format!("{BASE}\n[qos.pfc]\nheadroom_bytes = 20000\n");
    let f = fires(&t, "HDR001");
    assert_eq!(f.line, line_of(&t, "headroom_bytes"));
    assert!(f.message.contains("short on 12 of 12 switch ports"), "{}", f.message);
    quiet(&format!("{BASE}\n[qos.pfc]\nheadroom_bytes = 200000\n"), "HDR001");
}

#[test]
fn hdr001_uses_the_sonic_model_per_port() {
    // 100G, 300 m fabric links, port MTU 9100, 1024 B lossless MTU, Spectrum-2: the SONiC static
    // table row (xoff 165888). 165000 is short on the fabric-facing ports only.
    let t = BASE
        .replace("fabric_link = { speed_gbps = 100, length_m = 30 }", "fabric_link = { speed_gbps = 100, length_m = 300, mtu = 9100 }\nleaf_model = \"spectrum-2\"\nspine_model = \"spectrum-2\"")
        .replace("host_link = { speed_gbps = 100, length_m = 3 }", "host_link = { speed_gbps = 100, length_m = 3, mtu = 9100 }")
        .replace("mtu = 4096\n", "mtu = 1024\n");
    let f = fires(&format!("{t}\n[qos.pfc]\nheadroom_bytes = 165000\n"), "HDR001");
    assert!(
        f.message.contains("short on 8 of 12") && f.message.contains("needs XOFF headroom 165888 B"),
        "{}",
        f.message
    );
    quiet(&format!("{t}\n[qos.pfc]\nheadroom_bytes = 165888\n"), "HDR001");
}

#[test]
fn hdr002_hdr003_buffer_overcommitted() {
    let model = |buffer: u64| {
        format!(
            "{}\n[switch_models.tiny]\npreset = \"spectrum-3\"\nbuffer_bytes = {buffer}\n",
            edit(
                "fabric_link = { speed_gbps = 100, length_m = 30 }",
                "fabric_link = { speed_gbps = 100, length_m = 30 }\nleaf_model = \"tiny\"\nspine_model = \"tiny\""
            )
        )
    };
    let f = fires(&model(400_000), "HDR002");
    assert!(f.path.ends_with("buffer_bytes"), "{}", f.path);
    quiet(&model(400_000), "HDR003");
    fires(&model(1_000_000), "HDR003");
    quiet(&model(1_000_000), "HDR002");
    quiet(&model(64_000_000), "HDR003");
}

#[test]
fn wdg001_watchdog_off() {
    let t = format!("{BASE}\n[qos.pfc_watchdog]\nenabled = false\n");
    fires(&t, "WDG001");
    quiet(&format!("{BASE}\n[qos.pfc_watchdog]\nenabled = true\n"), "WDG001");
}

const SECOND_PROFILE: &str = "\n[nic_profiles.old]\nmtu = 4096\nfirmware = \"28.39.2048\"\n\n[[nic_assign]]\nhosts = [\"host0\"]\nprofile = \"old\"\n";

#[test]
fn nic001_dcqcn_differs() {
    let t = format!("{BASE}{SECOND_PROFILE}[nic_profiles.old.dcqcn]\nrate_ai_mbps = 40\n");
    let f = fires(&t, "NIC001");
    // Keys and values as the file writes them.
    assert!(f.message.ends_with("differs from `default`: rate_ai_mbps 5 vs 40"), "{}", f.message);
    let t = format!("{BASE}{SECOND_PROFILE}[nic_profiles.old.dcqcn]\nvariant = \"paper\"\n");
    let f = fires(&t, "NIC001");
    assert!(f.message.contains("variant \"mlx5\" vs \"paper\""), "{}", f.message);
    assert!(f.message.contains("alpha_timer_us 1 vs 55"), "{}", f.message);
    assert!(!f.message.contains("Mlx5") && !f.message.contains("Paper"), "{}", f.message);
    quiet(&format!("{BASE}{SECOND_PROFILE}"), "NIC001");
}

#[test]
fn nic002_firmware_differs() {
    let t = format!("{BASE}{}", SECOND_PROFILE.replace("28.39.2048", "22.36.1010"));
    let f = fires(&t, "NIC002");
    assert!(f.message.contains("22.36.1010") && f.message.contains("28.39.2048"), "{}", f.message);
    quiet(&format!("{BASE}{SECOND_PROFILE}"), "NIC002");
}

#[test]
fn nic004_settings_differ_across_the_fleet() {
    // The firmware-mix mistake: a rack left without congestion control.
    let t = format!("{BASE}{}", SECOND_PROFILE.replace("mtu = 4096\n", "mtu = 4096\ncongestion_control = \"none\"\n"));
    let f = fires(&t, "NIC004");
    assert_eq!(f.path, "nic_profiles.old.congestion_control");
    assert_eq!(f.line, line_of(&t, "congestion_control = \"none\""));
    assert!(f.message.ends_with("unlike `default`: congestion_control \"dcqcn\" vs \"none\""), "{}", f.message);
    // Every difference listed, in the file's keys and units.
    let t = format!(
        "{BASE}{}",
        SECOND_PROFILE.replace("mtu = 4096\n", "mtu = 1024\nack_timeout = 14\nrx_buffer_bytes = 1048576\n")
    );
    let f = fires(&t, "NIC004");
    assert_eq!(f.path, "nic_profiles.old.mtu");
    for part in [
        "mtu 4096 vs 1024",
        "ack_timeout 4294967.296 µs vs 67108.864 µs",
        "rx_buffer_bytes 2097152 vs 1048576",
        "rx_xoff_bytes 1782579 vs 891289",
    ] {
        assert!(f.message.contains(part), "{part}: {}", f.message);
    }
    // One profile alike in everything but its name and hosts: nothing to say.
    quiet(&format!("{BASE}{SECOND_PROFILE}"), "NIC004");
    // A profile no host uses is not part of the fleet.
    let unused = SECOND_PROFILE.replace("mtu = 4096\n", "mtu = 1024\n");
    quiet(&format!("{BASE}{}", &unused[..unused.find("[[nic_assign]]").unwrap()]), "NIC004");
}

#[test]
fn nic005_assignment_matches_no_host() {
    let t = format!("{BASE}{}", SECOND_PROFILE.replace("hosts = [\"host0\"]", "hosts = [\"host0\", \"rack3-*\"]"));
    let f = fires(&t, "NIC005");
    assert_eq!(f.path, "nic_assign[0].hosts[1]");
    assert!(f.message.contains("`rack3-*` matches no host") && f.message.contains("profile `old`"), "{}", f.message);
    quiet(&format!("{BASE}{SECOND_PROFILE}"), "NIC005");
}

#[test]
fn nic003_no_congestion_control() {
    fires(&edit("[nic]\n", "[nic]\ncongestion_control = \"none\"\n"), "NIC003");
    quiet(&edit("[nic]\n", "[nic]\ncongestion_control = \"dcqcn\"\n"), "NIC003");
}

#[test]
fn top001_oversubscribed() {
    let t = edit("hosts_per_leaf = 2", "hosts_per_leaf = 4");
    let f = fires(&t, "TOP001");
    assert!(f.message.contains("2.00:1"), "{}", f.message);
    quiet(BASE, "TOP001");
}

fn rails(cabling: &[(&str, &str, &str, u32)]) -> String {
    let mut t = String::from("[topology.explicit]\n");
    for s in ["rail0", "rail1", "spine"] {
        t += &format!("[[topology.explicit.node]]\nname = \"{s}\"\nkind = \"switch\"\n");
    }
    for (host, node, _, rail) in cabling {
        t += &format!(
            "[[topology.explicit.node]]\nname = \"{host}\"\nkind = \"host\"\ngpu_node = \"{node}\"\nrail = {rail}\n"
        );
    }
    for (host, _, leaf, _) in cabling {
        t += &format!("[[topology.explicit.link]]\na = \"{host}\"\nb = \"{leaf}\"\nspeed_gbps = 400\n");
    }
    for leaf in ["rail0", "rail1"] {
        for _ in 0..2 {
            t += &format!("[[topology.explicit.link]]\na = \"{leaf}\"\nb = \"spine\"\nspeed_gbps = 400\n");
        }
    }
    t
}

#[test]
fn top002_asymmetric_rails() {
    let good = [
        ("n0-nic0", "n0", "rail0", 0),
        ("n0-nic1", "n0", "rail1", 1),
        ("n1-nic0", "n1", "rail0", 0),
        ("n1-nic1", "n1", "rail1", 1),
    ];
    quiet(&rails(&good), "TOP002");
    let mut swapped = good;
    swapped[3] = ("n1-nic1", "n1", "rail0", 1);
    let t = rails(&swapped);
    let f = fires(&t, "TOP002");
    assert!(f.message.contains("`n1-nic1` is on rail 1") && f.message.contains("rail0"), "{}", f.message);
    // NICs swapped inside a node: every leaf still serves one rail, but NIC 1 is on rail 0.
    let mut crossed = good;
    crossed[2] = ("n1-nic0", "n1", "rail1", 1);
    crossed[3] = ("n1-nic1", "n1", "rail0", 0);
    let f = run(&rails(&crossed));
    assert!(
        f.iter().any(|f| f.code == "TOP002" && f.message.contains("`n1-nic1` is NIC 1 of its node but sits on rail 0")),
        "{f:?}"
    );
    let mut same_rail = good;
    same_rail[1] = ("n0-nic1", "n0", "rail1", 0);
    let f = run(&rails(&same_rail));
    assert!(f.iter().any(|f| f.code == "TOP002" && f.message.contains("both on rail 0")), "{f:?}");
}

#[test]
fn top003_hash_without_source_port() {
    let t = format!("{BASE}\n[routing]\necmp_hash_fields = [\"src-ip\", \"dst-ip\", \"protocol\"]\n");
    fires(&t, "TOP003");
    quiet(&format!("{BASE}\n[routing]\necmp_hash_fields = [\"src-ip\", \"dst-ip\", \"src-port\"]\n"), "TOP003");
    // Enhanced ECMP: the destination QPN varies per QP as the source port does.
    quiet(&format!("{BASE}\n[routing]\necmp_hash_fields = [\"src-ip\", \"dst-ip\", \"dest-qpn\"]\n"), "TOP003");
    fires(&format!("{BASE}\n[routing]\necmp_hash_fields = [\"src-ip\", \"dst-ip\", \"src-qpn\"]\n"), "TOP003");
}

/// A ring of switches (each with one host) plus optional extra switch links.
fn ring(n: usize, extra: &[(usize, usize)]) -> String {
    let mut t = String::from("[topology.explicit]\n");
    for i in 0..n {
        t += &format!("[[topology.explicit.node]]\nname = \"sw{i}\"\nkind = \"switch\"\n");
        t += &format!("[[topology.explicit.node]]\nname = \"h{i}\"\nkind = \"host\"\n");
    }
    for i in 0..n {
        t += &format!("[[topology.explicit.link]]\na = \"h{i}\"\nb = \"sw{i}\"\nspeed_gbps = 100\n");
    }
    for i in 0..n {
        t += &format!("[[topology.explicit.link]]\na = \"sw{i}\"\nb = \"sw{}\"\nspeed_gbps = 100\n", (i + 1) % n);
    }
    for (a, b) in extra {
        t += &format!("[[topology.explicit.link]]\na = \"sw{a}\"\nb = \"sw{b}\"\nspeed_gbps = 100\n");
    }
    t
}

#[test]
fn dlk001_planted_cycle_in_a_ring() {
    let t = ring(4, &[]);
    let f = fires(&t, "DLK001");
    for s in ["sw0", "sw1", "sw2", "sw3"] {
        assert!(f.message.contains(s), "{}", f.message);
    }
    assert!(f.message.contains("over 4 links"), "{}", f.message);
    assert!(f.path.starts_with("topology.explicit.link["), "{}", f.path);
    // A ring of three has no two-switch-hop routes, hence no dependency at all.
    quiet(&ring(3, &[]), "DLK001");
    // Without a lossless priority there is nothing to deadlock.
    quiet(&format!("{}\n[qos.pfc]\npriorities = []\n", ring(4, &[])), "DLK001");
}

#[test]
fn dlk002_cycle_only_after_a_failure() {
    // The diagonal sw0-sw2 makes every route minimal without a cycle; losing it turns the
    // fabric into the 4-ring.
    let t = ring(4, &[(0, 2)]);
    quiet(&t, "DLK001");
    let f = fires(&t, "DLK002");
    assert!(f.message.starts_with("1 of 5 single-link failures"), "{}", f.message);
    assert!(
        f.message.contains("sw0:swp2 -- sw2:swp3") || f.message.contains("sw0:swp") && f.message.contains("sw2:swp"),
        "{}",
        f.message
    );
    assert_eq!(f.path, "topology.explicit.link[8]");
}

#[test]
fn lnt001_unknown_code_in_disable() {
    let t = format!("{BASE}\n[[lint.disable]]\ncode = \"PFC999\"\nreason = \"typo\"\n");
    let f = fires(&t, "LNT001");
    assert_eq!(f.line, line_of(&t, "PFC999"));
    quiet(&format!("{BASE}\n[[lint.disable]]\ncode = \"PFC001\"\nreason = \"ok\"\n"), "LNT001");
}

#[test]
fn disable_in_file_and_on_the_command_line() {
    let t = format!(
        "{}\n[[lint.disable]]\ncode = \"top001\"\nreason = \"enterprise pod, 2:1 by design\"\n",
        edit("hosts_per_leaf = 2", "hosts_per_leaf = 4")
    );
    let model = rocelab_model::load_str("t.toml", &t).unwrap();
    let r = lint(&model, "t.toml", &t, &Options::default());
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert_eq!(r.suppressed.len(), 1);
    assert_eq!((r.suppressed[0].finding.code, r.suppressed[0].source), ("TOP001", "file"));
    assert_eq!(r.suppressed[0].reason, "enterprise pod, 2:1 by design");

    let t = edit("hosts_per_leaf = 2", "hosts_per_leaf = 4");
    let model = rocelab_model::load_str("t.toml", &t).unwrap();
    let opts = Options { disable: vec![("TOP001".into(), "lab".into())] };
    let r = lint(&model, "t.toml", &t, &opts);
    assert!(r.findings.is_empty());
    assert_eq!(r.suppressed[0].source, "command line");
}

/// The seeds' named mistakes, each alone in an otherwise clean fabric, draw exactly their rule.
#[test]
fn each_named_mistake_alone_draws_only_its_rule() {
    let codes = |t: &str| run(t).iter().map(|f| f.code).collect::<Vec<_>>();
    // ECN thresholds from a 100G guide on 400G ports.
    assert_eq!(codes(&at_speed(400, 150_000, 750_000)), vec!["ECN007"]);
    assert_eq!(codes(&at_speed(400, 150_000, 3_000_000)), Vec::<&str>::new());
    // RDMA and general traffic mixed: by declaration, by the DSCP map, by sharing a queue.
    assert_eq!(codes(&edit("carries = [\"rdma\"]", "carries = [\"rdma\", \"tcp\"]")), vec!["ISO001"]);
    let dscp0 = edit("dscp = [26]", "dscp = [0, 26]").replace("dscp = [0, 8, 10]", "dscp = [8, 10]");
    assert_eq!(codes(&dscp0), vec!["ISO002"]);
    // CNPs not prioritized.
    assert_eq!(codes(&edit("scheduler = \"strict\"", "scheduler = \"dwrr\"\nweight = 10")), vec!["CNP002"]);
    // Settings and firmware heterogeneous across the fleet.
    let mtu = format!("{BASE}{}", SECOND_PROFILE.replace("mtu = 4096\n", "mtu = 1024\n"));
    assert_eq!(codes(&mtu), vec!["NIC004"]);
    assert_eq!(codes(&format!("{BASE}{}", SECOND_PROFILE.replace("28.39.2048", "22.36.1010"))), vec!["NIC002"]);
}

#[test]
fn every_registered_rule_is_exercised_here() {
    let src = include_str!("rules.rs");
    for r in rocelab_lint::RULES {
        assert!(src.contains(&format!("\"{}\"", r.code)), "no test triggers {}", r.code);
    }
}

#[test]
fn absurd_buffer_values_saturate() {
    let t = format!(
        "{}\n[switch_models.odd]\npreset = \"spectrum-3\"\nreserve_bytes = 9223372036854775807\n\n[qos.pfc]\nheadroom_bytes = 9223372036854775807\n",
        edit("fabric_link = { speed_gbps = 100, length_m = 30 }", "fabric_link = { speed_gbps = 100, length_m = 30 }\nleaf_model = \"odd\"")
    );
    fires(&t, "HDR002");
    quiet(&t, "HDR001");
}

#[test]
fn reports_are_deterministic() {
    let t = format!("{}\n[qos.pfc]\nheadroom_bytes = 1000\n", ring(5, &[(0, 2), (1, 3)]));
    let once = |t: &str| {
        let m = rocelab_model::load_str("t.toml", t).unwrap();
        rocelab_lint::output::json(&[lint(&m, "t.toml", t, &Options::default())])
    };
    let first = once(&t);
    for _ in 0..5 {
        assert_eq!(once(&t), first);
    }
}

/// `BASE`'s topology on InfiniBand, with `ib` as the `[infiniband]` body (one class: SL 0).
fn ib(body: &str) -> String {
    format!(
        "[fabric]\nlink_layer = \"infiniband\"\n[topology.leaf_spine]\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n\
         host_link = {{ speed_gbps = 100, length_m = 3 }}\nfabric_link = {{ speed_gbps = 100, length_m = 30 }}\n\
         [nic]\nmtu = 4096\n[infiniband]\n{body}"
    )
}

#[test]
fn ib_fabric_with_defaults_is_clean_and_skips_the_roce_rules() {
    // No PFC, ECN, CNP class, DSCP trust or UDP-port hash on IB: none of those rules fire,
    // though the same file on RoCE would draw several.
    assert_eq!(run(&ib("")), vec![], "an IB fabric with the defaults is clean");
    let roce_settings = "[qos.pfc_watchdog]\nenabled = false\n[routing]\necmp_hash_fields = [\"src-ip\", \"dst-ip\"]\n";
    assert_eq!(run(&format!("{}{roce_settings}", ib(""))), vec![], "RoCE-only settings draw nothing on IB");
    let roce =
        format!("{}{roce_settings}", ib("").replace("link_layer = \"infiniband\"\n", "").replace("[infiniband]\n", ""));
    let codes: Vec<&str> = run(&roce).iter().map(|f| f.code).collect();
    assert_eq!(codes, vec!["WDG001", "TOP003"], "the same settings on RoCE");
}

#[test]
fn iba001_sl_on_a_vl_without_buffer() {
    let f = fires(&ib("data_vls = 2\nsl_to_vl = [4, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]\n"), "IBA001");
    assert!(f.message.contains("SL 0, which maps to VL 4") && f.message.contains("VL0–VL1"), "{}", f.message);
    assert_eq!((f.line, f.column), (13, 13), "at sl_to_vl[0]");
    quiet(&ib("data_vls = 2\nsl_to_vl = [1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]\n"), "IBA001");
}

#[test]
fn iba002_vl_missing_from_the_arbitration_tables() {
    let f = fires(&ib("vl_arb_high = []\nvl_arb_low = [{ vl = 1, weight = 64 }]\n"), "IBA002");
    assert!(f.message.contains("VL 0") && f.message.contains("never"), "{}", f.message);
    assert_eq!(f.line, 13, "at vl_arb_low");
    // A weight of 0 does not count.
    fires(&ib("vl_arb_high = [{ vl = 0, weight = 0 }]\n"), "IBA002");
    // The default classes use SLs 0, 3 and 6 (VLs 0, 3, 6).
    let all = "vl_arb_low = [{ vl = 0, weight = 64 }, { vl = 3, weight = 64 }, { vl = 6, weight = 1 }]\n";
    quiet(&ib(&format!("vl_arb_high = []\n{all}")), "IBA002");
}

#[test]
fn iba003_more_data_vls_than_the_hardware() {
    let f = fires(&ib("data_vls = 15\n"), "IBA003");
    assert!(f.message.contains("data_vls = 15") && f.message.contains("more than the 8 data VLs"), "{}", f.message);
    quiet(&ib("data_vls = 8\n"), "IBA003");
}

#[test]
fn iba004_vl_buffer_below_the_credit_loop() {
    // 100G over 30 m: 12.5 GB/s × 300 ns = 3,750 B, plus two 4,122-byte packets: 11,994 B.
    let f = fires(&ib("vl_buffer_bytes = 11000\n"), "IBA004");
    assert!(f.message.contains("11994 B") && f.message.contains("30 m"), "{}", f.message);
    quiet(&ib("vl_buffer_bytes = 11994\n"), "IBA004");
}

#[test]
fn iba005_unlimited_high_priority_starves_low() {
    // Bulk on SL 0 → VL 0 (high table by default), the "cnp" class (a name the loader wants)
    // on SL 1 → VL 1 (low table).
    let two_classes = "[[qos.class]]\nname = \"bulk\"\npriority = 0\n[[qos.class]]\nname = \"cnp\"\npriority = 1\n";
    let t = format!("{}{two_classes}", ib("limit_of_high_priority = 255\n"));
    let f = fires(&t, "IBA005");
    assert!(f.message.contains("VL 0") && f.message.contains("VL 1"), "{}", f.message);
    quiet(&format!("{}{two_classes}", ib("limit_of_high_priority = 16\n")), "IBA005");
    // A low VL in neither table is never served whatever the limit: IBA002 says so, not this.
    let t = format!("{}{two_classes}", ib("limit_of_high_priority = 255\nvl_arb_low = [{ vl = 2, weight = 4 }]\n"));
    fires(&t, "IBA002");
    quiet(&t, "IBA005");
}

#[test]
fn dual_tor_on_one_plane() {
    let t = "[topology.rail_optimized]\ngpu_nodes = 4\nrails = 1\nnodes_per_su = 2\ndual_tor = true\n\
             host_link = { speed_gbps = 200, length_m = 3 }\nleaf_link = { speed_gbps = 200, length_m = 20 }\n";
    fires(t, "TOP004");
    quiet(&t.replace("dual_tor = true", "dual_tor = true\nplanes = 2"), "TOP004");
}

/// Per-packet load balancing to a NIC without out-of-order placement (the cases are in
/// tests/lb.rs).
#[test]
fn spraying_to_nics_that_cannot_reorder_draws_lbl001() {
    let t = edit("firmware = \"28.39.2048\"", "firmware = \"28.39.2048\"\nooo_window_packets = 0");
    fires(&format!("{t}\n[routing]\nload_balancing = \"spray\"\n"), "LBL001");
    quiet(&format!("{BASE}\n[routing]\nload_balancing = \"spray\"\n"), "LBL001");
}

#[test]
fn uet_over_the_lossless_rdma_class_fires_and_over_a_lossy_one_does_not() {
    // BASE's RDMA class is lossless: a UET profile over it is flagged where it says `uet`.
    let uet = edit("firmware = \"28.39.2048\"", "firmware = \"28.39.2048\"\ntransport = \"uet\"");
    let f = fires(&uet, "UET001");
    assert_eq!((f.path.as_str(), f.line), ("nic.transport", line_of(&uet, "transport = \"uet\"")));
    quiet(BASE, "UET001");
    let lossy = uet.replacen("lossless = true", "lossless = false", 1);
    quiet(&lossy, "UET001");
    // Lossy on purpose: the RoCE-class rule (go-back-N needs PFC) does not apply to UET.
    quiet(&lossy, "QOS001");
    fires(&BASE.replacen("lossless = true", "lossless = false", 1), "QOS001");
}
