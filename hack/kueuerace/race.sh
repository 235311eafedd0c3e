#!/usr/bin/env bash
# Races Kueue's own scheduler-performance harness against `berth bench
# baseline` on this machine, one right after the other, each on a fresh
# `berth up` control plane of the same build and settings, and prints one
# table (docs/benchmarks.md, "The race against Kueue's harness").
#
#   hack/kueuerace/race.sh OUTDIR [berth|kueue]...   (default: berth kueue)
#
# Sides run in the order given, each into OUTDIR/<n>-<side> (berth kueue
# berth kueue alternates two pairs, as a shared machine's speed drifts).
# Kueue's side: Kueue v0.17.0 (go.mod here) built from its Go module, its
# minimalkueue (the core controllers and the scheduler, with the client
# settings Kueue ships: qps 50, burst 100) and its runner (the baseline
# generator config: 15,000 workloads in 5 cohorts of 6 ClusterQueues), on a
# control plane started with --no-controller and Kueue's CRDs applied.
# berth's side: `berth bench baseline`, the same shape. Each run's
# kube-apiserver and controller CPU come from /proc, its wall from the
# first workload created to the last finished. Needs Go, awk and python3
# with PyYAML (for the table); about 10 minutes on 2 cores.
set -euo pipefail

out=${1:?usage: race.sh OUTDIR [berth|kueue]...}
shift
sides=("$@")
[ ${#sides[@]} -gt 0 ] || sides=(berth kueue)
repo=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out/bin"
out=$(cd "$out" && pwd)
bin=$out/bin

echo "building berth and Kueue's harness (first build: a few minutes)" >&2
(cd "$repo" && go build -o "$bin/berth" ./cmd/berth)
(cd "$repo/hack/kueuerace" &&
	go build -o "$bin/kueue-runner" sigs.k8s.io/kueue/test/performance/scheduler/runner &&
	go build -o "$bin/minimalkueue" sigs.k8s.io/kueue/test/performance/scheduler/minimalkueue)
kueue=$(cd "$repo/hack/kueuerace" && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)
berth=$bin/berth
tick=$(getconf CLK_TCK)

# cpu PID: the user and system CPU the process has used, in seconds.
cpu() { awk -v t="$tick" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13) / t }' "/proc/$1/stat"; }

# apiserver NAME: the kube-apiserver's process id of instance NAME.
apiserver() {
	awk '/"name": "kube-apiserver"/ { found = 1 } found && /"pid":/ { gsub(/[^0-9]/, ""); print; exit }' \
		"$HOME/.berth/$1/instance.json"
}

instance() {
	local name=$1
	shift
	"$berth" down --name "$name" >/dev/null 2>&1 || true
	rm -rf "${HOME:?}/.berth/$name"
	"$berth" up --detach --name "$name" --etcd-unsafe-no-fsync "$@" >/dev/null
}

finish() {
	"$berth" down --name "$1" >/dev/null 2>&1 || true
	rm -rf "${HOME:?}/.berth/$1"
}

# run_berth DIR
run_berth() {
	local name=race-berth dir=$1
	echo "berth: berth bench baseline on a fresh instance, into $dir" >&2
	instance "$name"
	trap 'finish race-berth' EXIT
	"$berth" bench baseline --name "$name" --output "$dir" >"$dir.log" 2>&1
	finish "$name"
	trap - EXIT
}

# run_kueue DIR
run_kueue() {
	local name=race-kueue dir=$1
	echo "kueue: minimalkueue and its runner on a fresh instance, into $dir" >&2
	instance "$name" --no-controller
	trap 'finish race-kueue' EXIT
	local kubeconfig=$HOME/.berth/$name/kubeconfig
	"$berth" kubectl --name "$name" apply --server-side -f "$kueue/config/components/crd/bases" >/dev/null
	"$berth" kubectl --name "$name" wait --for condition=Established --timeout 60s crd --all >/dev/null
	mkdir -p "$dir"
	"$bin/minimalkueue" --kubeconfig "$kubeconfig" >"$dir/minimalkueue.log" 2>&1 &
	mk=$! # global: the EXIT trap reads it after this function has returned
	trap 'kill "$mk" 2>/dev/null; finish race-kueue' EXIT
	local api
	api=$(apiserver "$name")
	local api0 start
	api0=$(cpu "$api")
	start=$(date +%s.%N)
	# The runner's own client as Kueue's in-cluster target sets it.
	KUBECONFIG=$kubeconfig "$bin/kueue-runner" -o "$dir" --qps 1000 --burst 2000 --timeout 40m \
		--generatorConfig "$kueue/test/performance/scheduler/configs/baseline/generator.yaml" >"$dir/runner.log" 2>&1
	local end api1 mkcpu
	end=$(date +%s.%N)
	api1=$(cpu "$api")
	mkcpu=$(cpu "$mk")
	kill "$mk"
	wait "$mk" || true
	awk -v s="$start" -v e="$end" -v a0="$api0" -v a1="$api1" -v c="$mkcpu" 'BEGIN {
		printf "wallSeconds: %.1f\napiServerCPUSeconds: %.1f\napiServerCPUMsPerWorkload: %.1f\ncontrollerCPUSeconds: %.1f\n",
			e - s, a1 - a0, (a1 - a0) * 1000 / 15000, c }' >"$dir/measured.yaml"
	finish "$name"
	trap - EXIT
}

n=0
for side in "${sides[@]}"; do
	n=$((n + 1))
	case $side in
	berth) run_berth "$out/$n-berth" ;;
	kueue) run_kueue "$out/$n-kueue" ;;
	*) echo "unknown side $side: want berth or kueue" >&2; exit 2 ;;
	esac
done

# The table: what each run measured.
{
	echo "| run | wall | kube-apiserver CPU per workload | controller CPU | evictions | avg admission small / medium / large |"
	echo "|---|---|---|---|---|---|"
	for dir in $(ls -d "$out"/[0-9]*-berth "$out"/[0-9]*-kueue 2>/dev/null | sort -V); do
	if [ -f "$dir/results.json" ]; then
		python3 - "$dir/results.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
c = {k["name"]: k for k in r["classes"]}
adm = " / ".join("%.1f s" % c[n]["avgTimeToAdmissionSeconds"] for n in ("small", "medium", "large"))
print("| berth %s | %.1f s | %.1f ms | %.1f s | %d | %s |" % (r["version"], r["wallSeconds"], r["apiServerCPUMsPerWorkload"],
      r["controllerCPUSeconds"], r["evictions"], adm))
EOF
	fi
	if [ -f "$dir/summary.yaml" ]; then
		python3 - "$dir/summary.yaml" "$dir/measured.yaml" <<'EOF'
import sys, yaml
s = yaml.safe_load(open(sys.argv[1]))
m = yaml.safe_load(open(sys.argv[2]))
w = s["workloadClasses"]
ev = sum(c.get("totalEvictions", 0) for c in w.values())
adm = " / ".join("%.1f s" % (w[n]["averageTimeToAdmissionMs"] / 1000) for n in ("small", "medium", "large"))
print("| Kueue v0.17.0 (minimalkueue, qps 50 / burst 100) | %.1f s | %.1f ms | %.1f s | %d | %s |" % (m["wallSeconds"],
      m["apiServerCPUMsPerWorkload"], m["controllerCPUSeconds"], ev, adm))
EOF
	fi
	done
} | tee "$out/table.md"
