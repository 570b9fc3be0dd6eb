#!/usr/bin/env bash
# make bench-dist: data-parallel throughput on this machine's CPU cores, the
# same run: mlp_fashion and cnn_fashion (built by mpicc with -DGPUDL_MPI) on
# the shipped subset, one rank with 2 OpenMP threads against two ranks with
# one thread each (the same two cores), interleaved rounds, medians of the
# training images/s. Writes bench/dist.csv and prints a table.
#   bash bench/bench_dist.sh [ROUNDS]   (default 5)
set -u
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
B=build/bench_dist
mkdir -p $B build/test/data
for f in data/fashion-mnist-subset/*.gz; do gunzip -c "$f" > "build/test/data/$(basename "$f" .gz)"; done
command -v mpicc >/dev/null || { echo "bench_dist SKIPPED: no mpicc (apt-get install openmpi-bin libopenmpi-dev)"; exit 0; }
for ex in mlp_fashion cnn_fashion; do
    mpicc -std=c99 -O2 -fopenmp -DGPUDL_NO_CUDA -DGPUDL_MPI -I. -o $B/$ex examples/$ex.c -lm || exit 1
done
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np 2 -x OMP_NUM_THREADS=1)
rate() { tr -d '\r' | sed -n 's/^wall time: .*, \([0-9.]*\) images\/s$/\1/p'; }
echo "model,ranks,threads_per_rank,round,images_per_s" > bench/dist.csv
for r in $(seq 1 "$ROUNDS"); do
    for ex in mlp_fashion cnn_fashion; do
        e=8; [ $ex = cnn_fashion ] && e=2
        one=$(OMP_NUM_THREADS=2 $B/$ex --cpu --data build/test/data --epochs $e --dist 2>/dev/null | rate)
        two=$("${MPIRUN[@]}" $B/$ex --cpu --data build/test/data --epochs $e --dist 2>/dev/null | rate)
        echo "$ex,1,2,$r,$one" >> bench/dist.csv
        echo "$ex,2,1,$r,$two" >> bench/dist.csv
    done
done
python3 - <<'PY'
import csv, statistics
rows = list(csv.DictReader(open('bench/dist.csv')))
print("%-12s %-22s %12s %8s" % ("model", "ranks x threads", "images/s", "vs 1x2"))
for model in ("mlp_fashion", "cnn_fashion"):
    med = {}
    for ranks in ("1", "2"):
        v = [float(r["images_per_s"]) for r in rows if r["model"] == model and r["ranks"] == ranks and r["images_per_s"]]
        med[ranks] = statistics.median(v) if v else float("nan")
    for ranks, th in (("1", "2"), ("2", "1")):
        print("%-12s %-22s %12.0f %7.2fx" % (model, ranks + " x " + th, med[ranks], med[ranks] / med["1"]))
print("(medians of %d interleaved rounds; bench/dist.csv)" % (len(rows) // 4))
PY
