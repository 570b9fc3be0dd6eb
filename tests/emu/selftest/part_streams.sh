# part_streams.sh - sourced by run.sh: a translation unit built with
# nvcc --default-stream per-thread (stream 0 and the synchronous calls are
# the host thread's own stream; the runtime_*.cu programs test the rest).
echo "== streams: --default-stream per-thread"
build_and_run streams_per_thread "$HERE/streams/per_thread.cu" -O2 --default-stream per-thread
