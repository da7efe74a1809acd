//! The usage → acceptable network table: its ordering comes from computed numbers.

use rocelab_plan::compare::{parse_link, CompareSpec};
use rocelab_plan::render::{render_compare, Format};
use rocelab_plan::{compare, PlanSpec};

#[test]
fn print_default_table() {
    let t = compare(&CompareSpec::new(PlanSpec::default())).unwrap();
    eprintln!("{}", render_compare(&t, Format::Table));
    let _ = parse_link("roce400@800").unwrap();
}
