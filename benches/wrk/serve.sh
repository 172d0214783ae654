#!/bin/bash
# usage: benches/wrk/serve.sh BIN_DIR AGENT_DIR CLOCK [SECONDS]
# (BIN_DIR holds proem and proem-full, e.g. target/release; CLOCK is same,
# second or day: see build.lua; wrk from Debian: apt-get install wrk)
# Starts `proem serve AGENT_DIR` on a loopback port, warms it 2 s, runs wrk
# (2 threads, 16 connections, benches/wrk/build.lua) for SECONDS, prints
# wrk's figures and the server's CPU time per request (utime+stime from
# /proc/PID/stat over the measured run), then stops the server.
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
command -v wrk >/dev/null || { echo "wrk is not installed: apt-get install -y wrk" >&2; exit 1; }
BIN=$1; AGENT=$2; CLOCK=$3; SECS=${4:-10}; export PROEM_WRK_AGENT=$(basename $AGENT)
export PROEM_CACHE_DIR=${PROEM_CACHE_DIR:-$ROOT/target/round3/cache}
$BIN/proem serve $AGENT --listen 127.0.0.1:0 --queue 4096 > /tmp/serve.$$.out 2>/tmp/serve.$$.err &
PID=$!
for i in $(seq 50); do grep -q listening /tmp/serve.$$.out 2>/dev/null && break; sleep 0.1; done
URL=$(sed -n 's/listening on //p' /tmp/serve.$$.out | head -1)
PROEM_WRK_CLOCK=$CLOCK wrk -t2 -c16 -d2s -s $ROOT/benches/wrk/build.lua $URL >/dev/null
cpu() { awk '{print $14+$15}' /proc/$PID/stat; }
C0=$(cpu)
OUT=$(PROEM_WRK_CLOCK=$CLOCK wrk -t2 -c16 -d${SECS}s --latency -s $ROOT/benches/wrk/build.lua $URL)
C1=$(cpu)
echo "$OUT" | grep -E 'Requests/sec|^ +(50|99)%|Non-2xx|Socket errors|requests in'
REQ=$(echo "$OUT" | sed -n 's/^ *\([0-9]*\) requests in.*/\1/p')
TCK=$(getconf CLK_TCK)
echo "server CPU per request: $(echo "($C1-$C0)*1000000/$TCK/$REQ" | bc) us"
kill $PID; wait $PID 2>/dev/null || true
rm -f /tmp/serve.$$.out /tmp/serve.$$.err
