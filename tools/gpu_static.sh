#!/bin/sh
# tools/gpu_static.sh - what NVIDIA's own compiler says about gpudl's kernels,
# without a GPU (make gpu-static).
#
# Builds gpudl_kernels.cu with the real nvcc for sm_80 (A100), sm_90 (H100),
# sm_100 (B200) and sm_120 (RTX 50xx), one cubin each, with ptxas -v, and
# prints per kernel (template instantiations included) and architecture:
# registers, spill bytes (stores + loads), static shared memory, and the
# theoretical occupancy (resident warps per SM) at the block size the
# launcher uses. On the sm_90 SASS (cuobjdump -sass) it counts the global
# loads and stores per kernel by width.
#
# Checks (exit 1 when one fails):
#   - no spills, on any architecture, in any kernel;
#   - every kernel in VECTOR_KERNELS below has a 128-bit global load
#     (LDG.E.128) in its sm_90 SASS; fill and random, which load no array,
#     a 128-bit store (STG.E.128).
# cuobjdump is not in this toolkit: it comes from NVIDIA's pip wheels
# (nvidia-cuda-cuobjdump), installed into build/nvtools when absent; when
# that fails the SASS part says SKIPPED and the rest still runs.
#
# Writes build/gpu_static/{static.csv,static.md,sass_sm90.txt,ptxas_sm*.txt}.
#
#   sh tools/gpu_static.sh              all four architectures
#   GPU_STATIC_ARCHS="90" sh tools/gpu_static.sh
#   NVCC=/path/to/nvcc sh tools/gpu_static.sh
#
# Occupancy (warps per SM) = min over the limits, as the toolkit's own
# occupancy calculator computes it (cuda_occupancy.h, CUDA 13.0):
#   blocks by warps     = floor(max warps per SM / warps per block)
#   blocks by registers = floor(floor((regs per SM / 4) / regs per warp) * 4 / warps per block),
#                         regs per warp = roundup(regs * 32, 256)   (4 sub-partitions,
#                         allocation unit 256 registers per warp)
#   blocks by smem      = floor(smem per SM / roundup(static smem + 1 KB reserved, 128))
#   blocks by the cap   = max resident blocks per SM
#   warps per SM        = min(...) * warps per block
# Limits per architecture (CUDA C++ Programming Guide, "Technical
# Specifications per Compute Capability"; blocks per SM and granularities
# as in cuda_occupancy.h):
#   arch    warps/SM  blocks/SM  regs/SM  smem/SM (KiB)
#   sm_80      64        32       65536     164
#   sm_90      64        32       65536     228
#   sm_100     64        32       65536     228
#   sm_120     48        24       65536     100
set -u
cd "$(dirname "$0")/.." || exit 1
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
[ -x "$NVCC" ] || NVCC=$(command -v nvcc 2>/dev/null) || { echo "SKIPPED gpu-static: no nvcc"; exit 0; }
ARCHS=${GPU_STATIC_ARCHS:-"80 90 100 120"}
OUT=build/gpu_static
mkdir -p "$OUT"
start=$(date +%s)

# The kernels whose element-wise loops run on 16-byte vectors (gpudl_kernels.cu:
# the aligned paths of gpudl__vmap and friends). Extended regular expressions
# on the demangled name without its arguments.
VECTOR_KERNELS='^gpudl_(fill|cast|random|binary|axpby|act_fwd|act_bwd|dropout|acc_f32|reduce_partial|reduce_once|bn_apply|bn_bwd_apply|gather)_kernel'

# 1. one cubin per architecture, two compilations at a time
pids=""
n=0
for a in $ARCHS; do
    ( nice "$NVCC" -O2 -I. -gencode "arch=compute_$a,code=sm_$a" -Xptxas -v -cubin -o "$OUT/kernels_sm$a.cubin" \
        gpudl_kernels.cu > "$OUT/ptxas_sm$a.txt" 2>&1; echo $? > "$OUT/rc_sm$a" ) &
    pids="$pids $!"
    n=$((n + 1))
    if [ $((n % 2)) -eq 0 ]; then wait; fi
done
wait
fail=0
for a in $ARCHS; do
    if [ "$(cat "$OUT/rc_sm$a")" != 0 ]; then
        echo "FAIL gpu-static: nvcc for sm_$a failed:"; tail -20 "$OUT/ptxas_sm$a.txt"; fail=1
    fi
done
[ $fail = 0 ] || exit 1

# 2. cuobjdump from NVIDIA's wheel (build/nvtools) when not on PATH
CUOBJDUMP=$(command -v cuobjdump 2>/dev/null || true)
if [ -z "$CUOBJDUMP" ]; then
    CUOBJDUMP=$(ls build/nvtools/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump 2>/dev/null | head -1)
fi
if [ -z "$CUOBJDUMP" ]; then
    echo "gpu-static: installing cuobjdump (pip: nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm) into build/nvtools"
    { python3 -m venv build/nvtools && build/nvtools/bin/pip install -q nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm; } \
        > "$OUT/pip.log" 2>&1
    CUOBJDUMP=$(ls build/nvtools/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump 2>/dev/null | head -1)
fi
SASS=""
case " $ARCHS " in *" 90 "*) SASS=$OUT/sass_sm90.txt ;; esac
if [ -n "$SASS" ]; then
    if [ -n "$CUOBJDUMP" ] && "$CUOBJDUMP" -sass "$OUT/kernels_sm90.cubin" > "$SASS" 2> "$OUT/cuobjdump.log"; then :
    else
        echo "SKIPPED gpu-static SASS checks: no cuobjdump (pip install nvidia-cuda-cuobjdump failed, see $OUT/pip.log)"
        SASS=""
    fi
fi

# 3. the table and the checks
python3 - "$OUT" "$SASS" "$VECTOR_KERNELS" $ARCHS <<'EOF'
import re, subprocess, sys
out, sass, vector_re, archs = sys.argv[1], sys.argv[2], re.compile(sys.argv[3]), sys.argv[4:]
# kernels that only store arrays (their loads, if any, are of tables or
# parameters): the check asks for STG.E.128 there
store_only = re.compile(r'^gpudl_(fill|random)_kernel')
LIMITS = {  # warps/SM, blocks/SM, regs/SM, smem/SM bytes
    '80': (64, 32, 65536, 164 * 1024), '90': (64, 32, 65536, 228 * 1024),
    '100': (64, 32, 65536, 228 * 1024), '120': (48, 24, 65536, 100 * 1024)}
# The block size each kernel is launched with (gpudl_kernels.cu's launchers;
# GPUDL__THREADS = 256 for the rest).
BLOCK = [(r'^gpudl_(reduce_final|sum_scaled|count_correct|clip_final)_kernel', 1024),
         (r'^gpudl_col_sum_acc_kernel', 1024), (r'^gpudl_bn_(stats|bwd)_final_kernel', 128),
         (r'^gpudl_(probe|scaler_update)_kernel', 1)]

def demangle(names):
    p = subprocess.run(['c++filt'], input='\n'.join(names), capture_output=True, text=True)
    d = p.stdout.split('\n') if p.returncode == 0 else names
    res = {}
    for m, n in zip(names, d):
        n = n.replace('gpudl__f16s', 'f16').replace('gpudl__bf16s', 'bf16')
        n = re.sub(r'\((?:[^()]|\([^()]*\))*\)$', '', n)   # drop the argument list
        res[m] = re.sub(r'^void ', '', n.strip())
    return res

def block_of(name):
    for pat, b in BLOCK:
        if re.search(pat, name): return b
    return 256

def occupancy(arch, regs, smem, block):
    warps_sm, blocks_sm, regs_sm, smem_sm = LIMITS[arch]
    wpb = (block + 31) // 32
    lim = [warps_sm // wpb, blocks_sm]
    rpw = -(-regs * 32 // 256) * 256
    if rpw: lim.append(((regs_sm // 4) // rpw) * 4 // wpb)
    alloc = -(-(smem + 1024) // 128) * 128
    lim.append(smem_sm // alloc)
    return min(lim) * wpb, warps_sm

kern = {}   # mangled -> {arch: (regs, spill, smem, stack)}
for a in archs:
    cur = None
    for line in open(f'{out}/ptxas_sm{a}.txt'):
        m = re.search(r"Compiling entry function '(\w+)' for 'sm_(\d+)'", line)
        if m: cur = m.group(1); kern.setdefault(cur, {})[a] = [0, 0, 0, 0]; continue
        if cur is None: continue
        m = re.search(r'(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads', line)
        if m: kern[cur][a][3] = int(m.group(1)); kern[cur][a][1] = int(m.group(2)) + int(m.group(3))
        m = re.search(r'Used (\d+) registers', line)
        if m:
            kern[cur][a][0] = int(m.group(1))
            s = re.search(r'(\d+) bytes smem', line)
            kern[cur][a][2] = int(s.group(1)) if s else 0

widths = {}  # mangled -> {kind: count}
if sass:
    cur = None
    for line in open(sass):
        m = re.search(r'Function : (\w+)', line)
        if m: cur = m.group(1); widths.setdefault(cur, {}); continue
        if cur is None: continue
        for ins in re.findall(r'\b((?:LDG|STG)(?:\.[A-Z0-9]+)*)', line):
            parts = ins.split('.')
            w = next((p for p in parts[1:] if p in ('128', '64', 'U16', 'S16', 'U8', 'S8')), '32')
            key = parts[0] + '.' + w
            widths[cur][key] = widths[cur].get(key, 0) + 1

names = demangle(sorted(kern))
rows, failures = [], []
for m in sorted(kern, key=lambda k: names[k]):
    n, b = names[m], block_of(names[m])
    row = {'kernel': n, 'block': b}
    for a in archs:
        if a not in kern[m]: continue
        regs, spill, smem, stack = kern[m][a]
        occ, mx = occupancy(a, regs, smem, b)
        row[a] = (regs, spill, smem, occ, mx)
        if spill: failures.append(f'{n}: {spill} bytes of spills on sm_{a}')
    w = widths.get(m, {})
    row['w'] = w
    if sass and vector_re.search(n) and not (w.get('LDG.128') or (store_only.search(n) and w.get('STG.128'))):
        failures.append(f'{n}: no 128-bit global load (LDG.E.128) in the sm_90 SASS')
    rows.append(row)

LD = ['LDG.128', 'LDG.64', 'LDG.32', 'LDG.U16', 'LDG.U8']
ST = ['STG.128', 'STG.64', 'STG.32', 'STG.U16']
hdr = ['kernel', 'block'] + [f'sm_{a} regs/spill/smem/warps' for a in archs] + (LD + ST if sass else [])
csv = [','.join(['kernel', 'block'] + [f'sm_{a}_{f}' for a in archs for f in ('regs', 'spill_bytes', 'smem_bytes', 'warps_per_sm')]
                + (LD + ST if sass else []))]
md = ['| ' + ' | '.join(hdr) + ' |', '|' + '---|' * len(hdr)]
for r in rows:
    cells, ccells = [r['kernel'], str(r['block'])], ['"%s"' % r['kernel'], str(r['block'])]
    for a in archs:
        if a in r:
            regs, spill, smem, occ, mx = r[a]
            cells.append(f'{regs}/{spill}/{smem}/{occ} of {mx}')
            ccells += [str(regs), str(spill), str(smem), str(occ)]
        else:
            cells.append('-'); ccells += [''] * 4
    if sass:
        cells += [str(r['w'].get(k, 0)) for k in LD + ST]
        ccells += [str(r['w'].get(k, 0)) for k in LD + ST]
    md.append('| ' + ' | '.join(cells) + ' |')
    csv.append(','.join(ccells))
open(f'{out}/static.md', 'w').write('\n'.join(md) + '\n')
open(f'{out}/static.csv', 'w').write('\n'.join(csv) + '\n')

# stdout: a fixed-width table
print(f"{'kernel':<46} {'blk':>4} " + ' '.join(f"{'sm_' + a + ' r/sp/sm/w':>18}" for a in archs)
      + ('  LDG 128/64/32/16/8 | STG 128/64/32/16' if sass else ''))
for r in rows:
    line = f"{r['kernel'][:46]:<46} {r['block']:>4} "
    line += ' '.join(f"{'%d/%d/%d/%d' % r[a][:4] if a in r else '-':>18}" for a in archs)
    if sass:
        line += '  ' + '/'.join(str(r['w'].get(k, 0)) for k in LD) + ' | ' + '/'.join(str(r['w'].get(k, 0)) for k in ST)
    print(line)
tot = {}
for r in rows:
    for k, v in r['w'].items(): tot[k] = tot.get(k, 0) + v
nspill = sum(1 for r in rows for a in archs if a in r and r[a][1])
print(f'{len(rows)} kernels; architectures ' + ', '.join('sm_' + a for a in archs)
      + f'; kernels with spills: {nspill}' + ('; sm_90 SASS: ' + ', '.join(f'{k} {tot.get(k, 0)}' for k in LD + ST) if sass else ''))
for f in failures: print('FAIL gpu-static: ' + f)
print(f'table: {out}/static.md, {out}/static.csv')
sys.exit(1 if failures else 0)
EOF
rc=$?
echo "gpu-static: $(( $(date +%s) - start )) s"
[ $rc = 0 ] && echo "ok      gpu-static" || echo "FAIL    gpu-static"
exit $rc
