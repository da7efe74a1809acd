//! `[[scenario]]` tables: each kind's typed parameters, resolved when the file loads.
//!
//! A scenario kind is two files with one name: `rocelab-model/src/scenario/<kind>.rs` holds
//! what a fabric file may say (its typed parameters, `deny_unknown_fields`, the defaults as
//! constants and the parameter table `rocelab scenarios --list` prints from them), and
//! `rocelab-scenario/src/kinds/<kind>.rs` holds what the kind does (its setup, its evaluation
//! and its checks). The split is forced by the crate graph and is the one that keeps issue
//! 31's promise: the model cannot depend on the engine, yet every verb (`lint`, `topo`,
//! `validate`, `simulate`) must refuse the same bad scenario table with the same
//! file:line:col, so the schema lives where the file is loaded. The behaviour needs the
//! engines, so it lives above them. Adding a kind: one file and one line in [`kinds!`] here,
//! one file and one line in `rocelab-scenario`'s registry.
//!
//! The file keeps the raw table ([`ScenarioConfig`]: `kind`, `name`, and the rest as written)
//! so a diagnostic names the exact key (`scenario[2].fan_in`) and the source map finds its
//! line; [`ScenarioConfig::params`] turns it into the kind's typed table ([`ScenarioParams`]).

use crate::diag::Diagnostic;
use serde::{Deserialize, Serialize};

pub mod collective;
pub mod firmware_mix;
pub mod firmware_update;
pub mod hotspot;
pub mod incast;
pub mod isolation;
pub mod link_flap;
pub mod link_loss;
pub mod microburst;
pub mod mixed;
pub mod routing_change;
pub mod slow_receiver;
pub mod sustained;
pub mod switch_reboot;

/// One parameter of a kind, as `rocelab scenarios --list` and `docs/scenarios.md` show it.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    pub key: &'static str,
    pub unit: &'static str,
    /// The default and how it scales with the fabric, written from the kind's constants.
    pub default: fn() -> String,
    pub about: &'static str,
}

/// A parameter whose default is fixed text (a keyword, "every host").
pub const fn p(key: &'static str, unit: &'static str, default: fn() -> String, about: &'static str) -> Param {
    Param { key, unit, default, about }
}

/// What a kind models and the parameters it takes.
#[derive(Clone, Copy, Debug)]
pub struct KindInfo {
    pub name: &'static str,
    pub models: &'static str,
    pub headline: &'static str,
    pub headline_unit: &'static str,
    /// The kind's own parameters, then those it shares with a family of kinds.
    pub own: &'static [Param],
    pub shared: &'static [Param],
}

impl KindInfo {
    pub fn params(&self) -> impl Iterator<Item = &'static Param> {
        self.own.iter().chain(self.shared)
    }
}

// Parameters several kinds take, with the same meaning and default.
pub const HOSTS: Param =
    p("hosts", "globs", || "every host".into(), "the hosts taking part (ring order: rail by rail)");
/// Telemetry samples a run keeps when `sample_us` is left out.
pub const SAMPLES: u64 = 100;
pub const SAMPLE: Param =
    p("sample_us", "µs", || format!("duration / {SAMPLES}"), "telemetry sampling period (at most 400 samples)");
/// Offered load of the (background) traffic when `load` is left out.
pub const LOAD_DEFAULT: f64 = 1.0;
pub const LOAD: Param = p(
    "load",
    "fraction",
    || format!("{LOAD_DEFAULT:.1}"),
    "offered load of the (background) traffic, of each sender's line rate",
);
pub const DST: Param = p("dst", "host", || "the first host".into(), "the receiver");
/// The placement keyword of the link kinds: the busiest leaf-spine link of a probe run.
pub const BUSIEST_UPLINK: &str = "busiest-spine-uplink";
pub const LINK: Param = p(
    "a",
    "node",
    || format!("\"{BUSIEST_UPLINK}\""),
    "one end of the link (with `b`), or `busiest-spine-uplink`: the leaf-spine link that carried the most bytes before the fault, in a probe run of the same load and seed",
);
pub const B: Param = p("b", "node", || "-".into(), "the other end of the link");
/// The fault kinds' placement probe: `busiest-*` is the place that carried the most bytes in
/// the first quarter of this, µs.
pub const FAULT_DURATION_US: u64 = 400;
/// The fault kinds run in edges (docs/scenarios.md): each settling phase has a horizon.
pub const FAULT_DURATION: Param = p(
    "duration_us",
    "µs",
    || format!("{STEADY_HORIZON_US:.0} (the checklist's [steady] horizon_us)"),
    "horizon of each settling phase: the load settles (two agreeing 200 µs windows), the fault strikes, the fabric settles again",
);
/// When a fault kind's fault strikes.
pub const EARLIEST: Param = p(
    "at_us",
    "µs",
    || "once the load has settled".into(),
    "the earliest the fault strikes; it waits for the background load's steady state",
);
pub const CONVERGENCE: Param = p(
    "convergence_us",
    "µs",
    || "[routing] convergence_us_per_hop".into(),
    "routing convergence per switch hop, for this run",
);
/// The steady kinds' horizon when `duration_us` is left out, µs (the checklist's
/// `[steady] horizon_us` default).
pub const STEADY_HORIZON_US: f64 = 2000.0;
/// The steady kinds' window, µs (`[steady] window_us`).
pub const STEADY_WINDOW_US: f64 = 200.0;
/// The steady kinds' run length: a horizon, not a fixed duration.
pub const STEADY_HORIZON: Param = p(
    "duration_us",
    "µs",
    || format!("{STEADY_HORIZON_US:.0} (the checklist's [steady] horizon_us)"),
    "horizon: the run stops at the first 200 µs window that agrees with the one before it (docs/validate.md), at the latest here, and is judged on that window",
);
/// What the four fault kinds share, after their own parameters.
pub const UNDER_LOAD: &[Param] = &[FAULT_DURATION, CONVERGENCE, LOAD, HOSTS, SAMPLE];
/// Every other kind ends with these.
pub const ON_HOSTS: &[Param] = &[HOSTS, SAMPLE];
pub const RECEIVER: &[Param] = &[DST, HOSTS, SAMPLE];

/// Declares the kinds: for each, its enum variant, the file-format name and its typed
/// parameters (`<file>::Params`). One line per kind.
macro_rules! kinds {
    ($($variant:ident => $file:ident, $name:literal;)*) => {
        /// The pre-production checklist's stress scenarios (`docs/scenarios.md`).
        #[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum ScenarioKind {
            #[default]
            $(#[serde(rename = $name)] $variant,)*
        }

        impl ScenarioKind {
            pub const ALL: &'static [ScenarioKind] = &[$(ScenarioKind::$variant),*];

            /// The name written in a fabric file (`slow-receiver`).
            pub fn name(self) -> &'static str {
                match self { $(ScenarioKind::$variant => $name,)* }
            }

            /// What it models and its parameters.
            pub fn info(self) -> &'static KindInfo {
                match self { $(ScenarioKind::$variant => &$file::INFO,)* }
            }
        }

        /// A scenario's parameters, typed by its kind.
        #[derive(Clone, Debug, PartialEq)]
        pub enum ScenarioParams {
            $($variant($file::Params),)*
        }

        /// The keys a kind's typed table takes (its struct's fields), for the test that the
        /// parameter table lists the same.
        #[cfg(test)]
        fn fields_of(kind: ScenarioKind) -> &'static [&'static str] {
            match kind { $(ScenarioKind::$variant => tests::fields::<$file::Params>(),)* }
        }

        impl ScenarioParams {
            fn from_table(kind: ScenarioKind, t: &toml::Table) -> Result<ScenarioParams, toml::de::Error> {
                Ok(match kind {
                    $(ScenarioKind::$variant => ScenarioParams::$variant(toml::Value::Table(t.clone()).try_into()?),)*
                })
            }
        }
    };
}

kinds! {
    Sustained => sustained, "sustained";
    Incast => incast, "incast";
    Microburst => microburst, "microburst";
    Hotspot => hotspot, "hotspot";
    SlowReceiver => slow_receiver, "slow-receiver";
    LinkLoss => link_loss, "link-loss";
    LinkFlap => link_flap, "link-flap";
    SwitchReboot => switch_reboot, "switch-reboot";
    RoutingChange => routing_change, "routing-change";
    FirmwareMix => firmware_mix, "firmware-mix";
    Collective => collective, "collective";
    Mixed => mixed, "mixed";
    Isolation => isolation, "isolation";
    FirmwareUpdate => firmware_update, "firmware-update";
}

impl ScenarioKind {
    pub fn from_name(s: &str) -> Option<ScenarioKind> {
        ScenarioKind::ALL.iter().copied().find(|k| k.name() == s)
    }
}

/// One `[[scenario]]` table as written: its kind, its name, and its parameters (checked
/// against the kind at load by [`ScenarioConfig::params`]). Every parameter is optional: a
/// left-out one takes a default scaled to the fabric; one the kind does not take is an error
/// naming it. `Default` is a bare `sustained`; a file must name its `kind`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct ScenarioConfig {
    pub kind: ScenarioKind,
    /// How `--scenario` names it (default: the kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The kind's parameters as written (a TOML table).
    #[serde(flatten)]
    pub table: toml::Table,
}

impl ScenarioConfig {
    /// A scenario of `kind` with every parameter at its default.
    pub fn bare(kind: ScenarioKind) -> Self {
        ScenarioConfig { kind, ..ScenarioConfig::default() }
    }

    /// The name `--scenario` finds it by.
    pub fn display_name(&self) -> &str {
        self.name.as_deref().unwrap_or(self.kind.name())
    }

    /// Sets parameter `key` (the checklist's own runs, a verified fix's change).
    pub fn set(&mut self, key: &str, v: impl Into<toml::Value>) {
        self.table.insert(key.to_string(), v.into());
    }

    /// The parameters typed by the kind, or an error naming each key the kind does not take
    /// and each value of the wrong type (`path` is the table's key path, `scenario[2]`).
    pub fn params(&self, path: &str) -> Result<ScenarioParams, Vec<Diagnostic>> {
        let info = self.kind.info();
        let mut errs = Vec::new();
        for k in self.table.keys() {
            if !info.params().any(|p| p.key == k) {
                let keys: Vec<String> = info.params().map(|p| p.key.to_string()).collect();
                let hint = match crate::topology::closest(k, keys.iter()) {
                    Some(near) => format!("did you mean `{near}`? `{}` takes: {}", info.name, keys.join(", ")),
                    None => format!("remove it; `{}` takes: {}", info.name, keys.join(", ")),
                };
                errs.push(Diagnostic::new(
                    format!("{path}.{k}"),
                    format!("`{k}` is not a parameter of `{}` scenarios", info.name),
                    hint,
                ));
            }
        }
        if !errs.is_empty() {
            return Err(errs);
        }
        ScenarioParams::from_table(self.kind, &self.table).map_err(|e| {
            // Every parameter is optional, so the key whose value is wrong is the one that
            // fails on its own: name it, so the error points at its line.
            let alone = |k: &String, v: &toml::Value| {
                let one: toml::Table = [(k.clone(), v.clone())].into_iter().collect();
                ScenarioParams::from_table(self.kind, &one).is_err()
            };
            let key = self.table.iter().find(|(k, v)| alone(k, v)).map(|(k, _)| k);
            let at = key.map_or(path.to_string(), |k| format!("{path}.{k}"));
            vec![Diagnostic::new(
                at,
                format!("{}: {}", info.name, e.message()),
                "check the value's type (`rocelab scenarios --list` gives each parameter's unit)",
            )]
        })
    }
}

/// Checks every `[[scenario]]` of a file at load: each table's parameters against its kind,
/// names unique and none another kind's.
pub fn check(scenarios: &[ScenarioConfig], errs: &mut Vec<Diagnostic>) {
    let mut seen = std::collections::BTreeMap::new();
    for (i, c) in scenarios.iter().enumerate() {
        if let Err(mut e) = c.params(&format!("scenario[{i}]")) {
            errs.append(&mut e);
        }
        // A scenario named after another kind would be taken for it (`--scenario incast`, the
        // checks `validate` names after it).
        if let Some(k) = ScenarioKind::from_name(c.display_name()).filter(|k| *k != c.kind) {
            errs.push(Diagnostic::new(
                format!("scenario[{i}].name"),
                format!("a {} scenario named `{}`, the name of the {} kind", c.kind.name(), k.name(), k.name()),
                "give it a name of its own, e.g. `my-incast`",
            ));
        }
        if let Some(j) = seen.insert(c.display_name().to_string(), i) {
            errs.push(Diagnostic::new(
                format!("scenario[{i}].name"),
                format!("scenario `{}` is also scenario[{j}]", c.display_name()),
                "give each [[scenario]] its own `name`",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::{self, Visitor};

    /// A deserializer that only records the field names a struct asks for.
    struct Fields(std::cell::Cell<&'static [&'static str]>);

    #[derive(Debug)]
    struct Stop;
    impl std::fmt::Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("stop")
        }
    }
    impl std::error::Error for Stop {}
    impl de::Error for Stop {
        fn custom<T: std::fmt::Display>(_: T) -> Self {
            Stop
        }
    }

    impl<'de> de::Deserializer<'de> for &Fields {
        type Error = Stop;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            self.0.set(fields);
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }

    pub(super) fn fields<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
        let d = Fields(std::cell::Cell::new(&[]));
        let _ = T::deserialize(&d);
        d.0.get()
    }

    #[test]
    fn each_kinds_parameter_table_lists_exactly_its_typed_keys() {
        for &k in ScenarioKind::ALL {
            let mut listed: Vec<&str> = k.info().params().map(|p| p.key).collect();
            let mut typed = fields_of(k).to_vec();
            listed.sort();
            typed.sort();
            assert_eq!(listed, typed, "{}", k.name());
            assert!(!typed.is_empty());
        }
    }

    const FABRIC: &str = "[topology.leaf_spine]\nleaves = 2\nspines = 2\nhosts_per_leaf = 4\n\
        host_link = { speed_gbps = 100, length_m = 3 }\nfabric_link = { speed_gbps = 100, length_m = 30 }\n";

    fn refused(scenario: &str) -> Vec<Diagnostic> {
        match crate::load_str("s.toml", &format!("{FABRIC}[[scenario]]\n{scenario}")) {
            Err(crate::LoadError::Invalid(ds)) => ds,
            other => panic!("loaded: {:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn a_bad_scenario_table_is_refused_at_load_on_the_key_s_line() {
        // Line 8 is `kind`; a location is the value's (after `key = `).
        let e = refused("kind = \"incast\"\ndown_us = 5\n");
        assert_eq!(e[0].path, "scenario[0].down_us");
        assert!(e[0].message.contains("not a parameter of `incast`"), "{e:?}");
        assert_eq!(e[0].location.as_ref().map(|l| (l.line, l.column)), Some((9, 11)), "{e:?}");
        let e = refused("kind = \"hotspot\"\nload = 0.5\ntarget = \"spine\"\n");
        assert_eq!(e[0].path, "scenario[0].target", "{e:?}");
        assert_eq!(e[0].location.as_ref().map(|l| l.line), Some(10), "{e:?}");
        let e = refused("kind = \"firmware-mix\"\ndcqcn = { rate_ai_mbps = 20, colour = 1 }\n");
        assert_eq!(e[0].path, "scenario[0].dcqcn", "{e:?}");
    }

    #[test]
    fn typed_parameters_come_from_the_table_as_written() {
        let mut c = ScenarioConfig::bare(ScenarioKind::Hotspot);
        c.set("target", "cnp-path");
        c.set("duration_us", 400);
        let ScenarioParams::Hotspot(p) = c.params("scenario").unwrap() else { panic!() };
        assert_eq!(p.target, Some(hotspot::HotspotTarget::CnpPath));
        assert_eq!(p.duration_us, Some(400.0));
        assert_eq!(p.fan_in, None);
    }
}
