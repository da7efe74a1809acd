//! `rocelab scenarios --list`: every kind, what it models, its headline metric and its
//! parameters with their defaults, printed from each kind's own table
//! (`rocelab_model::scenario::<kind>::INFO`, whose defaults are written from the constants the
//! kind's setup uses), so the list and the runs cannot disagree.

use rocelab_model::config::ScenarioKind;
use rocelab_model::scenario::{KindInfo, Param};
use serde::Serialize;

/// One parameter as the list prints it.
#[derive(Serialize)]
struct ParamView {
    key: &'static str,
    unit: &'static str,
    default: String,
    about: &'static str,
}

/// A kind as `rocelab scenarios --list --format json` prints it.
#[derive(Serialize)]
struct KindView {
    kind: &'static str,
    models: &'static str,
    headline: &'static str,
    headline_unit: &'static str,
    params: Vec<ParamView>,
}

/// Every kind, in the registry's order.
pub fn kinds() -> impl Iterator<Item = &'static KindInfo> {
    ScenarioKind::ALL.iter().map(|k| k.info())
}

fn view(p: &Param) -> ParamView {
    ParamView { key: p.key, unit: p.unit, default: (p.default)(), about: p.about }
}

/// Every kind as JSON.
pub fn list_json() -> String {
    let v: Vec<KindView> = kinds()
        .map(|k| KindView {
            kind: k.name,
            models: k.models,
            headline: k.headline,
            headline_unit: k.headline_unit,
            params: k.params().map(view).collect(),
        })
        .collect();
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

/// `rocelab scenarios --list` as text.
pub fn list_text() -> String {
    let mut o = String::new();
    for k in kinds() {
        o += &format!("{}\n  {}\n  headline: {} ({})\n", k.name, k.models, k.headline, k.headline_unit);
        for p in k.params() {
            o += &format!("    {:<22} {:<28} default {}\n      {}\n", p.key, p.unit, (p.default)(), p.about);
        }
        o += "\n";
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocelab_model::config::ScenarioConfig;

    #[test]
    fn every_kind_is_listed_once_with_its_own_keys() {
        for k in ScenarioKind::ALL {
            assert_eq!(k.info().name, k.name());
            assert_eq!(ScenarioKind::from_name(k.name()), Some(*k));
            let mut keys: Vec<&str> = k.info().params().map(|p| p.key).collect();
            keys.sort();
            let n = keys.len();
            keys.dedup();
            assert_eq!(keys.len(), n, "{k:?} lists a key twice");
        }
    }

    #[test]
    fn keys_of_another_kind_are_refused_by_name() {
        let mut c = ScenarioConfig::bare(ScenarioKind::Incast);
        c.set("fan_in", 4);
        assert!(c.params("scenario[0]").is_ok());
        c.set("down_us", 5.0);
        c.set("share", 0.5);
        let e = c.params("scenario[0]").unwrap_err();
        let paths: Vec<&str> = e.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["scenario[0].down_us", "scenario[0].share"]);
    }

    /// docs/scenarios.md documents every kind and every parameter the table lists.
    #[test]
    fn the_scenarios_page_names_every_kind_and_parameter() {
        let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/scenarios.md")).unwrap();
        for k in kinds() {
            assert!(page.contains(&format!("`{}`", k.name)), "{}", k.name);
            assert!(page.contains(k.headline), "{}", k.headline);
            for p in k.params() {
                assert!(page.contains(&format!("`{}`", p.key)), "{}: {}", k.name, p.key);
            }
        }
    }
}
