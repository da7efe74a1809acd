//! Every TOML example in `docs/fabric-file.md` loads, so the reference page cannot drift from
//! the schema. Snippets without a topology are checked on top of a small leaf-spine.

use rocelab_model::load_str;
use std::path::Path;

const TOPOLOGY: &str = "\
[topology.leaf_spine]
leaves = 4
spines = 2
hosts_per_leaf = 8
host_link = { speed_gbps = 100 }
fabric_link = { speed_gbps = 100 }
";

#[test]
fn every_toml_example_in_the_fabric_file_reference_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/fabric-file.md");
    let doc = std::fs::read_to_string(&path).expect("docs/fabric-file.md");
    let mut n = 0;
    for (i, block) in doc.split("```toml\n").skip(1).enumerate() {
        let snippet = block.split("```").next().unwrap();
        let text = if snippet.contains("[topology.") { snippet.to_string() } else { format!("{TOPOLOGY}{snippet}") };
        if let Err(e) = load_str(&format!("fabric-file.md example {}", i + 1), &text) {
            panic!("example {} of docs/fabric-file.md does not load:\n{e}\n---\n{snippet}", i + 1);
        }
        n += 1;
    }
    assert!(n >= 10, "found only {n} TOML examples");
}
