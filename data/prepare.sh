#!/bin/sh
# make data: find Fashion-MNIST, decompress it into build/data/fashion-mnist
# (plain IDX, a little quicker to load; every build also reads the .gz), and
# say which copy was used:
#   1. data/fashion-mnist/            your own copy (plain or .gz)
#   2. /usr/share/datasets/fashion-mnist   Debian's dataset-fashion-mnist,
#      installed here with apt-get when run as root and it is missing
#   3. data/fashion-mnist-subset/     2000 training / 1000 test images, shipped
set -e
cd "$(dirname "$0")/.."
out=build/data/fashion-mnist
deb=/usr/share/datasets/fashion-mnist
has() { [ -f "$1/t10k-labels-idx1-ubyte" ] || [ -f "$1/t10k-labels-idx1-ubyte.gz" ]; }
if has data/fashion-mnist; then
    src=data/fashion-mnist; what="data/fashion-mnist (your copy)"
else
    if ! has $deb && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing Debian's dataset-fashion-mnist (30 MB) ..."
        apt-get install -y -qq dataset-fashion-mnist >/dev/null 2>&1 || \
            { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq dataset-fashion-mnist >/dev/null 2>&1; } || true
    fi
    if has $deb; then
        src=$deb; what="$deb (Debian's dataset-fashion-mnist, full: 60000 training / 10000 test images)"
    else
        src=data/fashion-mnist-subset
        what="the subset shipped in data/fashion-mnist-subset (2000 training / 1000 test images); for the full set install dataset-fashion-mnist or put the files in data/fashion-mnist"
    fi
fi
mkdir -p $out
if [ "$(cat build/data/SOURCE 2>/dev/null)" != "$what" ]; then
    for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
        if [ -f "$src/$f" ]; then cp "$src/$f" "$out/$f"; else gunzip -c "$src/$f.gz" > "$out/$f"; fi
    done
    echo "$what" > build/data/SOURCE
fi
echo "data: $what"
