//! The GPUDirect RDMA path: `nvidia-smi topo -m` (how each GPU reaches each NIC over PCIe)
//! and the loaded kernel modules (`/proc/modules` or `lsmod`).
//!
//! `nvidia-smi topo -m` prints a matrix: a header of device columns (`GPU0 ... NIC0 ...`,
//! on older drivers the RDMA device names `mlx5_0 ...`) followed by `CPU Affinity`,
//! `NUMA Affinity` and, on newer drivers, `GPU NUMA ID`; one row per device; a `Legend:`;
//! and on newer drivers a `NIC Legend:` that names each `NICk` (`NIC0: mlx5_0`). A cell is
//! `X` (self), `NV#` (NVLink), or the PCIe path (NVIDIA's legend):
//!
//! * `PIX` — at most one PCIe bridge between them (same switch),
//! * `PXB` — several PCIe bridges, no host bridge,
//! * `PHB` — through a PCIe host bridge (the CPU),
//! * `NODE` — across host bridges within one NUMA node,
//! * `SYS` — across the inter-socket link (QPI/UPI/Infinity Fabric).

use super::{excerpt, ParseError};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

const SRC: &str = "nvidia-smi topo -m";

/// How a GPU reaches a NIC, nearest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum PciePath {
    Pix,
    Pxb,
    Phb,
    Node,
    Sys,
}

impl PciePath {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "PIX" => PciePath::Pix,
            "PXB" => PciePath::Pxb,
            "PHB" => PciePath::Phb,
            "NODE" => PciePath::Node,
            "SYS" => PciePath::Sys,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            PciePath::Pix => "PIX",
            PciePath::Pxb => "PXB",
            PciePath::Phb => "PHB",
            PciePath::Node => "NODE",
            PciePath::Sys => "SYS",
        }
    }
    /// Through PCIe switches only: GPU Direct RDMA works at full speed.
    pub fn is_near(self) -> bool {
        self <= PciePath::Pxb
    }
    pub fn meaning(self) -> &'static str {
        match self {
            PciePath::Pix => "behind one PCIe switch",
            PciePath::Pxb => "through several PCIe switches",
            PciePath::Phb => "through the CPU's PCIe host bridge",
            PciePath::Node => "across PCIe host bridges within the NUMA node",
            PciePath::Sys => "across the inter-socket link",
        }
    }
}

/// GPU ↔ NIC paths of one host.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Topo {
    /// `GPU0`, `GPU1`, ...
    pub gpus: Vec<String>,
    /// RDMA device names (`mlx5_0`), resolved through the NIC legend when there is one.
    pub nics: Vec<String>,
    /// `paths[g][n]`: how GPU `g` reaches NIC `n` (`None`: a cell the legend does not name).
    pub paths: Vec<Vec<Option<PciePath>>>,
}

impl Topo {
    /// The nearest NICs of GPU `g` (all those at the best path) and that path.
    pub fn nearest(&self, g: usize) -> Option<(PciePath, Vec<&str>)> {
        let row = self.paths.get(g)?;
        let best = row.iter().flatten().min().copied()?;
        let nics = row.iter().enumerate().filter(|(_, p)| **p == Some(best)).map(|(i, _)| self.nics[i].as_str());
        Some((best, nics.collect()))
    }
}

fn is_device_column(t: &str) -> bool {
    !t.is_empty() && t != "CPU" && t != "NUMA" && t != "GPU" && t.chars().any(|c| c.is_ascii_digit())
}

pub fn parse_topo(text: &str) -> Result<Topo, ParseError> {
    let mut columns: Vec<String> = Vec::new();
    let mut rows: BTreeMap<String, (usize, Vec<String>)> = BTreeMap::new();
    let mut legend: BTreeMap<String, String> = BTreeMap::new();
    let mut in_legend = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with("Legend:") || line.starts_with("NIC Legend:") {
            in_legend = true;
            continue;
        }
        if in_legend {
            if let Some((k, v)) = line.split_once(':') {
                if k.trim().starts_with("NIC") && !v.trim().is_empty() {
                    legend.insert(k.trim().to_string(), v.trim().to_string());
                }
            }
            continue;
        }
        let tok: Vec<&str> = line.split_whitespace().collect();
        if columns.is_empty() {
            if tok.first().is_some_and(|t| t.starts_with("GPU")) {
                columns = tok.iter().take_while(|t| is_device_column(t)).map(|t| t.to_string()).collect();
                continue;
            }
            return Err(ParseError::new(
                SRC,
                n,
                format!("expected the header `GPU0 GPU1 ...`, found `{}`", excerpt(line)),
            ));
        }
        let name = tok[0].to_string();
        if !columns.contains(&name) {
            return Err(ParseError::new(
                SRC,
                n,
                format!("row `{}` is not one of the header's devices", excerpt(&name)),
            ));
        }
        if tok.len() < columns.len() + 1 {
            return Err(ParseError::new(
                SRC,
                n,
                format!("row {name} has {} cells, the header {} devices", tok.len() - 1, columns.len()),
            ));
        }
        rows.insert(name, (n, tok[1..=columns.len()].iter().map(|s| s.to_string()).collect()));
    }
    if columns.is_empty() {
        return Err(ParseError::new(SRC, 0, "no `GPU0 ...` header: not `nvidia-smi topo -m` output"));
    }
    let gpu_cols: Vec<usize> = (0..columns.len()).filter(|i| columns[*i].starts_with("GPU")).collect();
    let nic_cols: Vec<usize> = (0..columns.len()).filter(|i| !columns[*i].starts_with("GPU")).collect();
    let mut topo = Topo {
        gpus: gpu_cols.iter().map(|i| columns[*i].clone()).collect(),
        nics: nic_cols
            .iter()
            .map(|i| legend.get(&columns[*i]).cloned().unwrap_or_else(|| columns[*i].clone()))
            .collect(),
        paths: Vec::new(),
    };
    for g in &gpu_cols {
        let Some((n, cells)) = rows.get(&columns[*g]) else {
            return Err(ParseError::new(SRC, 0, format!("no row for {}", columns[*g])));
        };
        let mut row = Vec::new();
        for c in &nic_cols {
            let cell = cells[*c].as_str();
            match PciePath::parse(cell) {
                Some(p) => row.push(Some(p)),
                None if cell == "X" || cell.starts_with("NV") || cell == "N/A" => row.push(None),
                None => {
                    return Err(ParseError::new(
                        SRC,
                        *n,
                        format!("unknown path `{}` to {}", excerpt(cell), columns[*c]),
                    ))
                }
            }
        }
        topo.paths.push(row);
    }
    Ok(topo)
}

/// Module names from `/proc/modules` or `lsmod` (whose `Module Size Used by` header is skipped).
pub fn parse_modules(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|m| *m != "Module" && m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .map(|m| m.replace('-', "_"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_with_a_nic_legend() {
        let t = parse_topo("\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \tNV18\tPIX\tSYS\t0-31\t0\t\tN/A\nGPU1\tNV18\t X \tSYS\tPXB\t32-63\t1\t\tN/A\nNIC0\tPIX\tSYS\t X \tSYS\nNIC1\tSYS\tPXB\tSYS\t X \n\nLegend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_1\n").unwrap();
        assert_eq!(t.gpus, vec!["GPU0", "GPU1"]);
        assert_eq!(t.nics, vec!["mlx5_0", "mlx5_1"]);
        assert_eq!(t.nearest(1), Some((PciePath::Pxb, vec!["mlx5_1"])));
        // Old drivers: RDMA device names as columns, no NIC legend.
        let t = parse_topo("\tGPU0\tmlx5_0\tCPU Affinity\nGPU0\t X \tNODE\t0-11\nmlx5_0\tNODE\t X \n").unwrap();
        assert_eq!(t.nearest(0), Some((PciePath::Node, vec!["mlx5_0"])));
        assert_eq!(parse_topo("hello\n").unwrap_err().line, 1);
        assert_eq!(parse_topo("\tGPU0\tNIC0\nGPU0\t X\n").unwrap_err().line, 2);
        assert_eq!(parse_topo("\tGPU0\tNIC0\nGPU0\t X\tWAT\n").unwrap_err().line, 2);
        assert_eq!(parse_topo("").unwrap_err().line, 0);
    }

    #[test]
    fn modules_from_lsmod_or_proc() {
        let m = parse_modules("Module                  Size  Used by\nnvidia_peermem         16384  0\nib_core 442368 9 rdma_cm, Live 0x0\n");
        assert!(m.contains("nvidia_peermem") && m.contains("ib_core") && !m.contains("Module"));
    }
}
