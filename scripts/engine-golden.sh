#!/usr/bin/env bash
# Runs the packet engine on every shipped example (plus a collective and a training step) and
# writes each run's outputs under OUT/<name>/, so two builds can be compared with `diff -r`:
#   scripts/engine-golden.sh target/release/rocelab /tmp/before
#   scripts/engine-golden.sh target/release/rocelab /tmp/after && diff -r /tmp/before /tmp/after
# Engine speed work must leave every file byte-identical.
set -u
bin=${1:?usage: engine-golden.sh ROCELAB_BINARY OUT_DIR}
out=${2:?usage: engine-golden.sh ROCELAB_BINARY OUT_DIR}
bin=$(realpath "$bin")
mkdir -p "$out"
out=$(realpath "$out")
cd "$(dirname "$0")/.."
run() { # name, then simulate's arguments (run inside OUT, so printed paths do not differ)
    local name=$1
    shift
    (cd "$out" && "$bin" simulate "$@" -o "$name" -q --sample-us 5 >"$name.stdout" 2>"$name.stderr"
        echo "$?" >"$name.exit")
}
repo=$(pwd)
for f in examples/*.toml examples/ib-vs-roce/*.toml; do
    case $f in
    # The 1,024-GPU fabric's own traffic is the long run; its collective below covers it.
    examples/rail-1024gpu.toml) continue ;;
    esac
    name=$(echo "${f#examples/}" | tr / _)
    run "${name%.toml}" "$repo/$f"
done
run coll-allreduce-rail16 "$repo/examples/rail-16gpu-workloads.toml" --collective all_reduce -b 4M
run coll-alltoall-rail128 "$repo/examples/rail-128gpu.toml" --collective alltoall -b 1M
run step-200m-rail128 "$repo/examples/rail-128gpu.toml" --step "$repo/examples/plan/step-200m-32gpu.toml"
# The speed bench's fabric (`rocelab_bench::permutation_htsim(8)`): 128 hosts, static PFC
# thresholds, no congestion control, 1 ms.
cat >"$out/perm-htsim-k8.toml" <<'TOML'
[fabric]
name = "permutation-htsim-k8"

[topology.fat_tree]
k = 8
link = { speed_gbps = 400, delay_ns = 1000 }
switch_model = "bench"

[switch_models.bench]
preset = "tomahawk3"
ports = 8

[qos.pfc]
xoff_bytes = 61440
xon_bytes = 49152

[nic]
mtu = 4000
congestion_control = "none"

[simulation]
seed = 1
duration_us = 1000

[[traffic]]
pattern = "permutation"
size_bytes = 1000000000
TOML
run perm-htsim-k8 perm-htsim-k8.toml
