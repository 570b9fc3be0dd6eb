#!/bin/sh
# tools/cuda_flags.sh - the extra nvcc flags that find cuBLAS, cuBLASLt and
# cuDNN where nvcc does not look by itself. Used by the Makefile and
# tests/run.sh; a user with a normal CUDA + cuDNN install never needs it.
#
#   sh tools/cuda_flags.sh            flags for nvcc: -I, -L, -Xlinker -rpath=
#   sh tools/cuda_flags.sh --libdirs  the directories of libraries found
#                                     outside the usual places, ':'-separated,
#                                     for LD_LIBRARY_PATH (cuDNN opens its
#                                     sub-libraries at run time)
#
# It prints nothing when the toolkit or the system has them (the usual case,
# and this repository's CI). The other case is a machine whose cuDNN came
# only with PyTorch's pip wheels (nvidia-cudnn-cu13 and friends): they hold
# headers and libcudnn.so.9 but not the unversioned libcudnn.so that -lcudnn
# looks for, so the script links build/cudalibs/libcudnn.so to it.
# CUDNN_HOME (or CUDNN_PATH), if set, is searched first.
mode=${1:-flags}
nvcc=${NVCC:-nvcc}
out=${GPUDL_CUDALIBS:-build/cudalibs}
nvcc_path=$(command -v "$nvcc" 2>/dev/null) || exit 0
tk=$(cd "$(dirname "$(readlink -f "$nvcc_path")")/.." && pwd)
user=${CUDNN_HOME:-${CUDNN_PATH:-}}
inc_dirs="$tk/include $tk/targets/x86_64-linux/include /usr/include /usr/include/x86_64-linux-gnu /usr/local/include"
lib_dirs="$tk/lib64 $tk/lib $tk/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib"
# Python's site directories, where the nvidia-* wheels put their nvidia/ tree
sites=""
if command -v python3 >/dev/null 2>&1; then
    sites=$(python3 -c 'import site, sys
d = site.getsitepackages() + [site.getusersitepackages()] + sys.path
print("\n".join(p for p in dict.fromkeys(d) if p))' 2>/dev/null)
fi

flags=""
libdirs=""
linked=0
add_flag() { case " $flags " in *" $1 "*) ;; *) flags="$flags $1" ;; esac; }
add_libdir() { case ":$libdirs:" in *":$1:"*) ;; *) libdirs="${libdirs:+$libdirs:}$1" ;; esac; }

# first_match NAME DIR...: the first DIR/NAME that exists
first_match() {
    name=$1; shift
    for d in "$@"; do [ -e "$d/$name" ] && { echo "$d/$name"; return 0; }; done
    return 1
}
# in_wheels PATTERN: the first file under a site directory's nvidia/ tree
in_wheels() {
    echo "$sites" | while IFS= read -r s; do
        [ -d "$s/nvidia" ] || continue
        f=$(find "$s/nvidia" -name "$1" \( -type f -o -type l \) 2>/dev/null | sort | head -n 1)
        [ -n "$f" ] && { echo "$f"; break; }
    done
}

for pair in cublas_v2.h:cublas cublasLt.h:cublasLt cudnn.h:cudnn; do
    hdr=${pair%%:*}; lib=${pair#*:}
    # the header
    if [ -n "$user" ] && [ -e "$user/include/$hdr" ]; then
        add_flag "-I$user/include"
    elif ! first_match "$hdr" $inc_dirs >/dev/null; then
        h=$(in_wheels "$hdr")
        [ -n "$h" ] && add_flag "-I$(dirname "$h")"
    fi
    # the library
    if [ -n "$user" ] && f=$(first_match "lib$lib.so" "$user/lib64" "$user/lib"); then
        add_flag "-L$(dirname "$f")"; add_flag "-Xlinker -rpath=$(dirname "$f")"; add_libdir "$(dirname "$f")"
    elif ! first_match "lib$lib.so" $lib_dirs >/dev/null; then
        f=$(in_wheels "lib$lib.so.[0-9]*")
        [ -n "$f" ] || continue
        d=$(cd "$(dirname "$f")" && pwd)
        mkdir -p "$out" && ln -sf "$d/$(basename "$f")" "$out/lib$lib.so" && linked=1
        add_flag "-Xlinker -rpath=$d"; add_libdir "$d"
    fi
done
[ $linked = 1 ] && flags="$flags -L$(cd "$out" && pwd)"

if [ "$mode" = --libdirs ]; then echo "$libdirs"; else echo "$flags" | sed 's/^ *//'; fi
